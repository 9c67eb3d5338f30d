#!/usr/bin/env bash
# What a large disk cache costs the daemon at mount: the time to index it and the memory
# the index keeps, per cached block.
#
#   bench/cache_index_bench.sh [BUILD_DIR] [BLOCKS]        (default build/, 1000000)
#
# Fills a cache directory with BLOCKS block files (empty files under block-file names: the
# index is built from names, sizes and mtimes, and nothing reads them here), written in the
# flat layout of caches made before 256 subdirectories were used, then mounts a one-object
# bucket with --cache on it three times:
#   - with an empty cache directory (the daemon's fixed cost);
#   - with the BLOCKS files (a cache written by an older version is moved into its
#     subdirectories by this first mount);
#   - again (the steady state: a restart over a large cache).
# Reports, for each: mount time (command start to the daemon logging "; serving"), the
# daemon's RSS and its peak RSS (VmHWM: the index is built at start), and the RSS per block
# net of the empty-cache mount. Prints a Markdown
# table. Timing on a shared machine is indicative only; memory is not.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
BLOCKS=${2:-1000000}
OSSMOUNT=$BUILD/daemon/ossmount
SERVER=$BUILD/tests/server/ossmount-testserver
[ -x "$OSSMOUNT" ] && [ -x "$SERVER" ] || cmake --build "$BUILD" --target ossmount ossmount-testserver

WORK=$(mktemp -d /tmp/ossmount-cacheindex.XXXXXX)
SERVER_PID=""
DAEMON_PID=""
cleanup() {
  for m in "$WORK"/mnt*; do
    [ -d "$m" ] && fusermount3 -u -z "$m" 2>/dev/null || true
  done
  [ -n "$DAEMON_PID" ] && kill "$DAEMON_PID" 2>/dev/null || true
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/data/bench/ds" "$WORK/empty" "$WORK/cache"
chmod 700 "$WORK/empty" "$WORK/cache"
head -c 100000 /dev/urandom > "$WORK/data/bench/ds/one.bin"

"$SERVER" --root "$WORK/data" --bucket bench --port 0 --auth off > "$WORK/server.out" 2>/dev/null &
SERVER_PID=$!
for _ in $(seq 200); do grep -q "listening on" "$WORK/server.out" && break; sleep 0.05; done
PORT=$(sed -n 's/.*listening on 127.0.0.1://p' "$WORK/server.out")
ENDPOINT=http://127.0.0.1:$PORT

t0=$(date +%s)
/usr/bin/python3 - "$WORK/cache" "$BLOCKS" <<'PY'
import hashlib, os, sys
cache, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    name = hashlib.sha256(b"bench-block-%d" % i).hexdigest() + ".blk"
    os.close(os.open(os.path.join(cache, name), os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600))
PY
FILL_S=$(( $(date +%s) - t0 ))

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
hwm_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }
now_ms() { date +%s%3N; }

# Mounts with --cache $1 in the foreground; sets MNT, DAEMON_PID, MOUNT_MS, RSS_KB, HWM_KB.
mount_with() {
  MNT=$(mktemp -d "$WORK/mnt.XXXX")
  local log="$MNT.log"
  local t0
  t0=$(now_ms)
  "$OSSMOUNT" bench:/ds "$MNT" --endpoint "$ENDPOINT" --path-style --region cn-test-1 \
      --cache "$1" --max-cache-size 100T -f > "$log" 2>&1 &
  DAEMON_PID=$!
  until grep -qs "; serving" "$log"; do
    if ! kill -0 "$DAEMON_PID" 2>/dev/null; then cat "$log" >&2; exit 1; fi
    sleep 0.01
  done
  MOUNT_MS=$(( $(now_ms) - t0 ))
  cmp "$MNT/one.bin" "$WORK/data/bench/ds/one.bin"
  sleep 0.5
  RSS_KB=$(rss_kb "$DAEMON_PID")
  HWM_KB=$(hwm_kb "$DAEMON_PID")
  grep -o "disk cache '.*" "$log" | head -1 >&2 || true
  fusermount3 -u "$MNT"
  wait "$DAEMON_PID" || true
  DAEMON_PID=""
}

export OSS_ACCESS_KEY_ID=bench OSS_ACCESS_KEY_SECRET=bench-secret-not-checked
mount_with "$WORK/empty"
EMPTY_MS=$MOUNT_MS EMPTY_KB=$RSS_KB EMPTY_HWM=$HWM_KB
mount_with "$WORK/cache"
FIRST_MS=$MOUNT_MS FIRST_KB=$RSS_KB FIRST_HWM=$HWM_KB
mount_with "$WORK/cache"
AGAIN_MS=$MOUNT_MS AGAIN_KB=$RSS_KB AGAIN_HWM=$HWM_KB
FLAT_LEFT=$(find "$WORK/cache" -maxdepth 1 -name '*.blk' | wc -l)

awk -v n="$BLOCKS" -v fill="$FILL_S" -v e_ms="$EMPTY_MS" -v e_kb="$EMPTY_KB" \
    -v f_ms="$FIRST_MS" -v f_kb="$FIRST_KB" -v a_ms="$AGAIN_MS" -v a_kb="$AGAIN_KB" \
    -v flat="$FLAT_LEFT" -v e_hwm="$EMPTY_HWM" -v f_hwm="$FIRST_HWM" -v a_hwm="$AGAIN_HWM" 'BEGIN {
  printf "| Mount with --cache | Mount time | Daemon RSS (peak) | RSS per block, net of the empty cache |\n"
  printf "|---|---|---|---|\n"
  printf "| empty cache directory | %.2f s | %.1f MiB (%.1f) | |\n", e_ms / 1000, e_kb / 1024, e_hwm / 1024
  printf "| %d blocks in the flat layout (first mount) | %.2f s | %.1f MiB (%.1f) | %.0f bytes |\n", n, f_ms / 1000, f_kb / 1024, f_hwm / 1024, (f_kb - e_kb) * 1024 / n
  printf "| the same, mounted again | %.2f s | %.1f MiB (%.1f) | %.0f bytes |\n", a_ms / 1000, a_kb / 1024, a_hwm / 1024, (a_kb - e_kb) * 1024 / n
  printf "\nBlock files made in %d s; left at the top level after the mounts: %d.\n", fill, flat
}'
