#!/bin/sh
# Epochs of a dataset read by path, never listed by the program, as datasets built from a
# list file (COCO's annotations, a train.txt of paths) are: 16 DataLoader workers open each
# file under the mount by name (bench/epoch_runner.py --paths-from), at 35 ms TTFB, no disk
# cache. Two datasets:
#   classes  the benchmark's 5,000 images in 20 class directories (bench/data/root/img),
#            two epochs at the default --metadata-ttl (60 s);
#   flat     12,000 files of 2-6 KB in one directory (made here, bench/data/root/flat), one
#            epoch of about 30 s at --metadata-ttl 10, so the directory's listing (12 pages,
#            more than the 10 a lookup would wait for) expires within it.
# Prints each epoch's files/s and the GETs and LISTs the server saw.
#
#   bench/by_path_epochs.sh [--rounds 2] [--old PATH/TO/ossmount] [--build DIR]
#
# --old: a second daemon binary (another commit's build); the rounds then alternate old and
# new, since this machine's speed drifts from one minute to the next. /usr/bin/python3.
set -eu
rounds=2
old=""
build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --old) old=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "by_path_epochs.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
src=$(cd "$(dirname "$0")/.." && pwd)
[ -z "$old" ] || [ -x "$old" ] || { echo "by_path_epochs.sh: --old $old is not executable" >&2; exit 2; }

flat=$src/bench/data/root/flat
if [ ! -f "$flat/.complete" ]; then
  echo "making $flat (12,000 files)"
  rm -rf "$flat"
  /usr/bin/python3 - "$flat/all" <<'PY'
import os, random, sys
top = sys.argv[1]
os.makedirs(top)
rng = random.Random(5)
for i in range(12000):
    with open(os.path.join(top, "%06d.jpg" % i), "wb") as f:
        f.write(rng.randbytes(rng.randrange(2048, 6144)))
PY
  touch "$flat/.complete"
fi

me=by_path_epochs
. "$src/bench/epoch_rig.sh"
rig_start

run() {  # run LABEL BINARY BUCKET MOUNT-SUBDIR PATHS-FROM EPOCHS TTL
  rig_bucket=$3
  rig_mount "$2" --metadata-ttl "$7"
  /usr/bin/python3 "$src/bench/epoch_runner.py" "$work/mnt/$4" --paths-from "$5" --workers 16 \
    --epochs "$6" --stats-url "http://127.0.0.1:$port" > "$work/epochs.json"
  rig_unmount
  /usr/bin/python3 - "$1" "$3" "$7" "$work/epochs.json" <<'PY'
import json, sys
label, bucket, ttl, path = sys.argv[1:5]
parts = []
for line in open(path):
    d = json.loads(line)
    if d["phase"] == "epoch":
        r = d["requests"]
        parts.append("epoch %d %5.0f files/s %6d GET %6d LIST" % (
            d["epoch"], d["files_per_s"], r["GET"], r["LIST"]))
print("%-4s %-7s ttl %-4s %s" % (label, bucket, ttl, " | ".join(parts)), flush=True)
PY
}

echo "files opened by path (never listed), 35 ms, 16 workers, no disk cache (indicative figures on a shared machine)"
for _ in $(seq "$rounds"); do
  [ -z "$old" ] || run old "$old" img train "$data/img/train" 2 60
  run new "$build/daemon/ossmount" img train "$data/img/train" 2 60
done
for _ in $(seq "$rounds"); do
  [ -z "$old" ] || run old "$old" flat . "$flat" 1 10
  run new "$build/daemon/ossmount" flat . "$flat" 1 10
done
