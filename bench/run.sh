#!/usr/bin/env bash
# Benchmarks ossmount against s3fs-fuse, rclone mount, a local-disk copy and curl, side by
# side against the project's object server. See docs/BENCHMARKS.md.
#
#   bench/run.sh [--quick|--full] [--only WORKLOAD...] [--build DIR]
#       --quick (default): a few minutes; 35 ms TTFB for the peers, subsets for the slowest.
#       --full: every peer at 35, 12 and 0 ms, 4 and 16 workers.
#       WORKLOAD: capacity imagefolder remount threaded seqread metadata memory
#       --build DIR: where daemon/ossmount and tests/server/ossmount-testserver are
#         (default build/, a Release build; built here when missing).
# Results: bench/results/<timestamp>.json and .md (the Markdown report).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in s3fs rclone wrk /usr/bin/time; do
  command -v "$tool" >/dev/null || { scripts/install-deps.sh --bench; break; }
done
source scripts/cmake_env.sh
if [ ! -x build/daemon/ossmount ] || [ ! -x build/tests/server/ossmount-testserver ] ||
   [ ! -x build/tools/ossmount-client ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build --target ossmount ossmount-testserver ossmount-client -j2
fi
exec /usr/bin/python3 bench/harness.py "$@"
