#!/bin/sh
# The soak test's long mode: 64 concurrent readers over small and large files through one
# mount for N minutes, with every byte checked, RSS, file descriptors and threads sampled
# every second. Prints the figures (a "soak:" JSON line) and fails like the test does.
#
#   bench/soak.sh [--minutes 30] [--readers 64] [--build DIR]
#
# The build directory (default ./build) must have ossmount, ossmount-testserver and
# ossmount-client built. Uses Debian's /usr/bin/python3.
set -eu
minutes=30
readers=64
build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes=$2; shift 2 ;;
    --readers) readers=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "soak.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$build" && pwd)
for bin in daemon/ossmount tests/server/ossmount-testserver tools/ossmount-client; do
  [ -x "$build/$bin" ] || { echo "soak.sh: $build/$bin is not built" >&2; exit 2; }
done
seconds=$(awk "BEGIN { print $minutes * 60 }")
echo "soak: $readers readers for $minutes min (indicative figures on a shared machine)"
OSSMOUNT_BIN=$build/daemon/ossmount \
TESTSERVER_BIN=$build/tests/server/ossmount-testserver \
CLIENT_BIN=$build/tools/ossmount-client \
TESTDATA_DIR=$build/testdata SOURCE_DIR=$src PYTHONDONTWRITEBYTECODE=1 \
OSSMOUNT_SOAK_SECONDS=$seconds OSSMOUNT_SOAK_READERS=$readers \
  exec /usr/bin/python3 "$src/tests/mount/test_soak.py"
