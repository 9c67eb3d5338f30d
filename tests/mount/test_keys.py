"""How keys become a tree: directories from '/' and markers, clashes, invalid keys hidden.

docs/SEMANTICS.md "Tree". The keys are uploaded through ossmount-client (signed, OSS V4), so
keys that cannot be files on disk (markers, '//', '..') live in the server's memory store.
"""
import errno
import os
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
            harness.client(cls.server, "put", key, p)
        cls.mount = harness.Mount(cls.server, args=["--metadata-ttl", "indefinite"])
        cls.mnt = cls.mount.mountpoint

    @classmethod
    def tearDownClass(cls):
        cls.mount.close()
        cls.server.stop()

    def test_visible_files_have_their_bytes(self):
        for key, data in KEYS.items():
            if key in HIDDEN or key.endswith("/"):
                continue
            with open(os.path.join(self.mnt, key), "rb") as f:
                self.assertEqual(f.read(), data, key)

    def test_root_listing(self):
        names = set(os.listdir(self.mnt))
        self.assertNotIn("..", names)
        self.assertNotIn(".", names)
        self.assertNotIn("", names)
        for name in ("ok", "clash", "marker-only", "marker-with-child", "deep", "ctrl", "utf8",
                     "name-255"):
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
    unittest.main(verbosity=2)
