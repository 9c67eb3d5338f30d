#!/bin/sh
# FUSE over io_uring against /dev/fuse (--fuse-io-uring on / off), alternating on the same
# minutes: per round, an epoch read from the disk cache after a remount (each file OPEN,
# IOCTL, RELEASE: passthrough reads the cache file) with the local reader right after it, and
# a hinted epoch 1 (no disk cache). Prints files/s, the server's GETs and the daemon's CPU
# seconds for each.
#
#   bench/transport_epochs.sh [--rounds 3] [--build DIR]
#
# Needs root and a kernel with FUSE over io_uring (Linux 6.14+; the daemon turns the kernel's
# switch on). Uses the benchmark dataset (bench/data/root/img), the bundled object server at
# 35 ms TTFB, 16 DataLoader workers (bench/epoch_runner.py) and /usr/bin/python3.
set -eu
rounds=3
build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "transport_epochs.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
src=$(cd "$(dirname "$0")/.." && pwd)
me=transport_epochs
. "$src/bench/epoch_rig.sh"
rig_start

# epoch LABEL MOUNT_PATH: one epoch, its files/s and GETs as "F files/s G GET".
epoch() {
  /usr/bin/python3 "$src/bench/epoch_runner.py" "$2" --workers 16 --epochs 1 $3 \
    --stats-url "http://127.0.0.1:$port" | /usr/bin/python3 -c '
import json, sys
for line in sys.stdin:
    d = json.loads(line)
    if d["phase"] == "epoch":
        print("%6.0f files/s %5d GET" % (d["files_per_s"], d["requests"]["GET"]))'
}
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$serving_pid/stat"; }

remount() {  # remount TRANSPORT
  cache=$work/cache-$1
  if [ ! -d "$cache" ]; then  # filled once per transport, by an epoch that is not measured
    mkdir -p "$cache"
    rig_mount "$build/daemon/ossmount" --no-supervise --fuse-io-uring "$1" --metadata-ttl indefinite --cache "$cache"
    epoch fill "$work/mnt/train" "" > /dev/null
    rig_unmount
  fi
  rig_mount "$build/daemon/ossmount" --no-supervise --fuse-io-uring "$1" --metadata-ttl indefinite --cache "$cache"
  line=$(epoch remount "$work/mnt/train" "")
  c=$(cpu)
  rig_unmount
  local=$(epoch local "$data/img/train" "" | awk '{ print $1 }')
  printf "remount %-4s %s | daemon CPU %s s | local %s files/s\n" "$1" "$line" "$c" "$local"
}

hints() {  # hints TRANSPORT
  rig_mount "$build/daemon/ossmount" --no-supervise --fuse-io-uring "$1" --metadata-ttl indefinite --max-memory 1G
  line=$(epoch hints "$work/mnt/train" --hints)
  c=$(cpu)
  rig_unmount
  printf "hints   %-4s %s | daemon CPU %s s\n" "$1" "$line" "$c"
}

echo "io_uring (on) against /dev/fuse (off), 35 ms, 16 workers, 5,000 images (indicative figures on a shared machine)"
for _ in $(seq "$rounds"); do
  for t in off on; do remount "$t"; done
  for t in off on; do hints "$t"; done
done
