#!/bin/sh
# Epochs that outlast a finite --metadata-ttl: two epochs on one mount (no disk cache) at
# --metadata-ttl 3 (the 5,000-image epoch takes about 12 s, so every directory's listing
# expires several times within it, as an hour-long ImageNet epoch outlasts the default 60 s),
# and the same with --metadata-ttl indefinite for reference. Prints each epoch's files/s and
# the GETs and LISTs the server saw.
#
#   bench/finite_ttl_epochs.sh [--rounds 2] [--ttl 3] [--old PATH/TO/ossmount] [--build DIR]
#
# --old: a second daemon binary (another commit's build); the rounds then alternate old and
# new, since this machine's speed drifts from one minute to the next. Uses the benchmark
# dataset (bench/data/root/img, made by bench/run.sh or here), the bundled object server at
# 35 ms TTFB, 16 DataLoader workers (bench/epoch_runner.py) and /usr/bin/python3.
set -eu
rounds=2
ttl=3
old=""
build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --ttl) ttl=$2; shift 2 ;;
    --old) old=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "finite_ttl_epochs.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
src=$(cd "$(dirname "$0")/.." && pwd)
[ -z "$old" ] || [ -x "$old" ] || { echo "finite_ttl_epochs.sh: --old $old is not executable" >&2; exit 2; }
me=finite_ttl_epochs
. "$src/bench/epoch_rig.sh"
rig_start

run() {  # run LABEL BINARY TTL
  rig_mount "$2" --metadata-ttl "$3"
  /usr/bin/python3 "$src/bench/epoch_runner.py" "$work/mnt/train" --workers 16 --epochs 2 \
    --stats-url "http://127.0.0.1:$port" > "$work/epochs.json"
  rig_unmount
  /usr/bin/python3 - "$1" "$3" "$work/epochs.json" <<'PY'
import json, sys
label, ttl, path = sys.argv[1], sys.argv[2], sys.argv[3]
parts = []
for line in open(path):
    d = json.loads(line)
    if d["phase"] == "epoch":
        r = d["requests"]
        parts.append("epoch %d %5.0f files/s %5d GET %5d LIST" % (
            d["epoch"], d["files_per_s"], r["GET"], r["LIST"]))
print("%-4s ttl %-10s %s" % (label, ttl, " | ".join(parts)), flush=True)
PY
}

echo "epochs outlasting --metadata-ttl $ttl, 35 ms, 16 workers, 5,000 images in 20 directories (indicative figures on a shared machine)"
for _ in $(seq "$rounds"); do
  [ -z "$old" ] || run old "$old" "$ttl"
  run new "$build/daemon/ossmount" "$ttl"
done
run new "$build/daemon/ossmount" indefinite
