#!/usr/bin/env bash
# Builds the unit and integration tests with sanitizers and runs them (ctest labels unit and
# integration): ASan+UBSan in build-asan, TSan in build-tsan. Any report fails the run (UB is
# fatal: -fno-sanitize-recover=all; TSan halts on the first race). Only the test targets are
# built, at -O0 with line tables, to keep CI time down: the instrumented -O1 build took
# 1.7x as long (ASan 352 s against 210 s here) to save 10 s of test time, and -O0 hides
# no report (optimisation can only remove checked accesses).
#   scripts/sanitize.sh                 both
#   scripts/sanitize.sh asan            only ASan+UBSan (or: tsan)
# ASan+UBSan builds and runs every *_test binary. TSan, to keep CI within its time limit,
# builds only the binaries whose code runs on several threads (TSAN_TARGETS below: the fetch
# engine, the object client's concurrent completions, the filesystem, readahead, the disk
# cache, the FUSE server, the test server and the client against it); the single-threaded
# parsers and option code gain nothing from TSan. SANITIZE_FULL=1 builds and runs them all.
# The compiler is clang++ (SANITIZE_CXX to choose another): it builds these instrumented test
# binaries in about half the time g++ takes, which is most of CI's time. The daemon's libraries
# are unity builds here too (CMAKE_UNITY_BUILD; in Release they are compiled file by file, as
# users build them): with Ninja the ASan+UBSan build took 2 min 49 s instead of 3 min 17 s.
# Environment: SANITIZE_JOBS (build and ctest parallelism, default nproc), CTEST_ARGS (extra),
# SANITIZE_FULL, TSAN_TARGETS, SANITIZE_CXX.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
source scripts/cmake_env.sh

kinds=("$@")
if [ "${#kinds[@]}" -eq 0 ]; then kinds=(asan tsan); fi
jobs=${SANITIZE_JOBS:-$(nproc)}
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cxx=${SANITIZE_CXX:-clang++}
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "sanitize.sh: $cxx not found (scripts/install-deps.sh installs clang)" >&2
  exit 2
fi

export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tests/sanitize/tsan.supp"

for kind in "${kinds[@]}"; do
  case "$kind" in
    asan) flags="address,undefined"; dir=build-asan ;;
    tsan) flags="thread"; dir=build-tsan ;;
    *) echo "sanitize.sh: unknown kind '$kind' (asan or tsan)" >&2; exit 2 ;;
  esac
  start=$(date +%s)
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" \
    -DCMAKE_CXX_COMPILER="$(command -v "$cxx")" -DOSSMOUNT_SANITIZE="$flags" \
    -DCMAKE_UNITY_BUILD=ON "${launcher[@]}" >/dev/null
  # Every *_test binary (unit and integration); their dependencies (the test server) follow.
  # Tests of binaries not built are not registered, so ctest runs exactly what was built.
  # `help` lists them as "... name" (Makefiles) or "name: phony" (Ninja).
  targets=$(cmake --build "$dir" --target help |
    sed -n -e 's/^\.\.\. \([a-z0-9_]*_test\)$/\1/p' -e 's/^\([a-z0-9_]*_test\): phony$/\1/p' | sort -u)
  if [ "$kind" = tsan ] && [ "${SANITIZE_FULL:-0}" != 1 ]; then
    wanted=${TSAN_TARGETS:-"http_test object_test fs_test readahead_test prefetch_test data_test fuse_test testserver_test object_testserver_test"}
    targets=$(for t in $targets; do case " $wanted " in *" $t "*) echo "$t" ;; esac; done)
  fi
  # shellcheck disable=SC2086
  cmake --build "$dir" -j"$jobs" --target $targets
  built=$(date +%s)
  echo "sanitize: $kind built in $((built - start))s"
  # shellcheck disable=SC2086
  (cd "$dir" && ctest -L '^(unit|integration)$' -j"$jobs" --timeout 900 --output-on-failure ${CTEST_ARGS:-})
  echo "sanitize: $kind tests passed in $(($(date +%s) - built))s"
done
echo "sanitize: ok (${kinds[*]})"
