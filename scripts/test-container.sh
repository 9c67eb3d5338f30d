#!/usr/bin/env bash
# End-to-end test of the container image as a Kubernetes node would run it, with podman.
# Not part of the default CI run (building the images takes minutes); run it by hand, as root:
#
#   scripts/test-container.sh
#
# It builds localhost/ossmount:latest if missing (scripts/build-image.sh) and a test-only
# trainer image with Debian's torchvision; serves a generated ImageFolder dataset
# (10 classes x 50 JPEGs) with the bundled object server on 127.0.0.1; makes a host directory
# D a shared mount point; runs the mount container as the DaemonSet would (/dev/fuse, the
# least capability set that works, D at /mnt/ossmount with rshared propagation, credentials
# from a mounted secret file, the disk cache on a host path) and a long-running trainer
# container that gets D at /data read-only with rslave propagation. Then, through the same
# trainer container, torchvision ImageFolder reads every image and compares it with the
# source: after the first start, after a clean restart of the mount container (podman stop,
# as a pod deletion does), after a crash (SIGKILL, which leaves a dead FUSE mount that the
# next container's entrypoint detaches), and while a second mount container takes the mount
# over from the first (the DaemonSet's rolling update, both sharing the node's /run/ossmount):
# that one must cost the reader no error. A prober in the trainer records what a reader sees
# during each. Everything is removed at the end, also on failure.
# Environment: BUILD_DIR (where the host build has tests/server/ossmount-testserver, default
# build), WORK (default /tmp/ossmount-container-test; kept on failure), KEEP=1 keeps it always.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then echo "test-container.sh: run as root" >&2; exit 1; fi

IMAGE=localhost/ossmount:latest
BASE_IMAGE=localhost/ossmount-base:bookworm
TRAINER_IMAGE=localhost/ossmount-trainer-test:latest
BUILD_DIR=${BUILD_DIR:-build}
TESTSERVER=$BUILD_DIR/tests/server/ossmount-testserver
WORK=${WORK:-/tmp/ossmount-container-test}
MOUNT_CTR=ossmount-test-mount
NEW_MOUNT_CTR=ossmount-test-mount-new  # the pod a rolling update starts beside the old one
TRAINER_CTR=ossmount-test-trainer
WRONG_CTR=ossmount-test-wrong-bind  # given the mount point itself, not its parent
# runc and explicit limits: see scripts/build-image.sh.
PODMAN=(podman --runtime runc)
ULIMITS=(--ulimit nofile=20000:20000 --ulimit nproc=4096:4096)
KEY_ID=container-test-key
KEY_SECRET=container-test-secret-not-a-real-one

say() { echo "test-container: $*"; }
fail() { echo "test-container: FAIL: $*" >&2; exit 1; }

# ---- images ----------------------------------------------------------------------------
if ! "${PODMAN[@]}" image exists "$IMAGE" || ! "${PODMAN[@]}" image exists "$BASE_IMAGE"; then
  scripts/build-image.sh
fi
if ! "${PODMAN[@]}" image exists "$TRAINER_IMAGE"; then
  say "building $TRAINER_IMAGE (torchvision from Debian)"
  mkdir -p "$WORK/empty-context"  # the Containerfile copies nothing
  "${PODMAN[@]}" build --network=host "${ULIMITS[@]}" -t "$TRAINER_IMAGE" -f - \
    "$WORK/empty-context" <<CONTAINERFILE
