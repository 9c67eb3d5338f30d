#!/usr/bin/env bash
# Measures how many 115 KB GETs per second the project's object server (ossmount-testserver)
# serves on loopback, so benchmark results can show it is never the limit.
#
#   bench/server_capacity.sh [BUILD_DIR]        (default build/)
#
# 2,000 objects of 115,000 bytes, --auth off, wrk with 2 threads and 64 connections cycling
# through the keys for 10 s, at a time-to-first-byte of 0, 12 and 35 ms. Prints a Markdown
# table: GET/s, MB/s, latency p50/p99, the bound 64/ttfb, and the server's CPU per GET.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
SERVER=$BUILD/tests/server/ossmount-testserver
command -v wrk >/dev/null || scripts/install-deps.sh --bench
[ -x "$SERVER" ] || cmake --build "$BUILD" --target ossmount-testserver

WORK=$(mktemp -d /tmp/ossmount-capacity.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/data/cap"
/usr/bin/python3 - "$WORK/data/cap" <<'PY'
import os, sys
root = sys.argv[1]
for i in range(2000):
    with open(os.path.join(root, "obj%04d" % i), "wb") as f:
        f.write(os.urandom(115000))
PY
cat > "$WORK/cycle.lua" <<'LUA'
local i = 0
request = function()
  i = (i + 1) % 2000
  return wrk.format("GET", string.format("/cap/obj%04d", i))
end
LUA

echo "| TTFB | GET/s | MB/s | p50 | p99 | bound 64/TTFB | server CPU per GET |"
echo "|---|---|---|---|---|---|---|"
for ttfb in 0 12 35; do
  "$SERVER" --root "$WORK/data" --bucket cap --port 0 --auth off --ttfb-ms "$ttfb" \
      > "$WORK/server.out" 2>/dev/null &
  pid=$!
  for _ in $(seq 100); do grep -q "listening on" "$WORK/server.out" && break; sleep 0.05; done
  port=$(sed -n 's/.*listening on 127.0.0.1://p' "$WORK/server.out")
  cpu0=$(awk '{print $14+$15}' /proc/$pid/stat)
  wrk -t2 -c64 -d10s --latency -s "$WORK/cycle.lua" "http://127.0.0.1:$port" > "$WORK/wrk.out"
  cpu1=$(awk '{print $14+$15}' /proc/$pid/stat)
  kill $pid; wait $pid 2>/dev/null || true
  rps=$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk.out")
  total=$(awk '/requests in/ {print $1}' "$WORK/wrk.out")
  p50=$(awk '$1=="50%" {print $2}' "$WORK/wrk.out")
  p99=$(awk '$1=="99%" {print $2}' "$WORK/wrk.out")
  bound=$([ "$ttfb" -eq 0 ] && echo "-" || echo $((64000 / ttfb)))
  awk -v ttfb="$ttfb" -v rps="$rps" -v p50="$p50" -v p99="$p99" -v bound="$bound" \
      -v cpu=$((cpu1 - cpu0)) -v total="$total" -v hz="$(getconf CLK_TCK)" \
      'BEGIN { printf "| %d ms | %.0f | %.0f | %s | %s | %s | %.0f us |\n", ttfb, rps, rps*115000/1e6, p50, p99, bound, cpu/hz/total*1e6 }'
done
