#!/bin/sh
# Hinted epochs 1 to 3 on one mount (no disk cache, --metadata-ttl indefinite): epoch 1 is
# fetched, epochs 2 and 3 are mostly served by the kernel's page cache. Prints each epoch's
# files/s and the GETs the server saw (a GET in epoch 2 or 3 is either a page-cache miss or
# a prefetch nobody reads), and the daemon's CPU seconds.
#
#   bench/hinted_epochs.sh [--rounds 4] [--old PATH/TO/ossmount] [--build DIR]
#
# --old: a second daemon binary (another commit's build); the rounds then alternate old and
# new, since this machine's speed drifts from one minute to the next. Uses the benchmark
# dataset (bench/data/root/img, made by bench/run.sh or here), the bundled object server at
# 35 ms TTFB, 16 DataLoader workers (bench/epoch_runner.py --hints) and /usr/bin/python3.
set -eu
rounds=4
old=""
build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --old) old=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "hinted_epochs.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
src=$(cd "$(dirname "$0")/.." && pwd)
[ -z "$old" ] || [ -x "$old" ] || { echo "hinted_epochs.sh: --old $old is not executable" >&2; exit 2; }
me=hinted_epochs
. "$src/bench/epoch_rig.sh"
rig_start

# One mount, three hinted epochs, one summary line.
run() {  # run LABEL BINARY
  rig_mount "$2" --metadata-ttl indefinite --max-memory 1G
  /usr/bin/python3 "$src/bench/epoch_runner.py" "$work/mnt/train" --workers 16 --epochs 3 \
    --hints --stats-url "http://127.0.0.1:$port" > "$work/epochs.json"
  ticks=$(awk '{ print $14 + $15 }' "/proc/$serving_pid/stat")
  rig_unmount
  /usr/bin/python3 - "$1" "$ticks" "$(getconf CLK_TCK)" "$work/epochs.json" <<'EOF'
import json, sys
label, ticks, hz, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
parts = []
for line in open(path):
    d = json.loads(line)
    if d["phase"] == "epoch":
        parts.append("epoch %d %6.0f files/s %5d GET" % (d["epoch"], d["files_per_s"],
                                                       d["requests"]["GET"]))
print("%-4s %s | daemon CPU %.2f s" % (label, " | ".join(parts), ticks / hz), flush=True)
EOF
}

echo "hinted epochs on one mount, 35 ms, 16 workers, 5,000 images (indicative figures on a shared machine)"
for _ in $(seq "$rounds"); do
  [ -z "$old" ] || run old "$old"
  run new "$build/daemon/ossmount"
done