FROM $BASE_IMAGE
RUN apt-get update \\
 && apt-get install -y --no-install-recommends python3-torchvision python3-pil \\
 && rm -rf /var/lib/apt/lists/*
CONTAINERFILE
fi

# ---- host side: object server, dataset, shared directory --------------------------------
if [ ! -x "$TESTSERVER" ]; then
  say "building the object server ($TESTSERVER)"
  # shellcheck source=scripts/cmake_env.sh
  source scripts/cmake_env.sh
  if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  cmake --build "$BUILD_DIR" --target ossmount-testserver
fi

D=$WORK/shared            # the node's host path (the DaemonSet's hostPath)
MP_IN_MOUNT=/mnt/ossmount/dataset
server_pid=""
ok=0
cleanup() {
  set +e
  for c in "$MOUNT_CTR" "$NEW_MOUNT_CTR" "$TRAINER_CTR" "$WRONG_CTR"; do
    "${PODMAN[@]}" rm -f -t 5 "$c" >/dev/null 2>&1
  done
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  # A dead FUSE mount, then the bind mount of D itself.
  if grep -q " $D/dataset " /proc/self/mountinfo; then umount -l "$D/dataset"; fi
  while grep -q " $D " /proc/self/mountinfo; do umount -l "$D" || break; done
  if [ "$ok" -eq 1 ] && [ "${KEEP:-0}" != 1 ]; then
    rm -rf "$WORK"
  else
    echo "test-container: logs kept in $WORK" >&2
  fi
}
trap cleanup EXIT
# Leftovers of an interrupted run.
for c in "$MOUNT_CTR" "$NEW_MOUNT_CTR" "$TRAINER_CTR" "$WRONG_CTR"; do
  "${PODMAN[@]}" rm -f -t 1 "$c" >/dev/null 2>&1 || true
done
if [ -d "$D" ]; then
  grep -q " $D/dataset " /proc/self/mountinfo && umount -l "$D/dataset"
  while grep -q " $D " /proc/self/mountinfo; do umount -l "$D"; done
fi
mkdir -p "$WORK" "$D" "$WORK/secret" "$WORK/config" "$WORK/cache" "$WORK/scripts" "$WORK/run"

DATA=$WORK/data
if [ ! -f "$DATA/sample/MANIFEST.tsv" ]; then
  say "generating the dataset (10 classes x 50 JPEGs)"
  /usr/bin/python3 scripts/gen_dataset.py imagefolder "$DATA/sample" --classes 10 --per-class 50 \
    >/dev/null
fi
"$TESTSERVER" --root "$DATA" --bucket sample --host 127.0.0.1 --port 0 --region cn-test \
  --access-key-id "$KEY_ID" --access-key-secret "$KEY_SECRET" \
  >"$WORK/server.out" 2>"$WORK/server.log" &
server_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$WORK/server.out" 2>/dev/null && break; sleep 0.1; done
ENDPOINT="http://$(sed -n 's/.*listening on //p' "$WORK/server.out" | head -1)"
[ "$ENDPOINT" != "http://" ] || fail "the object server did not start ($WORK/server.log)"
say "object server at $ENDPOINT"

# The node's directory: a shared mount point, so that a mount made under it inside the
# mount container propagates back to the host and from there to the trainer.
mount --bind "$D" "$D"
mount --make-rshared "$D"

# What Kubernetes would mount: the Secret (a file private to root: the daemon refuses a
# credentials file that group or others can read; defaultMode 0400 in a manifest) and the
# ConfigMap with config.json at /etc/ossmount (read by the daemon when it exists).
printf '[default]\naccess_key_id = %s\naccess_key_secret = %s\n' "$KEY_ID" "$KEY_SECRET" \
  >"$WORK/secret/credentials"
chmod 600 "$WORK/secret/credentials"
cat >"$WORK/config/config.json" <<JSON
{
  "endpoint": "$ENDPOINT",
  "region": "cn-test",
  "path_style": true,
  "metadata_ttl": "indefinite",
  "allow_other": true
}
JSON

# ---- the mount container -------------------------------------------------------------
mount_args=(
  --network host --device /dev/fuse
  -v "$D:/mnt/ossmount:rshared"
  -v "$WORK/secret:/etc/ossmount-secret:ro"
  -v "$WORK/config:/etc/ossmount:ro"
  -v "$WORK/cache:/var/cache/ossmount"
  -v "$WORK/run:/run/ossmount"
)
daemon_args=(sample "$MP_IN_MOUNT" --credentials-file /etc/ossmount-secret/credentials
  --cache /var/cache/ossmount)

# Waits until ossmount-ready answers 0 in the mount container (default $MOUNT_CTR; 20 s at
# most), or the container exits.
wait_ready() {
  local ctr=${1:-$MOUNT_CTR} reason="" deadline=$((SECONDS + 20))
  while [ "$SECONDS" -lt "$deadline" ]; do
    if reason=$("${PODMAN[@]}" exec "$ctr" ossmount-ready "$MP_IN_MOUNT" 2>&1); then
      say "readiness: $reason"
      return 0
    fi
    if [ "$("${PODMAN[@]}" inspect --format '{{.State.Running}}' "$ctr" 2>/dev/null)" != true ]; then
      return 1
    fi
    sleep 0.2
  done
  say "not ready after 20 s: $reason"
  return 1
}

run_mount() {  # run_mount LOGNAME PODMAN-FLAGS... -- EXTRA-DAEMON-ARGS...
  local log=$1 flags=()
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  "${PODMAN[@]}" rm -f -t 1 "$MOUNT_CTR" >/dev/null 2>&1 || true
  "${PODMAN[@]}" run -d --name "$MOUNT_CTR" "${ULIMITS[@]}" "${flags[@]}" "${mount_args[@]}" \
    "$IMAGE" "${daemon_args[@]}" "$@" >/dev/null
  if wait_ready; then return 0; fi
  "${PODMAN[@]}" logs "$MOUNT_CTR" >"$WORK/$log" 2>&1 || true
  return 1
}

# The least privilege that works: each candidate is "podman flags|extra daemon options".
# Kubernetes itself needs privileged: true for mountPropagation: Bidirectional; this finds
# what the mount alone needs. seccomp matters because podman's default profile refuses
# io_uring_setup, which the daemon uses for FUSE over io_uring where the kernel offers it
# (--fuse-io-uring auto, the default).
candidates=(
  "--cap-drop=ALL --cap-add=SYS_ADMIN|"
  "--cap-drop=ALL --cap-add=SYS_ADMIN|--fuse-io-uring off"
  "--cap-drop=ALL --cap-add=SYS_ADMIN --security-opt=seccomp=unconfined|"
  "--cap-add=SYS_ADMIN --security-opt=seccomp=unconfined|"
  "--privileged|"
)
security=""
i=0
say "trying each privilege set (a failure waits 20 s for readiness):"
for c in "${candidates[@]}"; do
  i=$((i + 1))
  read -r -a flags <<<"${c%%|*}"
  read -r -a extra <<<"${c#*|}"
  if run_mount "mount-attempt-$i.log" "${flags[@]}" -- "${extra[@]}" >/dev/null; then
    "${PODMAN[@]}" stop -t 30 "$MOUNT_CTR" >/dev/null
    say "  works:         ${c%%|*}${extra[*]:+ (daemon: ${extra[*]})}"
    # The rest of the test runs the daemon as it is, with the least privilege that works.
    if [ -z "$security" ] && [ "${#extra[@]}" -eq 0 ]; then security=${c%%|*}; fi
  else
    say "  does not work: ${c%%|*}${extra[*]:+ (daemon: ${extra[*]})}: $(tail -1 "$WORK/mount-attempt-$i.log")"
  fi
  "${PODMAN[@]}" rm -f -t 1 "$MOUNT_CTR" >/dev/null 2>&1 || true
  if grep -q " $D/dataset " /proc/self/mountinfo; then umount -l "$D/dataset"; fi
done
[ -n "$security" ] || fail "no privilege set let the mount container mount"
say "least privilege with the daemon's defaults: $security"
read -r -a security_args <<<"$security"
run_mount mount-1.log "${security_args[@]}" -- || fail "the mount container is not ready"

# ---- the trainer container -----------------------------------------------------------
cat >"$WORK/scripts/check_imagefolder.py" <<'PY'
"""ImageFolder over the mount: every sample decodes, and its bytes equal the source's."""
import hashlib, os, sys, time
import torchvision

root, source = sys.argv[1], sys.argv[2]
start = time.time()
ds = torchvision.datasets.ImageFolder(root)
want = sorted(os.path.relpath(os.path.join(d, f), source)
              for d, _, fs in os.walk(source) for f in fs)
got = sorted(os.path.relpath(p, root) for p, _ in ds.samples)
assert got == want, "file lists differ: %d in ImageFolder, %d in the source" % (len(got), len(want))
bad = 0
for i, (path, target) in enumerate(ds.samples):
    image, label = ds[i]                      # the default PIL loader decodes it
    assert label == target and image.size[0] > 0
    with open(path, "rb") as f:
        a = hashlib.sha256(f.read()).digest()
    with open(os.path.join(source, os.path.relpath(path, root)), "rb") as f:
        b = hashlib.sha256(f.read()).digest()
    bad += a != b
assert bad == 0, "%d file(s) differ from the source" % bad
print("imagefolder: %d classes, %d images, every one decoded and byte-identical to the source "
      "(%.1f s)" % (len(ds.classes), len(ds.samples), time.time() - start))
PY
cat >"$WORK/scripts/probe.py" <<'PY'
"""Records what a reader sees at a path (listdir + one read) every 50 ms, as state changes."""
import os, sys, time
directory, one_file, stop, out = sys.argv[1:5]
last = None
with open(out, "w", buffering=1) as log:
    while not os.path.exists(stop):
        try:
            n = len(os.listdir(directory))
            with open(one_file, "rb") as f:
                f.read()
            state = "ok (listdir: %d entries, read ok)" % n
        except OSError as e:
            state = "%s (%s)" % (type(e).__name__, os.strerror(e.errno) if e.errno else e)
        if state != last:
            log.write("%.3f %s\n" % (time.time(), state))
            last = state
        time.sleep(0.05)
PY
mkdir -p "$WORK/probe"
"${PODMAN[@]}" run -d --name "$TRAINER_CTR" "${ULIMITS[@]}" --network none \
  -v "$D:/data:ro,rslave" -v "$DATA/sample:/source:ro" -v "$WORK/scripts:/scripts:ro" \
  -v "$WORK/probe:/probe" \
  "$TRAINER_IMAGE" sleep infinity >/dev/null

read_all() {  # read_all LABEL
  local out
  out=$("${PODMAN[@]}" exec "$TRAINER_CTR" python3 /scripts/check_imagefolder.py \
    /data/dataset/train /source/train 2>&1) || fail "$1: $out"
  say "$1: $out"
}
read_all "read 1 (first mount)"
# The rule's counterexample: a container given the mount point itself keeps the FUSE mount it
# started with, which is dead once the mount container restarts.
"${PODMAN[@]}" run -d --name "$WRONG_CTR" "${ULIMITS[@]}" --network none \
  -v "$D/dataset:/data:ro,rslave" "$TRAINER_IMAGE" sleep infinity >/dev/null

# sed, not head: head would stop reading early and sort could die of SIGPIPE (pipefail).
one_file=$(cd "$DATA/sample" && find train -type f -name '*.JPEG' | LC_ALL=C sort | sed -n 1p)
probe_start() {  # probe_start NAME
  rm -f "$WORK/probe/stop"
  "${PODMAN[@]}" exec -d "$TRAINER_CTR" python3 /scripts/probe.py /data/dataset/train \
    "/data/dataset/$one_file" /probe/stop "/probe/$1.log" >/dev/null
  sleep 0.5
}
probe_stop() {  # probe_stop NAME: prints the transitions with times relative to the first
  touch "$WORK/probe/stop"
  sleep 0.3
  awk 'NR==1{t0=$1} {$1=sprintf("+%.2fs", $1-t0); print "    " $0}' "$WORK/probe/$1.log"
}
no_mount_left() {
  ! grep -q " $D/dataset " /proc/self/mountinfo
}

# ---- clean restart: podman stop (SIGTERM), as a pod deletion -----------------------
probe_start restart
t0=$(date +%s%N)
"${PODMAN[@]}" stop -t 30 "$MOUNT_CTR" >/dev/null
t1=$(date +%s%N)
code=$("${PODMAN[@]}" inspect --format '{{.State.ExitCode}}' "$MOUNT_CTR")
"${PODMAN[@]}" logs "$MOUNT_CTR" >"$WORK/mount-1.log" 2>&1
[ "$code" = 0 ] || fail "the mount container exited $code after SIGTERM ($WORK/mount-1.log)"
no_mount_left || fail "podman stop left a mount on $D/dataset"
say "podman stop: exit code 0 in $(((t1 - t0) / 1000000)) ms, nothing left mounted on $D/dataset"
sleep 1
run_mount mount-2.log "${security_args[@]}" -- || fail "the restarted mount container is not ready"
sleep 0.5
say "what the trainer saw during the clean restart (stop, 1 s, start):"
probe_stop restart
read_all "read 2 (same trainer container, after the restart)"
wrong=$("${PODMAN[@]}" exec "$WRONG_CTR" ls /data/train 2>&1 >/dev/null || true)
say "a container given the mount point itself (not its parent) after the restart: ${wrong:-reads fine}"
[ -n "$wrong" ] || fail "the container given the mount point itself still reads: the rule is wrong?"
"${PODMAN[@]}" rm -f -t 0 "$WRONG_CTR" >/dev/null 2>&1

# ---- crash: SIGKILL leaves a dead FUSE mount; the next container detaches it --------
probe_start crash
"${PODMAN[@]}" kill -s KILL "$MOUNT_CTR" >/dev/null
"${PODMAN[@]}" wait "$MOUNT_CTR" >/dev/null 2>&1 || true
"${PODMAN[@]}" logs "$MOUNT_CTR" >"$WORK/mount-2.log" 2>&1
sleep 1
host_view=$(LC_ALL=C stat -f "$D/dataset" 2>&1 >/dev/null || true)
say "after SIGKILL the host sees $D/dataset: ${host_view:-answering?}"
run_mount mount-3.log "${security_args[@]}" -- || fail "the mount container after a crash is not ready"
"${PODMAN[@]}" logs "$MOUNT_CTR" 2>&1 | grep -q "ossmount-entrypoint: .*dead" ||
  fail "the entrypoint did not report the dead mount"
say "entrypoint: $("${PODMAN[@]}" logs "$MOUNT_CTR" 2>&1 | grep -m1 "ossmount-entrypoint:")"
sleep 0.5
say "what the trainer saw during the crash and restart:"
probe_stop crash
read_all "read 3 (same trainer container, after the crash)"

# ---- rolling update: a new mount container takes the mount over ---------------------
# As the DaemonSet's update (maxSurge 1): the new pod starts beside the old one, its entrypoint
# finds the live mount and takes it over through the shared /run/ossmount, and the old pod is
# deleted once the new one is ready. A reader reads the whole dataset meanwhile.
probe_start takeover
# Whole passes over the dataset, one after the other, from before the new container starts
# until the old one is stopped; each must read every image right.
rm -f "$WORK/probe/reads-done"
"${PODMAN[@]}" exec "$TRAINER_CTR" sh -c 'n=0; while [ ! -e /probe/reads-done ]; do
    python3 /scripts/check_imagefolder.py /data/dataset/train /source/train || exit 1
    n=$((n + 1)); done; echo "$n passes over the dataset"' \
  >"$WORK/read-during-takeover.log" 2>&1 &
reader_pid=$!
# The first pass done, the next ones run back to back through the take-over.
for _ in $(seq 300); do grep -q "^imagefolder:" "$WORK/read-during-takeover.log" && break; sleep 0.1; done
"${PODMAN[@]}" run -d --name "$NEW_MOUNT_CTR" "${ULIMITS[@]}" "${security_args[@]}" \
  "${mount_args[@]}" "$IMAGE" "${daemon_args[@]}" >/dev/null
if ! wait_ready "$NEW_MOUNT_CTR"; then
  "${PODMAN[@]}" logs "$NEW_MOUNT_CTR" >"$WORK/mount-new.log" 2>&1
  fail "the new mount container did not take over ($WORK/mount-new.log)"
fi
"${PODMAN[@]}" logs "$MOUNT_CTR" >"$WORK/mount-3.log" 2>&1
grep -q "ossmount-entrypoint: handed .* over" "$WORK/mount-3.log" ||
  fail "the old mount container did not hand the mount over ($WORK/mount-3.log)"
[ "$("${PODMAN[@]}" inspect --format '{{.State.Running}}' "$MOUNT_CTR")" = true ] ||
  fail "the old mount container ended after the hand-over (its restart would take the mount back)"
say "the new mount container serves; the old one waits to be deleted"
"${PODMAN[@]}" stop -t 30 "$MOUNT_CTR" >/dev/null
code=$("${PODMAN[@]}" inspect --format '{{.State.ExitCode}}' "$MOUNT_CTR")
[ "$code" = 0 ] || fail "the old mount container exited $code after SIGTERM"
grep -q " $D/dataset " /proc/self/mountinfo || fail "stopping the old container unmounted"
touch "$WORK/probe/reads-done"
wait "$reader_pid" || fail "a read during the take-over failed: $(tail -3 "$WORK/read-during-takeover.log")"
passes=$(grep -c "^imagefolder:" "$WORK/read-during-takeover.log" || true)
[ "$passes" -ge 2 ] || fail "only $passes pass(es) over the dataset during the take-over"
say "read 4 (during the take-over and the old container's stop): $passes passes over the dataset, each image byte-identical to the source"

sleep 0.3
say "what the trainer saw during the take-over and the old container's stop:"
probe_stop takeover
if grep -v " ok (" "$WORK/probe/takeover.log" >/dev/null; then
  fail "the prober saw an error during the take-over"
fi
"${PODMAN[@]}" exec "$NEW_MOUNT_CTR" ossmount stats "$MP_IN_MOUNT" --once >"$WORK/stats-new.txt"
grep -q "took this mount over" "$WORK/stats-new.txt" ||
  fail "ossmount stats in the new container does not report the take-over ($WORK/stats-new.txt)"
say "$(grep -m1 "took this mount over" "$WORK/stats-new.txt")"
MOUNT_CTR=$NEW_MOUNT_CTR

# ---- final stop ---------------------------------------------------------------------
"${PODMAN[@]}" stop -t 30 "$MOUNT_CTR" >/dev/null
"${PODMAN[@]}" logs "$MOUNT_CTR" >"$WORK/mount-4.log" 2>&1
code=$("${PODMAN[@]}" inspect --format '{{.State.ExitCode}}' "$MOUNT_CTR")
[ "$code" = 0 ] || fail "the mount container exited $code after SIGTERM ($WORK/mount-4.log)"
no_mount_left || fail "podman stop left a mount on $D/dataset"
say "final podman stop: exit code 0, nothing left mounted"
ok=1
say "PASS (mount container privileges: $security)"
