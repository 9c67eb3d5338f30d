#!/usr/bin/env bash
# Installs everything ossmount needs to build, test and benchmark on Debian 12.
# Idempotent and non-interactive: safe to run on every CI start.
#   scripts/install-deps.sh          build + test dependencies
#   scripts/install-deps.sh --bench  also the peers the benchmark harness compares against
set -euo pipefail
cd "$(dirname "$0")/.."

want_bench=0
for arg in "$@"; do
  case "$arg" in
    --bench) want_bench=1 ;;
    *) echo "install-deps.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

# clang and libclang-rt-dev (compiler-rt: libFuzzer, ASan, UBSan, TSan) build the fuzz targets
# (scripts/fuzz.sh) and the sanitizer builds (scripts/sanitize.sh).
packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates curl openssl
  # liburing: FUSE over io_uring (src/fuse/uring_transport.h), which libfuse 3.14 lacks.
  libfuse3-dev fuse3 liburing-dev
  libboost-dev libboost-system-dev
  libcurl4-openssl-dev libssl-dev liblzma-dev libxxhash-dev
  rapidjson-dev libcli11-dev libspdlog-dev catch2 libpugixml-dev
  python3-torch python3-torchvision python3-pil python3-numpy
  clang-format
  clang libclang-rt-dev
  # Operations tests: systemd-analyze (verify the unit), dpkg-shlibdeps (the .deb's Depends),
  # mount(8) for the fstab tests.
  systemd dpkg-dev mount
  # pgrep (test_lifecycle.py finds the daemon it started).
  procps
  # media-types: /etc/mime.types, the table uploaded objects take their Content-Type from.
  media-types
  # rsync: scripts/test.sh's stable copy of the tree under CI=true, and mount:staged_writes
  # (rsync --inplace). python3-h5py: mount:staged_writes (an HDF5 writer patches headers).
  rsync python3-h5py
  # attr: setfattr/getfattr in mount:posix_metadata (extended attributes kept).
  attr
  # util-linux: setpriv in mount:fd_mount (the daemon run without CAP_SYS_ADMIN).
  util-linux
  # iproute2: mount:cluster's nodes are network namespaces joined by a bridge (`ip`).
  iproute2
  # python3-seccomp: mount:uring starts a daemon that may not create an io_uring, as a
  # container runtime's default seccomp profile does.
  python3-seccomp
)
if [ "$want_bench" -eq 1 ]; then
  packages+=(s3fs rclone time wrk)
fi
# Node.js for s3rver: keep an existing installation (it may come with its own npm).
if ! command -v node >/dev/null 2>&1; then packages+=(nodejs); fi
if ! command -v npm >/dev/null 2>&1; then packages+=(npm); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# s3rver, the third-party S3 server the S3 integration tests run against, pinned by
# tests/s3rver/package-lock.json and installed into tests/s3rver/node_modules (ignored by git).
if [ ! -x tests/s3rver/node_modules/.bin/s3rver ]; then
  echo "install-deps: installing s3rver (npm)"
  (cd tests/s3rver && npm ci --no-audit --no-fund --loglevel=error)
fi
# The offline validators of the Kubernetes manifests and the Containerfile (ctest
# lint:k8s_manifests), pinned by tools/k8s-validate/package-lock.json and installed into
# tools/k8s-validate/node_modules (ignored by git). The copy of the lock file kept there says
# what was installed, so that a changed pin is installed on the next run.
if ! cmp -s tools/k8s-validate/package-lock.json tools/k8s-validate/node_modules/.ossmount-lock; then
  echo "install-deps: installing the Kubernetes manifest validators (npm)"
  (cd tools/k8s-validate && npm ci --no-audit --no-fund --loglevel=error >/dev/null &&
     cp package-lock.json node_modules/.ossmount-lock)
fi
echo "install-deps: ok"
