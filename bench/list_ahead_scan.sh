#!/bin/sh
# A cold ImageFolder scan of an ImageNet-shaped tree (1,000 class directories) at 35 ms:
# torchvision.datasets.ImageFolder(MNT/train) built on a fresh mount, with --list-ahead 0
# (each class directory listed when the scan enters it) and with the default (64 listed
# ahead of the scan). Prints the scan's seconds and the LISTs the server saw.
#
#   bench/list_ahead_scan.sh [--rounds 2] [--classes 1000] [--old PATH/TO/ossmount] [--build DIR]
#
# The classes hold 10 one-byte files each (one listing page per class, as when a class
# directory holds up to 1,000 images; ImageNet's 1,300 take two). --old: another daemon
# binary, scanned with its defaults in each round too. Uses the bundled object server at
# 35 ms TTFB (bench/epoch_rig.sh) and /usr/bin/python3 with torchvision.
set -eu
rounds=2
classes=1000
old=""
build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --classes) classes=$2; shift 2 ;;
    --old) old=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "list_ahead_scan.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
src=$(cd "$(dirname "$0")/.." && pwd)
[ -z "$old" ] || [ -x "$old" ] || { echo "list_ahead_scan.sh: --old $old is not executable" >&2; exit 2; }
me=list_ahead_scan
tree=$src/bench/data/root/classes$classes
if [ ! -f "$tree/.done" ]; then
  rm -rf "$tree"
  /usr/bin/python3 - "$tree" "$classes" <<'PY'
import os, sys
root, classes = sys.argv[1], int(sys.argv[2])
for c in range(classes):
    d = os.path.join(root, "train", "n%08d" % c)
    os.makedirs(d)
    for i in range(10):
        with open(os.path.join(d, "img%d.JPEG" % i), "wb") as f:
            f.write(b"x")
open(os.path.join(root, ".done"), "w").close()
PY
fi
rig_bucket=classes$classes
. "$src/bench/epoch_rig.sh"
rig_start

scan() {  # scan LABEL BINARY ARG...
  label=$1
  binary=$2
  shift 2
  rig_mount "$binary" --metadata-ttl indefinite "$@"
  curl -s -X POST "http://127.0.0.1:$port/_ossmount/reset" > /dev/null
  seconds=$(/usr/bin/python3 -c "
import sys, time, torchvision
start = time.monotonic()
ds = torchvision.datasets.ImageFolder(sys.argv[1], loader=len)
assert len(ds.classes) == $classes, len(ds.classes)
print('%.2f' % (time.monotonic() - start))" "$work/mnt/train")
  lists=$(curl -s "http://127.0.0.1:$port/_ossmount/stats" | grep -o '"LIST":[0-9]*' | cut -d: -f2)
  rig_unmount
  printf '%-22s %3d classes  scan %7.2f s  LISTs %d\n' "$label" "$classes" "$seconds" "$lists"
}

for round in $(seq "$rounds"); do
  echo "round $round"
  scan "--list-ahead 0" "$build/daemon/ossmount" --list-ahead 0
  [ -z "$old" ] || scan "old daemon" "$old"
  scan "default (64)" "$build/daemon/ossmount"
done
