#!/usr/bin/env bash
# Builds ossmount and runs every test: unit, integration (s3rver and the project's object
# server) and real FUSE mount tests. Ends with ctest's summary line.
#   scripts/test.sh                 everything
#   scripts/test.sh -L unit         only a label (unit, integration, mount); any ctest args
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
cd "$BUILD_DIR"
# --output-on-failure: a failing test prints what it saw. The last line is ctest's summary.
ctest --output-on-failure --timeout 900 "$@"
