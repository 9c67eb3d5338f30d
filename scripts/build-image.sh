#!/usr/bin/env bash
# Builds the ossmount container image (deploy/container/Containerfile) with Debian's podman,
# from Debian packages only: no image registry is needed.
#
#   scripts/build-image.sh                 build localhost/ossmount:latest (and :VERSION)
#   scripts/build-image.sh --rebuild-base  also remake the Debian base image from scratch
#   scripts/build-image.sh --base-only     only make the base image (test images start from it)
#
# Steps: install podman, runc and mmdebstrap if missing; make a minimal Debian 12 root file
# system with mmdebstrap and import it as localhost/ossmount-base:bookworm (kept, so later
# runs skip this); build the image; print its size. Run as root.
# Environment: OSSMOUNT_IMAGE_CACHE (where the base tarball is kept, default
# /var/cache/ossmount-image), DEBIAN_MIRROR (default http://deb.debian.org), JOBS (compile
# jobs inside the build, default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

rebuild_base=0
base_only=0
for arg in "$@"; do
  case "$arg" in
    --rebuild-base) rebuild_base=1 ;;
    --base-only) base_only=1 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "build-image.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" -ne 0 ]; then
  echo "build-image.sh: run as root (podman builds rootful images; mmdebstrap needs root)" >&2
  exit 1
fi

BASE_IMAGE=localhost/ossmount-base:bookworm
IMAGE=localhost/ossmount:latest
CACHE=${OSSMOUNT_IMAGE_CACHE:-/var/cache/ossmount-image}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org}
BASE_TAR=$CACHE/ossmount-base-bookworm.tar
VERSION=$(sed -n 's/^project(ossmount VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)

# crun (Debian's default runtime for podman) refuses hybrid cgroup layouts; runc works on
# both. The limits are set explicitly because podman's defaults can exceed the machine's
# hard limits, and the runtime then fails with "setrlimit ... Operation not permitted".
PODMAN=(podman --runtime runc)
ULIMITS=(--ulimit nofile=20000:20000 --ulimit nproc=4096:4096)

missing=()
for p in podman runc mmdebstrap; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "build-image: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

start=$(date +%s)
if [ "$rebuild_base" -eq 1 ]; then
  rm -f "$BASE_TAR"
  "${PODMAN[@]}" rmi -f "$BASE_IMAGE" >/dev/null 2>&1 || true
fi

if [ ! -s "$BASE_TAR" ]; then
  echo "build-image: making the Debian 12 base with mmdebstrap (variant apt)"
  mkdir -p "$CACHE"
  # variant apt: the Essential packages and apt, nothing else (no init, no man pages).
  # The dpkg path excludes are written into the root file system, so the packages the
  # Containerfile installs later leave out their documentation and translations too
  # (copyright files are kept). mmdebstrap removes the apt lists and caches at the end.
  # The merged-usr hook sets up the /usr merge itself and installs usr-is-merged; without
  # it apt picks the usrmerge package, which pulls in perl (about 50 MB of the base).
  mmdebstrap --variant=apt --format=tar \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --aptopt='APT::Install-Recommends "false"' \
    --aptopt='APT::Install-Suggests "false"' \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/lintian/*' \
    bookworm "$BASE_TAR.tmp" \
    "deb $MIRROR/debian bookworm main" \
    "deb $MIRROR/debian bookworm-updates main" \
    "deb $MIRROR/debian-security bookworm-security main"
  mv "$BASE_TAR.tmp" "$BASE_TAR"
  "${PODMAN[@]}" rmi -f "$BASE_IMAGE" >/dev/null 2>&1 || true
fi
if ! "${PODMAN[@]}" image exists "$BASE_IMAGE"; then
  echo "build-image: importing $BASE_TAR as $BASE_IMAGE"
  "${PODMAN[@]}" import --change 'CMD ["/bin/bash"]' "$BASE_TAR" "$BASE_IMAGE" >/dev/null
fi
if [ "$base_only" -eq 1 ]; then exit 0; fi

tags=(--tag "$IMAGE")
if [ -n "$VERSION" ]; then tags+=(--tag "localhost/ossmount:$VERSION"); fi
echo "build-image: building $IMAGE${VERSION:+ (also :$VERSION)}"
# --network=host: RUN steps reach Debian's mirror through the host's network (no CNI setup
# needed). The context is the repository; the Containerfile copies only what the build needs.
"${PODMAN[@]}" build --network=host "${ULIMITS[@]}" \
  --build-arg BASE="$BASE_IMAGE" --build-arg JOBS="${JOBS:-$(nproc)}" \
  -f deploy/container/Containerfile "${tags[@]}" "$ROOT"

size=$("${PODMAN[@]}" image inspect --format '{{.Size}}' "$IMAGE")
echo "build-image: $IMAGE is $size bytes ($((size / 1000000)) MB uncompressed);" \
  "built in $(($(date +%s) - start)) s"
