#!/usr/bin/env bash
# The main job: build ossmount, mount a bucket and read it with torchvision ImageFolder.
#
#   scripts/demo.sh
#       Embedded default: generates a sample ImageNet-like dataset (20 classes x 50 real
#       JPEGs), serves it with the bundled object server (OSS protocol, signature V4,
#       35 ms time-to-first-byte like an OSS origin), mounts it on /tmp/ossmount-demo/mnt
#       and runs two ImageFolder epochs over the mount; then saves a checkpoint to the mount
#       (--allow-writes) and loads it back equal; then unmounts.
#   scripts/demo.sh BUCKET[:/PREFIX] [ossmount options...]
#       The same over your own bucket, e.g.
#       OSS_ACCESS_KEY_ID=... OSS_ACCESS_KEY_SECRET=... scripts/demo.sh my-bucket:/imagenet \
#           --endpoint oss-cn-beijing-internal.aliyuncs.com --region cn-beijing
#       ImageFolder reads <mount>/train (set DEMO_SUBDIR to change it).
# Environment: DEMO_DIR (work directory, default /tmp/ossmount-demo), BUILD_DIR (default
# build; an existing build directory keeps its configuration).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

scripts/install-deps.sh
source scripts/cmake_env.sh
BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$BUILD_DIR" -j"$(nproc)" --target ossmount ossmount-testserver ossmount-client

WORK=${DEMO_DIR:-/tmp/ossmount-demo}
MNT=$WORK/mnt
mkdir -p "$WORK" "$MNT"
server_pid=""
cleanup() {
  if mountpoint -q "$MNT"; then fusermount3 -u "$MNT" || fusermount3 -uz "$MNT"; fi
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
}
trap cleanup EXIT

if [ $# -eq 0 ]; then
  DATA=$WORK/data
  if [ ! -f "$DATA/sample/MANIFEST.tsv" ]; then
    echo "demo: generating the sample dataset (20 classes x 50 JPEGs)"
    rm -rf "$DATA/sample"
    /usr/bin/python3 scripts/gen_dataset.py imagefolder "$DATA/sample" --classes 20 --per-class 50
  fi
  export OSS_ACCESS_KEY_ID=demo-access-key OSS_ACCESS_KEY_SECRET=demo-access-secret
  "$BUILD_DIR"/tests/server/ossmount-testserver --root "$DATA" --bucket sample --port 0 \
    --region cn-demo --access-key-id "$OSS_ACCESS_KEY_ID" \
    --access-key-secret "$OSS_ACCESS_KEY_SECRET" --ttfb-ms 35 > "$WORK/server.out" 2>"$WORK/server.log" &
  server_pid=$!
  for _ in $(seq 100); do grep -q "listening on" "$WORK/server.out" 2>/dev/null && break; sleep 0.1; done
  ENDPOINT="http://$(sed -n 's/.*listening on //p' "$WORK/server.out" | head -1)"
  echo "demo: object server (OSS API, V4 signatures, 35 ms TTFB) at $ENDPOINT"
  echo "demo: the object client lists and fetches from it:"
  client=("$BUILD_DIR"/tools/ossmount-client --endpoint "$ENDPOINT" --bucket sample --region cn-demo
    --path-style)
  # Into files, not straight into `head`: under pipefail the client's SIGPIPE, when head
  # stops reading, would end the demo.
  "${client[@]}" ls train/ > "$WORK/ls.out"
  head -3 "$WORK/ls.out"
  "${client[@]}" ls -r train/ > "$WORK/ls-r.out"
  first=$(head -1 "$WORK/ls-r.out" | cut -f2)
  "${client[@]}" head "$first"
  set -- sample "--endpoint" "$ENDPOINT" "--region" "cn-demo" "--path-style" "--allow-writes" \
    "--upload-journal" "$WORK/journal"
  SAVE_CHECKPOINT=1
fi

SPEC=$1
shift
echo "demo: ossmount $SPEC $MNT --metadata-ttl indefinite $*"
"$BUILD_DIR"/daemon/ossmount "$SPEC" "$MNT" --metadata-ttl indefinite "$@"
echo "demo: mounted; $(find "$MNT/${DEMO_SUBDIR:-train}" -type f | wc -l) files under ${DEMO_SUBDIR:-train}/"
/usr/bin/python3 scripts/imagefolder_epoch.py "$MNT/${DEMO_SUBDIR:-train}" --workers 8 --epochs 2
echo "demo: decoding one epoch with PIL as a training pipeline would:"
/usr/bin/python3 scripts/imagefolder_epoch.py "$MNT/${DEMO_SUBDIR:-train}" --workers 4 --decode
if [ -n "${SAVE_CHECKPOINT:-}" ]; then
  # What the training job does after each validation: torch.save to the mount. The save
  # returns once the object is complete in the bucket; a new process loads it back.
  mkdir -p "$MNT/checkpoints"
  /usr/bin/python3 -c '
import sys, torch, torchvision
model = torchvision.models.resnet18(num_classes=20)
torch.save(model.state_dict(), sys.argv[1])
' "$MNT/checkpoints/resnet18.pt"
  /usr/bin/python3 -c '
import os, sys, torch, torchvision
state = torch.load(sys.argv[1])
model = torchvision.models.resnet18(num_classes=20)
model.load_state_dict(state)
print("demo: saved checkpoints/resnet18.pt (%d bytes) to the bucket and loaded it back into a "
      "resnet18" % os.path.getsize(sys.argv[1]))
' "$MNT/checkpoints/resnet18.pt"
  cmp -s "$MNT/checkpoints/resnet18.pt" "$DATA/sample/checkpoints/resnet18.pt" &&
    echo "demo: the object in the bucket is byte for byte what was saved"
fi
echo "demo: done; unmounting"
