"""How keys become a tree: directories from '/' and markers, clashes, invalid keys hidden.

Over 40 hostile keys (issue 7): '.', '..', '//', leading and trailing '/', components over
255 bytes, a 1,023-byte key, control characters, invalid UTF-8, file/directory clashes,
escape attempts like a/../../etc/passwd. The mount must not crash, find/ls -R/stat agree,
hidden keys are counted in the log, and nothing resolves outside the mount point.

docs/SEMANTICS.md "Tree". The keys are uploaded through ossmount-client (signed, OSS V4), so
keys that cannot be files on disk (markers, '//', '..') live in the server's memory store.
"""
import errno
import os
import re
import stat
import subprocess
import tempfile
import unittest

import harness

# key -> content. Keys that must be hidden are marked in HIDDEN.
KEYS = {
    "ok/file.txt": b"ok",
    "clash": b"i am a file hidden by the directory",
    "clash/inner.txt": b"inner",
    "marker-only/": b"",
    "marker-with-child/": b"",
    "marker-with-child/child.txt": b"child",
    "deep/only/dirs/leaf.txt": b"leaf",
    "ctrl/tab\tname.txt": b"tab",
    "ctrl/newline\nname.txt": b"newline",
    "utf8/\u00e9t\u00e9.txt": "été".encode(),
    "name-255/" + "n" * 255: b"255 is allowed",
    # hidden:
    "a//b": b"empty component",
    "dot/./x": b"dot component",
    "dotdot/../x": b"dotdot component",
    "../escape": b"escape attempt",
    "a/../../etc/passwd": b"escape attempt 2",
    "long/" + "n" * 256: b"component over 255 bytes",
    "trailing/..": b"dotdot last",
}
HIDDEN = {"clash", "a//b", "dot/./x", "dotdot/../x", "../escape", "a/../../etc/passwd",
          "long/" + "n" * 256, "trailing/.."}

# More hostile keys (issue 7: at least 30 in all). Byte keys are not valid UTF-8.
LONG_PATH = "k1023/" + ("p" * 200 + "/") * 4 + "q" * 213  # 1,023 bytes, components <= 255
assert len(LONG_PATH) == 1023
MORE = {
    ".": b"the key '.'",
    "..": b"the key '..'",
    "/leading-slash": b"empty first component",
    "//": b"two slashes",
    "dir-with-bytes/": b"a marker with content is still a directory",
    "x" * 1023: b"a 1023-byte single component",
    LONG_PATH: b"a 1023-byte key of valid components",
    "ctrl/bell\x07name": b"bell",
    "ctrl/esc\x1b[31mred": b"escape sequence",
    "ctrl/cr\rname": b"carriage return",
    "ctrl/del\x7fname": b"delete",
    b"utf8-bad/\xff\xfe.txt": b"invalid utf-8",
    b"utf8-bad/half\xc3": b"truncated utf-8 sequence",
    "...": b"three dots is a valid name",
    " leading space": b"leading space",
    "back\\slash": b"backslash",
    "percent%2Fslash": b"percent-encoded slash stays literal",
    "clash2": b"file hidden by a marker",
    "clash2/": b"",
    "../../etc/shadow": b"escape attempt 3",
    "dir/./": b"dot marker",
    "dir/../": b"dotdot marker",
    "dir/ok": b"ok under dir",
    "q?x=1&y#frag": b"query characters",
}
MORE_HIDDEN = {".", "..", "/leading-slash", "//", "x" * 1023, "clash2", "../../etc/shadow",
               "dir/./", "dir/../"}
for _k, _v in MORE.items():
    KEYS[_k] = _v
HIDDEN |= MORE_HIDDEN
assert len(KEYS) >= 30, len(KEYS)


class KeysTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="keys-data-")
        os.makedirs(os.path.join(cls.root, "bucket"))
        cls.server = harness.TestServer(cls.root, bucket="bucket")
        tmp = tempfile.mkdtemp()
        for i, (key, data) in enumerate(KEYS.items()):
            p = os.path.join(tmp, "obj%d" % i)
            with open(p, "wb") as f:
                f.write(data)
            harness.client(cls.server, "put", key, p)  # bytes argv for non-UTF-8 keys
        cls.mount = harness.Mount(cls.server, args=["--metadata-ttl", "indefinite"])
        cls.mnt = cls.mount.mountpoint

    @classmethod
    def tearDownClass(cls):
        cls.mount.close()
        cls.server.stop()

    def path(self, key):
        if isinstance(key, bytes):
            return os.path.join(os.fsencode(self.mnt), key)
        return os.path.join(self.mnt, key)

    def test_visible_files_have_their_bytes(self):
        for key, data in KEYS.items():
            if key in HIDDEN or (key[-1:] in ("/", b"/")):
                continue
            with open(self.path(key), "rb") as f:
                self.assertEqual(f.read(), data, key)

    def test_more_hostile_keys(self):
        names = set(os.listdir(self.mnt))
        self.assertIn("...", names)
        self.assertIn(" leading space", names)
        self.assertIn("back\\slash", names)
        self.assertIn("percent%2Fslash", names)
        self.assertIn("q?x=1&y#frag", names)
        self.assertNotIn("x" * 1023, names)
        self.assertTrue(os.path.isdir(self.path("dir-with-bytes")))
        self.assertEqual(os.listdir(self.path("dir-with-bytes")), [])
        self.assertTrue(os.path.isdir(self.path("clash2")))
        self.assertEqual(sorted(os.listdir(self.path("dir"))), ["ok"])
        self.assertEqual(sorted(os.listdir(os.fsencode(self.path("utf8-bad")))),
                         sorted([b"\xff\xfe.txt", b"half\xc3"]))
        # The 1,023-byte key of valid components is a file at depth 6.
        with open(self.path(LONG_PATH), "rb") as f:
            self.assertEqual(f.read(), MORE[LONG_PATH])
        with self.assertRaises(OSError) as cm:
            os.stat(self.path("x" * 1023))
        self.assertEqual(cm.exception.errno, errno.ENAMETOOLONG)
        for ctrl in ("bell\x07name", "esc\x1b[31mred", "cr\rname", "del\x7fname"):
            self.assertIn(ctrl, os.listdir(self.path("ctrl")))

    def test_find_ls_stat_agree(self):
        # find, ls -R and a stat of every entry os.walk sees describe the same tree.
        mnt = os.fsencode(self.mnt)
        walked = set()
        for dirpath, dirnames, filenames in os.walk(mnt):
            for n in dirnames + filenames:
                p = os.path.join(dirpath, n)
                st = os.lstat(p)  # every visible entry can be stat'ed
                self.assertTrue(stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode), p)
                self.assertEqual(stat.S_ISDIR(st.st_mode), n in dirnames, p)
                walked.add(os.path.relpath(p, mnt))
        found = subprocess.run(["find", ".", "-mindepth", "1", "-print0"], cwd=mnt,
                               capture_output=True, check=True, timeout=120).stdout
        found = {os.path.normpath(x) for x in found.split(b"\0") if x}
        self.assertEqual(found, walked)
        ls = subprocess.run(["ls", "-R", "-a", "--quoting-style=escape"], cwd=mnt,
                            capture_output=True, timeout=120)
        self.assertEqual(ls.returncode, 0, ls.stderr)
        # ls -R lists one block per directory: as many as find sees directories, plus '.'.
        dirs = [p for p in walked if os.path.isdir(os.path.join(mnt, p))]
        self.assertEqual(ls.stdout.count(b":\n"), len(dirs) + 1)
        self.assertGreaterEqual(len(walked), 30)

    def test_hidden_keys_are_counted_in_the_log(self):
        for d in ("", "a", "dot", "dotdot", "long", "trailing", "dir"):
            os.listdir(os.path.join(self.mnt, d))
        log = self.mount.output()
        hidden = {}
        for m in re.finditer(r"listing '([^']*)': \d+ entries shown, (\d+) keys hidden as "
                             r"invalid POSIX names .*?, (\d+) files hidden", log):
            hidden[m.group(1)] = max(hidden.get(m.group(1), 0), int(m.group(2)) + int(m.group(3)))
        for prefix in ("", "a/", "dot/", "dotdot/", "long/", "trailing/", "dir/"):
            self.assertGreater(hidden.get(prefix, 0), 0, (prefix, hidden))
        # Root: '.', '..', '/'..., 'clash', 'clash2', 'x'*1023 at least.
        self.assertGreaterEqual(hidden[""], 5, hidden)

    def test_root_listing(self):
        names = set(os.listdir(self.mnt))
        self.assertNotIn("..", names)
        self.assertNotIn(".", names)
        self.assertNotIn("", names)
        for name in ("ok", "clash", "marker-only", "marker-with-child", "deep", "ctrl", "utf8",
                     "name-255", "k1023", "utf8-bad", "dir-with-bytes", "clash2"):
            self.assertIn(name, names)

    def test_clash_shows_directory(self):
        self.assertTrue(os.path.isdir(os.path.join(self.mnt, "clash")))
        self.assertEqual(os.listdir(os.path.join(self.mnt, "clash")), ["inner.txt"])

    def test_markers_make_directories(self):
        self.assertEqual(os.listdir(os.path.join(self.mnt, "marker-only")), [])
        self.assertEqual(os.listdir(os.path.join(self.mnt, "marker-with-child")), ["child.txt"])
        self.assertEqual(os.listdir(os.path.join(self.mnt, "deep", "only")), ["dirs"])

    def test_invalid_components_are_hidden(self):
        self.assertEqual(os.listdir(os.path.join(self.mnt, "dot")), [])
        self.assertEqual(os.listdir(os.path.join(self.mnt, "dotdot")), [])
        self.assertEqual(os.listdir(os.path.join(self.mnt, "long")), [])
        self.assertEqual(os.listdir(os.path.join(self.mnt, "trailing")), [])
        self.assertEqual(os.listdir(os.path.join(self.mnt, "a")), [])
        with self.assertRaises(OSError) as cm:
            os.stat(os.path.join(self.mnt, "long", "n" * 256))
        self.assertEqual(cm.exception.errno, errno.ENAMETOOLONG)

    def test_nothing_resolves_outside(self):
        # Every path found by walking the mount stays under it.
        real_mnt = os.path.realpath(self.mnt)
        count = 0
        for dirpath, dirnames, filenames in os.walk(self.mnt):
            for n in dirnames + filenames:
                p = os.path.realpath(os.path.join(dirpath, n))
                self.assertTrue(p.startswith(real_mnt + os.sep), p)
                count += 1
        self.assertGreater(count, 10)
        self.assertFalse(os.path.exists(os.path.join(self.mnt, "escape")))
        self.assertFalse(os.path.exists(os.path.join(self.mnt, "etc")))

    def test_name_of_255_bytes(self):
        p = os.path.join(self.mnt, "name-255", "n" * 255)
        with open(p, "rb") as f:
            self.assertEqual(f.read(), b"255 is allowed")


if __name__ == "__main__":
    harness.main()
