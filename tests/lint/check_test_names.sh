#!/usr/bin/env bash
# ctest's catch_discover_tests splits test names on ';', so a Catch2 TEST_CASE whose name
# holds one becomes pieces that match no test and "pass" without running. Refuse them,
# including names clang-format wrapped onto the next line or split into adjacent literals.
set -u
root=${1:?source dir}
exec /usr/bin/env python3 - "$root/tests" <<'PY'
import os, re, sys
name = re.compile(r'TEST_CASE\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')
bad = []
for base, _, files in os.walk(sys.argv[1]):
    for f in files:
        if not f.endswith(".cc"):
            continue
        path = os.path.join(base, f)
        text = open(path, encoding="utf-8", errors="replace").read()
        for m in name.finditer(text):
            literal = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1)))
            if ";" in literal:
                line = text.count("\n", 0, m.start()) + 1
                bad.append("%s:%d: %s" % (path, line, literal))
if bad:
    print("Catch2 test names must not contain ';' (ctest would silently skip them):")
    print("\n".join(bad))
    sys.exit(1)
print("test names ok")
PY
