#!/usr/bin/env bash
# Mount time and memory of a mount driven by a 1,000,000-entry manifest (--manifest).
#
#   bench/manifest_bench.sh [BUILD_DIR] [ENTRIES]        (default build/, 1000000)
#
# Generates a manifest of ENTRIES lines "train/cNNNN/img_NNNNNNN.JPEG<TAB>SIZE<TAB>ETAG"
# (1,000 files per directory); only the first 8 objects exist on the object server (the
# rest need not: nothing reads them). Mounts bucket:/ds with --manifest and
# --metadata-ttl indefinite and reports:
#   - mount time: from the command's start to the daemon logging that the mount answers a
#     stat (the same moment the background form returns), for the manifest in key order (as
#     written from a listing) and the same lines shuffled (the index must sort them);
#   - RSS of the daemon after mount, after `find` of the whole tree, and per entry (also net
#     of a 1-entry manifest mount, the daemon's fixed cost);
#   - LIST / HEAD / GET requests counted by the server (LIST must be 0);
#   - that the 8 real files read back byte-exact.
# Prints a Markdown table. Timing on a shared machine is indicative only.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ENTRIES=${2:-1000000}
OSSMOUNT=$BUILD/daemon/ossmount
SERVER=$BUILD/tests/server/ossmount-testserver
[ -x "$OSSMOUNT" ] && [ -x "$SERVER" ] || cmake --build "$BUILD" --target ossmount ossmount-testserver

WORK=$(mktemp -d /tmp/ossmount-manifest.XXXXXX)
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
mkdir -p "$WORK/data/bench/ds/train/c0000"

/usr/bin/python3 - "$WORK/data/bench/ds/train/c0000" <<'PY'
import os, sys
for i in range(8):
    with open(os.path.join(sys.argv[1], "img_%07d.JPEG" % i), "wb") as f:
        f.write(os.urandom(110000 + i))
PY

"$SERVER" --root "$WORK/data" --bucket bench --port 0 --auth off > "$WORK/server.out" 2>/dev/null &
SERVER_PID=$!
for _ in $(seq 200); do grep -q "listening on" "$WORK/server.out" && break; sleep 0.05; done
PORT=$(sed -n 's/.*listening on 127.0.0.1://p' "$WORK/server.out")
ENDPOINT=http://127.0.0.1:$PORT

# The manifest: real size and etag for the 8 objects that exist, made-up ones elsewhere.
/usr/bin/python3 - "$ENDPOINT" "$ENTRIES" "$WORK/manifest.tsv" "$WORK/one.tsv" <<'PY'
import hashlib, sys, urllib.request
endpoint, n, out, one = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
real = {}
for i in range(8):
    key = "train/c0000/img_%07d.JPEG" % i
    req = urllib.request.Request("%s/bench/ds/%s" % (endpoint, key), method="HEAD")
    with urllib.request.urlopen(req) as r:
        real[key] = (int(r.headers["Content-Length"]), r.headers["ETag"])
