#!/usr/bin/env bash
# ctest's catch_discover_tests splits test names on ';', so a Catch2 TEST_CASE whose name
# holds one becomes pieces that match no test and "pass" without running. Refuse them.
set -u
root=${1:?source dir}
bad=$(grep -rn --include='*.cc' -E 'TEST_CASE\("[^"]*;' "$root/tests" || true)
if [ -n "$bad" ]; then
  echo "Catch2 test names must not contain ';' (ctest would silently skip them):"
  echo "$bad"
  exit 1
fi
echo "test names ok"
