# Shared by bench/hinted_epochs.sh, bench/finite_ttl_epochs.sh and bench/list_ahead_scan.sh
# (sourced, POSIX sh): the bundled object server at 35 ms TTFB over the benchmark dataset,
# and one ossmount mount at a time on it. Before sourcing, the caller sets `me` (its name,
# for messages), `src` (the source tree) and `build` (a build directory holding
# daemon/ossmount and the test server).
#
#   rig_start              checks the build, makes the dataset, starts the server (sets
#                          $work, $port; the EXIT trap unmounts and stops everything)
#   rig_mount BINARY ARG.. mounts bucket $rig_bucket (default img) on $work/mnt with BINARY
#                          and extra ARGs (sets $daemon_pid, and
#                          $serving_pid: its supervised child)
#   rig_unmount            unmounts and waits for the daemon

rig_start() {
  build=$(cd "$build" && pwd)
  for bin in daemon/ossmount tests/server/ossmount-testserver; do
    [ -x "$build/$bin" ] || { echo "$me: $build/$bin is not built" >&2; exit 2; }
  done
  data=$src/bench/data/root
  /usr/bin/python3 -c "import sys; sys.path.insert(0, '$src/bench')
from ossbench import datasets; datasets.ensure('$src', '$data', print)"
  work=$(mktemp -d "/tmp/ossmount-$me-XXXXXX")
  server_pid=""
  daemon_pid=""
  trap rig_cleanup EXIT INT TERM
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
  [ -n "$port" ] || { echo "$me: the object server did not start" >&2; exit 1; }
}

rig_cleanup() {
  if mountpoint -q "$work/mnt" 2>/dev/null; then umount "$work/mnt" || umount -l "$work/mnt"; fi
  [ -z "$daemon_pid" ] || kill "$daemon_pid" 2>/dev/null || true
  [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}

rig_mount() {
  rig_binary=$1
  shift
  OSS_ACCESS_KEY_ID=bench OSS_ACCESS_KEY_SECRET=bench "$rig_binary" "${rig_bucket:-img}" "$work/mnt" \
    --endpoint "http://127.0.0.1:$port" --path-style --region cn-bench -f "$@" \
    > "$work/daemon.log" 2>&1 &
  daemon_pid=$!
  for _ in $(seq 100); do mountpoint -q "$work/mnt" && break; sleep 0.1; done
  mountpoint -q "$work/mnt" || { echo "$me: mount failed:" >&2; cat "$work/daemon.log" >&2; exit 1; }
  # The process that serves (sets $serving_pid): a supervisor's one child, or the daemon.
  serving_pid=$daemon_pid
  for _ in $(seq 100); do
    child=$(cat "/proc/$daemon_pid/task/$daemon_pid/children" 2>/dev/null || true)
    case "$*" in *--no-supervise*) break ;; esac
    [ -n "$child" ] && { serving_pid=${child%% *}; break; }
    sleep 0.05
  done
}

rig_unmount() {
  umount "$work/mnt"
  wait "$daemon_pid" || true
  daemon_pid=""
}