with open(out, "w") as f:
    for i in range(n):
        key = "train/c%04d/img_%07d.JPEG" % (i // 1000, i)
        if key in real:
            size, etag = real[key]
        else:
            size, etag = 100000 + i % 20000, '"%s"' % hashlib.md5(key.encode()).hexdigest().upper()
        f.write("%s\t%d\t%s\n" % (key, size, etag))
import random
with open(out) as f:
    lines = f.readlines()
random.Random(1).shuffle(lines)
with open(out + ".shuffled", "w") as f:
    f.writelines(lines)
del lines
with open(one, "w") as f:
    key = "train/c0000/img_0000000.JPEG"
    f.write("%s\t%d\t%s\n" % (key, real[key][0], real[key][1]))
PY

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
stat_of() { /usr/bin/python3 -c "import json,sys,urllib.request; \
print(json.load(urllib.request.urlopen('$ENDPOINT/_ossmount/stats')).get(sys.argv[1], 0))" "$1"; }
now_ms() { date +%s%3N; }

# Mounts $1 (a manifest) on a fresh directory in the foreground; sets MNT, DAEMON_PID and
# MOUNT_MS (command start to "serving").
mount_with() {
  MNT=$(mktemp -d "$WORK/mnt.XXXX")
  local log="$MNT.log"
  local t0
  t0=$(now_ms)
  "$OSSMOUNT" bench:/ds "$MNT" --endpoint "$ENDPOINT" --path-style --region cn-test-1 \
      --manifest "$1" --metadata-ttl indefinite -f > "$log" 2>&1 &
  DAEMON_PID=$!
  until grep -qs "; serving" "$log"; do
    if ! kill -0 "$DAEMON_PID" 2>/dev/null; then cat "$log" >&2; exit 1; fi
    sleep 0.01
  done
  MOUNT_MS=$(( $(now_ms) - t0 ))
}
unmount() {
  fusermount3 -u "$MNT"
  wait "$DAEMON_PID" || true
  DAEMON_PID=""
}

export OSS_ACCESS_KEY_ID=bench OSS_ACCESS_KEY_SECRET=bench-secret-not-checked

# Fixed cost: the same daemon with a 1-entry manifest.
mount_with "$WORK/one.tsv"
sleep 0.5
BASE_KB=$(rss_kb "$DAEMON_PID")
unmount

# The same entries in random order: the index sorts them.
mount_with "$WORK/manifest.tsv.shuffled"
SHUFFLED_MS=$MOUNT_MS
SHUFFLED_KB=$(rss_kb "$DAEMON_PID")
unmount

curl -s -X POST "$ENDPOINT/_ossmount/reset" > /dev/null
mount_with "$WORK/manifest.tsv"
sleep 0.5
MOUNTED_KB=$(rss_kb "$DAEMON_PID")
INDEX_LINE=$(grep -o "manifest .*entries from .*" "$MNT.log" | head -1)
t0=$(now_ms)
FOUND=$(find "$MNT" | wc -l)
FIND_MS=$(( $(now_ms) - t0 ))
FOUND_KB=$(rss_kb "$DAEMON_PID")
for i in $(seq 0 7); do
  f=$(printf "train/c0000/img_%07d.JPEG" "$i")
  cmp "$MNT/$f" "$WORK/data/bench/ds/$f"
done
LISTS=$(stat_of LIST)
HEADS=$(stat_of HEAD)
GETS=$(stat_of GET)
unmount

MANIFEST_BYTES=$(stat -c %s "$WORK/manifest.tsv")
awk -v n="$ENTRIES" -v mb="$MANIFEST_BYTES" -v mount_ms="$MOUNT_MS" -v base="$BASE_KB" \
    -v mounted="$MOUNTED_KB" -v found="$FOUND_KB" -v find_ms="$FIND_MS" -v entries="$FOUND" \
    -v lists="$LISTS" -v heads="$HEADS" -v gets="$GETS" -v shuffled_ms="$SHUFFLED_MS" \
    -v shuffled="$SHUFFLED_KB" 'BEGIN {
  printf "| Measure | Value |\n|---|---|\n"
  printf "| Manifest | %d entries, %.1f MB |\n", n, mb / 1e6
  printf "| Mount time (command start to mount answering) | %.2f s |\n", mount_ms / 1000
  printf "| Mount time, same lines shuffled (the index sorts them) | %.2f s (RSS %.1f MiB) |\n", shuffled_ms / 1000, shuffled / 1024
  printf "| Daemon RSS, 1-entry manifest (fixed cost) | %.1f MiB |\n", base / 1024
  printf "| Daemon RSS after mount | %.1f MiB |\n", mounted / 1024
  printf "| RSS per entry after mount (total / net of fixed cost) | %.0f / %.0f bytes |\n", mounted * 1024 / n, (mounted - base) * 1024 / n
  printf "| find over the tree | %d paths in %.2f s |\n", entries, find_ms / 1000
  printf "| Daemon RSS after find | %.1f MiB |\n", found / 1024
  printf "| RSS per entry after find (total / net) | %.0f / %.0f bytes |\n", found * 1024 / n, (found - base) * 1024 / n
  printf "| Requests at the server (mount, find, 8 reads) | LIST %d, HEAD %d, GET %d |\n", lists, heads, gets
}'
echo
echo "Daemon log: $INDEX_LINE"
