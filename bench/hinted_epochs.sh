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
build=$(cd "$build" && pwd)
for bin in daemon/ossmount tests/server/ossmount-testserver; do
  [ -x "$build/$bin" ] || { echo "hinted_epochs.sh: $build/$bin is not built" >&2; exit 2; }
done
[ -z "$old" ] || [ -x "$old" ] || { echo "hinted_epochs.sh: --old $old is not executable" >&2; exit 2; }
data=$src/bench/data/root
/usr/bin/python3 -c "import sys; sys.path.insert(0, '$src/bench')
from ossbench import datasets; datasets.ensure('$src', '$data', print)"

work=$(mktemp -d /tmp/ossmount-hinted-epochs-XXXXXX)
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
[ -n "$port" ] || { echo "hinted_epochs.sh: the object server did not start" >&2; exit 1; }

# One mount, three hinted epochs, one summary line.
run() {  # run LABEL BINARY
  OSS_ACCESS_KEY_ID=bench OSS_ACCESS_KEY_SECRET=bench "$2" img "$work/mnt" \
    --endpoint "http://127.0.0.1:$port" --path-style --region cn-bench \
    --metadata-ttl indefinite --max-memory 1G -f > "$work/daemon.log" 2>&1 &
  daemon_pid=$!
  for _ in $(seq 100); do mountpoint -q "$work/mnt" && break; sleep 0.1; done
  mountpoint -q "$work/mnt" || { echo "hinted_epochs.sh: mount failed:" >&2; cat "$work/daemon.log" >&2; exit 1; }
  /usr/bin/python3 "$src/bench/epoch_runner.py" "$work/mnt/train" --workers 16 --epochs 3 \
    --hints --stats-url "http://127.0.0.1:$port" > "$work/epochs.json"
  ticks=$(awk '{ print $14 + $15 }' "/proc/$daemon_pid/stat")
  umount "$work/mnt"
  wait "$daemon_pid" || true
  daemon_pid=""
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
