#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang, ASan+UBSan) in build-fuzz and runs each for
# a bounded time from its seed corpus (tests/fuzz/corpus/<target>/). Fails on any crash, leak,
# sanitizer report, timeout or broken invariant; the failing input is kept in
# fuzz-out/<target>/ (crash-*, leak-*, timeout-*) and the command to reproduce it is printed.
#   scripts/fuzz.sh                         every target, 60 s each
#   scripts/fuzz.sh --seconds 20            every target, 20 s each (what CI runs)
#   scripts/fuzz.sh fuzz_list_xml           one target
# Environment: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_JOBS (build parallelism, nproc),
# FUZZ_PARALLEL (targets run at once, nproc).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --seconds=*) seconds="${1#--seconds=}"; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$1'" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if [ "${#targets[@]}" -eq 0 ]; then
  for dir in tests/fuzz/corpus/*/; do targets+=("$(basename "$dir")"); done
fi

BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
source scripts/cmake_env.sh
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# -O1: the usual fuzzing trade-off (fast enough, still debuggable). Tests are not needed here.
# Unity builds, as in scripts/sanitize.sh: a shorter build, the same code under the fuzzer.
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 \
  -DCMAKE_CXX_COMPILER=clang++ -DOSSMOUNT_FUZZ=ON -DOSSMOUNT_BUILD_TESTS=OFF \
  -DCMAKE_UNITY_BUILD=ON "${launcher[@]}" >/dev/null
cmake --build "$BUILD" -j"${FUZZ_JOBS:-$(nproc)}" --target "${targets[@]}"

# Each target is one process on one core; FUZZ_PARALLEL of them run at once (default nproc),
# so a 2-core CI machine fuzzes every target for the full time in half the wall time.
run_target() {
  local t=$1 out="fuzz-out/$1"
  mkdir -p "$out/corpus"
  # New inputs go to fuzz-out (ignored by git); the seed corpus in the repo is only read.
  "$BUILD/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus" "tests/fuzz/corpus/$t" \
    >"$out/log.txt" 2>&1
}
parallel=${FUZZ_PARALLEL:-$(nproc)}
declare -A pid_of
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do sleep 0.2; done
  echo "fuzz: $t for ${seconds}s"
  run_target "$t" &
  pid_of[$t]=$!
done
failed=()
for t in "${targets[@]}"; do
  out="fuzz-out/$t"
  if ! wait "${pid_of[$t]}"; then
    failed+=("$t")
    tail -n 60 "$out/log.txt"
    echo "fuzz: $t FAILED; reproduce with: $BUILD/tests/fuzz/$t $(ls "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-* 2>/dev/null | head -1)"
  else
    grep -E "^stat::number_of_executed_units" "$out/log.txt" | sed "s/^/fuzz: $t /" || true
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}"
  exit 1
fi
echo "fuzz: ok (${#targets[@]} targets, ${seconds}s each)"
