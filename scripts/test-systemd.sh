#!/usr/bin/env bash
# End-to-end test of ossmount@.service under a real systemd (Debian 12's, 252), in a podman
# container whose init is systemd. Not part of the default CI run (the image takes minutes to
# build); run it by hand, as root, after building the tree:
#
#   scripts/test-systemd.sh
#
# The host's build of the daemon is mounted into a Debian 12 image with systemd and the
# daemon's runtime libraries; the installed unit (systemd/ossmount@.service.in) mounts a
# generated ImageFolder dataset (16 classes x 150 JPEGs) served by the bundled object server
# on 127.0.0.1 with 35 ms to first byte. The mount point is under a host directory made a
# shared mount point, so the mount propagates to the host, where an ImageFolder epoch with 8
# DataLoader workers reads every file (tests/mount/digest_epoch.py). During that one epoch:
# `systemctl restart` twice and `systemctl kill -s KILL` once. The epoch must end with no
# error and every file's bytes equal to the source's; the journal must show that each start
# resumed the mount systemd kept; `systemctl stop` must then unmount. Everything is removed
# at the end, also on failure.
# Environment: BUILD_DIR (default build), WORK (default /tmp/ossmount-systemd-test; kept on
# failure), KEEP=1 keeps it always.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then echo "test-systemd.sh: run as root" >&2; exit 1; fi

IMAGE=localhost/ossmount-systemd-test:latest
BASE_IMAGE=localhost/ossmount-base:bookworm
BUILD_DIR=${BUILD_DIR:-build}
OSSMOUNT=$(readlink -f "$BUILD_DIR/daemon/ossmount")
TESTSERVER=$BUILD_DIR/tests/server/ossmount-testserver
WORK=${WORK:-/tmp/ossmount-systemd-test}
CTR=ossmount-systemd-test
UNIT=ossmount@dataset.service
# runc and explicit limits: see scripts/build-image.sh.
PODMAN=(podman --runtime runc)
ULIMITS=(--ulimit nofile=20000:20000 --ulimit nproc=4096:4096)
KEY_ID=systemd-test-key
KEY_SECRET=systemd-test-secret-not-a-real-one

say() { echo "test-systemd: $*"; }
fail() { echo "test-systemd: FAIL: $*" >&2; exit 1; }
in_ctr() { "${PODMAN[@]}" exec "$CTR" "$@"; }

if [ ! -x "$OSSMOUNT" ] || [ ! -x "$TESTSERVER" ]; then
  fail "build the tree first ($BUILD_DIR/daemon/ossmount, $TESTSERVER)"
fi

# ---- the image: systemd and the host binary's runtime libraries ---------------------------
if ! "${PODMAN[@]}" image exists "$BASE_IMAGE"; then scripts/build-image.sh --base-only; fi
# The Debian packages of the libraries the host's binary links (the host is Debian 12 too).
packages=$(ldd "$OSSMOUNT" | awk '/=> \//{print $3}' | while read -r lib; do
  dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null ||
    dpkg -S "${lib#/usr}" 2>/dev/null || fail "no package owns $lib"
done | cut -d: -f1 | sort -u | tr '\n' ' ')
wanted="systemd systemd-sysv fuse3 ca-certificates media-types $packages"
if [ "$("${PODMAN[@]}" image inspect --format '{{index .Labels "packages"}}' "$IMAGE" 2>/dev/null)" \
  != "$wanted" ]; then
  say "building $IMAGE"
  mkdir -p "$WORK/empty-context"
  "${PODMAN[@]}" build --network=host "${ULIMITS[@]}" -t "$IMAGE" -f - "$WORK/empty-context" \
    <<CONTAINERFILE
