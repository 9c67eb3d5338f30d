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
build=$(cd "$build" && pwd)
for bin in daemon/ossmount tests/server/ossmount-testserver; do
  [ -x "$build/$bin" ] || { echo "finite_ttl_epochs.sh: $build/$bin is not built" >&2; exit 2; }
done
[ -z "$old" ] || [ -x "$old" ] || { echo "finite_ttl_epochs.sh: --old $old is not executable" >&2; exit 2; }
data=$src/bench/data/root
/usr/bin/python3 -c "import sys; sys.path.insert(0, '$src/bench')
from ossbench import datasets; datasets.ensure('$src', '$data', print)"

work=$(mktemp -d /tmp/ossmount-finite-ttl-XXXXXX)
server_pid=""
daemon_pid=""
cleanup() {
  if mountpoint -q "$work/mnt" 2>/dev/null; then umount "$work/mnt" || umount -l "$work/mnt"; fi
  [ -z "$daemon_pid" ] || kill "$daemon_pid" 2>/dev/null || true
  [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
mkdir -p "$work/mnt"

"$build/tests/server/ossmount-testserver" --root "$data" --port 0 --auth off --threads 2 \
  --memory-cache-mb 2048 --ttfb-ms 35 > "$work/server.out" 2> "$work/server.log" &
server_pid=$!
port=""
for _ in $(seq 100); do
  port=$(grep -so 'listening on 127.0.0.1:[0-9]*' "$work/server.out" | cut -d: -f2 || true)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "finite_ttl_epochs.sh: the object server did not start" >&2; exit 1; }

run() {  # run LABEL BINARY TTL
  OSS_ACCESS_KEY_ID=bench OSS_ACCESS_KEY_SECRET=bench "$2" img "$work/mnt" \
    --endpoint "http://127.0.0.1:$port" --path-style --region cn-bench \
    --metadata-ttl "$3" -f > "$work/daemon.log" 2>&1 &
  daemon_pid=$!
  for _ in $(seq 100); do mountpoint -q "$work/mnt" && break; sleep 0.1; done
  mountpoint -q "$work/mnt" || { echo "finite_ttl_epochs.sh: mount failed:" >&2; cat "$work/daemon.log" >&2; exit 1; }
  /usr/bin/python3 "$src/bench/epoch_runner.py" "$work/mnt/train" --workers 16 --epochs 2 \
    --stats-url "http://127.0.0.1:$port" > "$work/epochs.json"
  umount "$work/mnt"
  wait "$daemon_pid" || true
  daemon_pid=""
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
