#!/usr/bin/env bash
# Builds ossmount and runs every test: unit, integration (s3rver and the project's object
# server) and real FUSE mount tests. Ends with ctest's summary line.
#   scripts/test.sh                 everything
#   scripts/test.sh -L unit         only a label (unit, integration, mount, lint); any ctest args
#   scripts/test.sh --sanitizers    also the sanitizer and fuzz runs (always on when CI=true)
#   scripts/test.sh --no-sanitizers skip them even in CI
# The sanitizer and fuzz runs (scripts/sanitize.sh: unit and integration tests under ASan+UBSan
# and TSan; scripts/fuzz.sh: every fuzz target for FUZZ_SECONDS, default 20 s each) go first,
# so ctest's summary stays the last line; the exit status reflects all of them.
set -euo pipefail
cd "$(dirname "$0")/.."

sanitizers=0
if [ "${CI:-}" = "true" ] || [ "${OSSMOUNT_SANITIZERS:-0}" = "1" ]; then sanitizers=1; fi
ctest_args=()
for arg in "$@"; do
  case "$arg" in
    --sanitizers) sanitizers=1 ;;
    --no-sanitizers) sanitizers=0 ;;
    *) ctest_args+=("$arg") ;;
  esac
done

# CI runs each submission in a fresh clone in a new folder, where all four builds (Release,
# ASan+UBSan, TSan, fuzz) would start from nothing: about half of CI's time. With CI=true the
# run happens in a stable copy of the tree instead (OSSMOUNT_CI_TREE, default
# /var/tmp/ossmount-ci; "off" runs in place), whose build directories persist between runs on
# one machine. rsync --checksum without -t leaves files whose content did not change
# untouched, mtimes included (with -t it would stamp them with the fresh clone's times, and
# every build would start over), and writes changed files with the current time, so each build
# recompiles only what changed since the last run here; a new machine builds everything.
ci_tree=${OSSMOUNT_CI_TREE:-/var/tmp/ossmount-ci}
if [ "${CI:-}" = "true" ] && [ "$ci_tree" != "off" ] && [ -z "${OSSMOUNT_IN_CI_TREE:-}" ]; then
  if ! command -v rsync >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rsync >/dev/null
  fi
  mkdir -p "$ci_tree"
  rsync -rl --perms --checksum --delete --exclude='/build*/' --exclude='/fuzz-out/' ./ "$ci_tree/"
  echo "test.sh: running in $ci_tree, a stable copy of $(pwd) (OSSMOUNT_CI_TREE=off to run here)"
  OSSMOUNT_IN_CI_TREE=1 exec "$ci_tree/scripts/test.sh" "$@"
fi

scripts/install-deps.sh
source scripts/cmake_env.sh

# FUSE over io_uring (--fuse-io-uring, default auto) carries a mount's requests where the
# kernel's switch is on. As root on a kernel that has it (Linux 6.14+), the run turns the
# switch on, so that every mount test runs over the rings (fuse_test runs its cases over both
# transports, mount:uring covers /dev/fuse and the fallbacks), and puts back what it found at
# the end. OSSMOUNT_TEST_URING_SWITCH=N runs the mount tests over /dev/fuse instead.
uring_switch=/sys/module/fuse/parameters/enable_uring
[ -e /dev/fuse ] && { : < /dev/fuse; } 2>/dev/null || true  # loads the fuse module
if [ -w "$uring_switch" ]; then
  uring_switch_before=$(cat "$uring_switch")
  trap 'echo "$uring_switch_before" > "$uring_switch"' EXIT
  echo "${OSSMOUNT_TEST_URING_SWITCH:-Y}" > "$uring_switch"
  echo "test.sh: the kernel's FUSE io_uring switch is $(cat "$uring_switch") for this run (it was $uring_switch_before)"
fi
extra_status=0
if [ "$sanitizers" -eq 1 ]; then
  start=$(date +%s)
  scripts/sanitize.sh || extra_status=$?
  scripts/fuzz.sh --seconds "${FUZZ_SECONDS:-20}" || extra_status=$?
  echo "test.sh: sanitizers and fuzzing took $(($(date +%s) - start))s (status $extra_status)"
fi

BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
cd "$BUILD_DIR"
# --output-on-failure: a failing test prints what it saw. The last line is ctest's summary.
# -j nproc: the mount tests still run one at a time (resource lock "fuse", except two that
# mostly wait; tests/mount/CMakeLists.txt), beside the unit and integration tests.
status=0
ctest --output-on-failure --timeout 900 -j"$(nproc)" "${ctest_args[@]}" || status=$?
if [ "$status" -eq 0 ] && [ "$extra_status" -ne 0 ]; then status=$extra_status; fi
exit "$status"