FROM $BASE_IMAGE
RUN apt-get update \\
 && apt-get install -y --no-install-recommends $wanted \\
 && rm -rf /var/lib/apt/lists/*
LABEL packages="$wanted"
CMD ["/sbin/init"]
CONTAINERFILE
fi

# ---- host side: object server, dataset, shared directory --------------------------------
D=$WORK/shared
server_pid=""
epoch_pid=""
ok=0
cleanup() {
  set +e
  [ -n "$epoch_pid" ] && kill "$epoch_pid" 2>/dev/null
  "${PODMAN[@]}" exec "$CTR" systemctl stop "$UNIT" >/dev/null 2>&1
  "${PODMAN[@]}" rm -f -t 5 "$CTR" >/dev/null 2>&1
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  if grep -q " $D/dataset " /proc/self/mountinfo; then umount -l "$D/dataset"; fi
  while grep -q " $D " /proc/self/mountinfo; do umount -l "$D" || break; done
  if [ "$ok" -eq 1 ] && [ "${KEEP:-0}" != 1 ]; then
    rm -rf "${WORK:?}/shared" "${WORK:?}/etc" "${WORK:?}/epoch.json"
  else
    echo "test-systemd: logs kept in $WORK" >&2
  fi
}
trap cleanup EXIT
"${PODMAN[@]}" rm -f -t 1 "$CTR" >/dev/null 2>&1 || true
if [ -d "$D" ]; then
  grep -q " $D/dataset " /proc/self/mountinfo && umount -l "$D/dataset"
  while grep -q " $D " /proc/self/mountinfo; do umount -l "$D"; done
fi
mkdir -p "$WORK" "$D" "$WORK/etc"

DATA=$WORK/data
if [ ! -f "$DATA/images/MANIFEST.tsv" ]; then
  say "generating the dataset (16 classes x 150 JPEGs)"
  /usr/bin/python3 scripts/gen_dataset.py imagefolder "$DATA/images" --classes 16 --per-class 150 \
    >/dev/null
fi
"$TESTSERVER" --root "$DATA" --bucket images --host 127.0.0.1 --port 0 --region cn-test \
  --access-key-id "$KEY_ID" --access-key-secret "$KEY_SECRET" --ttfb-ms 35 \
  >"$WORK/server.out" 2>"$WORK/server.log" &
server_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$WORK/server.out" 2>/dev/null && break; sleep 0.1; done
ENDPOINT="http://$(sed -n 's/.*listening on //p' "$WORK/server.out" | head -1)"
[ "$ENDPOINT" != "http://" ] || fail "the object server did not start ($WORK/server.log)"

mount --bind "$D" "$D"
mount --make-rshared "$D"
mkdir -p "$D/dataset"

# The unit as installed, and what it reads: /etc/ossmount/dataset.json and dataset.env.
sed "s#@OSSMOUNT_INSTALL_FULL_BINDIR@#/usr/local/bin#" systemd/ossmount@.service.in \
  >"$WORK/ossmount@.service"
cat >"$WORK/etc/dataset.json" <<JSON
{
  "source": "images",
  "mountpoint": "/mnt/ossmount/dataset",
  "endpoint": "$ENDPOINT",
  "region": "cn-test",
  "path_style": true,
  "metadata_ttl": "indefinite",
  "allow_other": true
}
JSON
printf 'OSS_ACCESS_KEY_ID=%s\nOSS_ACCESS_KEY_SECRET=%s\n' "$KEY_ID" "$KEY_SECRET" \
  >"$WORK/etc/dataset.env"
chmod 600 "$WORK/etc/dataset.env"

"${PODMAN[@]}" run -d --name "$CTR" --systemd=always --network host --device /dev/fuse \
  --cap-add SYS_ADMIN "${ULIMITS[@]}" \
  -v "$D:/mnt/ossmount:rshared" \
  -v "$OSSMOUNT:/usr/local/bin/ossmount:ro" \
  -v "$WORK/ossmount@.service:/etc/systemd/system/ossmount@.service:ro" \
  -v "$WORK/etc:/etc/ossmount:ro" \
  "$IMAGE" >/dev/null
for _ in $(seq 100); do
  state=$(in_ctr systemctl is-system-running 2>/dev/null || true)
  case "$state" in running|degraded) break ;; esac
  sleep 0.2
done
say "systemd $(in_ctr systemctl --version | head -1 | awk '{print $2}') is $state in $CTR"

journal() { in_ctr journalctl -u "$UNIT" --no-pager -o cat 2>/dev/null; }
in_ctr systemctl start "$UNIT" || { journal | tail -20; fail "systemctl start $UNIT failed"; }
[ -d "$D/dataset/train" ] || fail "the mount did not reach the host ($D/dataset)"
say "$UNIT is active; the host sees $D/dataset"

# Waits until the unit is active again after a restart (the start is Type=notify: active means
# the daemon serves).
wait_active() {
  for _ in $(seq 150); do
    [ "$(in_ctr systemctl is-active "$UNIT" 2>/dev/null)" = active ] && return 0
    sleep 0.1
  done
  journal | tail -20
  fail "$UNIT is not active again after 15 s"
}

# ---- one epoch, with two restarts and one kill of the whole unit in it -------------------
/usr/bin/python3 tests/mount/digest_epoch.py "$D/dataset/train" "$WORK/epoch.json" \
  >"$WORK/epoch.log" 2>&1 &
epoch_pid=$!
for _ in $(seq 300); do grep -q scanned "$WORK/epoch.log" && break; sleep 0.1; done
grep -q scanned "$WORK/epoch.log" || fail "ImageFolder did not list the tree ($WORK/epoch.log)"
events=("systemctl restart $UNIT" "systemctl kill -s KILL $UNIT" "systemctl restart $UNIT")
for event in "${events[@]}"; do
  sleep 1.5
  kill -0 "$epoch_pid" 2>/dev/null || fail "the epoch ended before '$event'"
  t0=$(date +%s%N)
  # shellcheck disable=SC2086  # the event is a command line
  in_ctr $event
  wait_active
  say "$event: active again after $((($(date +%s%N) - t0) / 1000000)) ms, the epoch goes on"
done
kill -0 "$epoch_pid" 2>/dev/null || fail "the epoch ended before the last event was over"
rc=0
wait "$epoch_pid" || rc=$?
epoch_pid=""
[ "$rc" -eq 0 ] || { tail -20 "$WORK/epoch.log"; fail "the epoch failed (exit $rc)"; }
/usr/bin/python3 - "$WORK/epoch.json" "$DATA/images/MANIFEST.tsv" <<'PY' ||
import json, sys
seen = json.load(open(sys.argv[1]))["files"]
want = {}
for line in open(sys.argv[2]):
    rel, size, digest = line.rstrip("\n").split("\t")
    if rel.startswith("train/"):
        want[rel[len("train/"):]] = [int(size), digest]
bad = [rel for rel in want if seen.get(rel) != want[rel]]
assert len(seen) == len(want) and not bad, "%d seen, %d wanted, %d differ" % (
    len(seen), len(want), len(bad))
print("%d files, each byte-identical to the source" % len(seen))
PY
  fail "the epoch's bytes differ from the source"
say "the epoch read every file with no error: $(/usr/bin/python3 -c \
  'import json,sys; print(len(json.load(open(sys.argv[1]))["files"]))' "$WORK/epoch.json") files"

# Each of the three starts resumed the mount systemd kept, and the daemon counts them.
journal >"$WORK/journal.log"
resumed=$(grep -c "systemd kept the mount of /mnt/ossmount/dataset" "$WORK/journal.log" || true)
[ "$resumed" -eq 3 ] || fail "$resumed start(s) resumed the kept mount, not 3 ($WORK/journal.log)"
grep -q "systemd restarts this unit; the mount stays" "$WORK/journal.log" ||
  fail "the supervisor did not see the restarts as restarts ($WORK/journal.log)"
stats=$(in_ctr ossmount stats /mnt/ossmount/dataset)
echo "$stats" | grep -q "restarted 3 time(s)" || fail "ossmount stats does not count 3 restarts: $stats"
say "the journal shows 3 starts that resumed the kept mount; $(echo "$stats" | grep -m1 restarted)"
grep "the mount is served again" "$WORK/journal.log" | sed 's/^/    /'

# ---- a stop unmounts -------------------------------------------------------------------
in_ctr systemctl stop "$UNIT"
! grep -q " $D/dataset " /proc/self/mountinfo || fail "systemctl stop left a mount on $D/dataset"
say "systemctl stop unmounted $D/dataset"
ok=1
say "PASS"
