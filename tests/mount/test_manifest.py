"""--manifest: the tree comes from a file, the bucket is never listed.

docs/SEMANTICS.md "Manifest mode". The bucket holds more objects than the manifest names;
the mount must show exactly the manifest's entries, read them byte-exact, and the object
server must count zero LIST requests from start to unmount. A malformed manifest fails the
mount with exit 1 and a message naming the file and the line.
"""
import hashlib
import os
import subprocess
import tempfile
import unittest

import harness

PREFIX = "ds/"


def blob(n, seed):
    out = bytearray()
    h = hashlib.sha256(seed.encode()).digest()
    while len(out) < n:
        h = hashlib.sha256(h).digest()
        out += h
    return bytes(out[:n])


# key (relative to the prefix) -> content.
OBJECTS = {
    "train/c1/a.jpg": blob(50_000, "a"),
    "train/c1/b.jpg": blob(120_000, "b"),
    "train/c2/c.jpg": blob(3, "c"),
    "train/c2/empty.jpg": b"",
    "val/v.jpg": blob(70_000, "v"),
    "big.bin": blob(12 << 20, "big"),  # above the small-file threshold: ranged GETs
    # In the bucket, not in the manifest: must stay invisible.
    "train/c1/not-in-manifest.jpg": blob(10, "n"),
    "extra/secret.txt": b"secret",
}
NOT_LISTED = {"train/c1/not-in-manifest.jpg", "extra/secret.txt"}


class ManifestTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="manifest-data-")
        for key, data in OBJECTS.items():
            path = os.path.join(cls.root, "bucket", PREFIX, key)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        cls.server = harness.TestServer(cls.root, bucket="bucket")
        etags = {}
        for key in OBJECTS:
            out = harness.client(cls.server, "head", PREFIX + key).stdout.decode()
            etags[key] = dict(l.split("\t", 1) for l in out.splitlines())["etag"]
        cls.manifest = os.path.join(cls.root, "manifest.tsv")
        with open(cls.manifest, "w") as f:
            f.write("# ossmount manifest test\n")
            # Tab form with quoted and unquoted etags and a label.
            f.write("train/c1/a.jpg\t%d\t%s\tcat\n" % (len(OBJECTS["train/c1/a.jpg"]),
                                                        etags["train/c1/a.jpg"]))
            f.write("train/c1/b.jpg\t%d\t%s\n" % (len(OBJECTS["train/c1/b.jpg"]),
                                                   etags["train/c1/b.jpg"].strip('"')))
            f.write("train/c2/empty.jpg\t0\t%s\n" % etags["train/c2/empty.jpg"])
            f.write("big.bin\t%d\t%s\n" % (len(OBJECTS["big.bin"]), etags["big.bin"]))
            # Connector form (no size, no etag: one HEAD), and an absolute URI without etag.
            f.write("train/c2/c.jpg 7\n")
            f.write("oss://bucket/ds/val/v.jpg\t%d\n" % len(OBJECTS["val/v.jpg"]))
            # Hostile keys: hidden, never escaping the mount.
            f.write("../escape\t1\t\"E\"\n")
            f.write("weird//name\t1\t\"E\"\n")
        cls.expected_files = {"train/c1/a.jpg", "train/c1/b.jpg", "train/c2/c.jpg",
                              "train/c2/empty.jpg", "val/v.jpg", "big.bin"}
        cls.expected_dirs = {"train", "train/c1", "train/c2", "val", "weird"}
        cls.server.reset_stats()
        cls.mount = harness.Mount(cls.server, bucket_spec="bucket:/ds",
                                  args=["--manifest", cls.manifest, "--metadata-ttl", "indefinite"])
        cls.mnt = cls.mount.mountpoint

    @classmethod
    def tearDownClass(cls):
        cls.mount.close()
        cls.server.stop()

    def walk(self):
        files, dirs = set(), set()
        for top, dnames, fnames in os.walk(self.mnt):
            rel = os.path.relpath(top, self.mnt)
            for d in dnames:
                dirs.add(os.path.normpath(os.path.join(rel, d)))
            for n in fnames:
                files.add(os.path.normpath(os.path.join(rel, n)))
        return files, dirs

    def test_1_tree_is_exactly_the_manifest(self):
        files, dirs = self.walk()
        self.assertEqual(files, self.expected_files)
        self.assertEqual(dirs, self.expected_dirs)
        for key in NOT_LISTED:
            self.assertFalse(os.path.exists(self.mount.path(key)), key)
        self.assertFalse(os.path.exists(self.mount.path("extra")))
        # The hostile keys do not appear anywhere, and nothing resolves outside the mount.
        self.assertEqual(os.listdir(self.mount.path("weird")), [])
        self.assertFalse(os.path.exists(os.path.join(self.mnt, "..", "escape")))

    def test_2_files_read_back_byte_exact(self):
        for key in self.expected_files:
            with open(self.mount.path(key), "rb") as f:
                data = f.read()
            self.assertEqual(len(data), len(OBJECTS[key]), key)
            self.assertEqual(hashlib.sha256(data).hexdigest(),
                             hashlib.sha256(OBJECTS[key]).hexdigest(), key)
            self.assertEqual(os.stat(self.mount.path(key)).st_size, len(OBJECTS[key]), key)

    def test_3_server_counted_zero_lists(self):
        # After the walks and reads above (tests run in name order) and another find.
        subprocess.run(["find", self.mnt], check=True, stdout=subprocess.DEVNULL)
        stats = self.server.stats()
        self.assertEqual(stats.get("LIST", 0), 0, stats)
        # Exactly the two entries without an etag were completed by a HEAD, once each.
        self.assertEqual(stats.get("HEAD", 0), 2, stats)
        self.assertGreater(stats.get("GET", 0), 0, stats)

    def run_daemon(self, manifest_text, name="bad-manifest.tsv"):
        path = os.path.join(self.root, name)
        with open(path, "w") as f:
            f.write(manifest_text)
        mnt = tempfile.mkdtemp(prefix="ossmount-mnt-")
        try:
            cmd = [harness.OSSMOUNT, "bucket:/ds", mnt, "--endpoint", self.server.endpoint,
                   "--region", harness.REGION, "--path-style", "-f", "--manifest", path]
            r = subprocess.run(cmd, env=self.server.env(), capture_output=True, text=True,
                               timeout=120)
        finally:
            harness.force_unmount(mnt)
            os.rmdir(mnt)
        return path, r

    def test_4_malformed_manifest_fails_the_mount_with_line_numbers(self):
        path, r = self.run_daemon("ok\t1\t\"E\"\n# comment\nbad\tnot-a-size\nx\t1\te\tl\tmore\n")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(path, r.stderr)
        self.assertIn("2 malformed lines", r.stderr)
        self.assertIn("line 3: the size 'not-a-size' is not a decimal number of bytes", r.stderr)
        self.assertIn("line 4: too many tab-separated fields", r.stderr)

    def test_6_background_mount_with_a_relative_manifest_path(self):
        # The background form (fork, then chdir("/") once mounted) with a path relative to
        # the directory ossmount was started in.
        mnt = tempfile.mkdtemp(prefix="ossmount-mnt-")
        try:
            cmd = [harness.OSSMOUNT, "bucket:/ds", mnt, "--endpoint", self.server.endpoint,
                   "--region", harness.REGION, "--path-style", "--manifest",
                   os.path.basename(self.manifest)]
            r = subprocess.run(cmd, env=self.server.env(), capture_output=True, text=True,
                               timeout=120, cwd=os.path.dirname(self.manifest))
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(mnt, "train", "c1", "a.jpg"), "rb") as f:
                self.assertEqual(f.read(), OBJECTS["train/c1/a.jpg"])
            self.assertEqual(sorted(os.listdir(mnt)), ["big.bin", "train", "val", "weird"])
        finally:
            subprocess.run(["fusermount3", "-u", mnt], check=False)
            harness.wait_for(lambda: not harness.is_mounted(mnt), 30, "the unmount")
            os.rmdir(mnt)

    def test_7_a_slow_first_read_is_waited_for_and_said_so(self):
        """The manifest's start-up check (a 1-byte GET instead of a LIST) waits for a slow
        endpoint like the listing check does, and says so 5 s in (7 s to the first byte
        here); the mount then starts, its tree from the manifest."""
        slow = harness.TestServer(self.root, bucket="bucket", args=["--ttfb-ms", "7000"])
        mnt = tempfile.mkdtemp(prefix="ossmount-mnt-")
        try:
            cmd = [harness.OSSMOUNT, "bucket:/ds", mnt, "--endpoint", slow.endpoint,
                   "--region", harness.REGION, "--path-style", "--manifest", self.manifest]
            r = subprocess.run(cmd, env=slow.env(), capture_output=True, text=True,
                               timeout=180)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(sorted(os.listdir(mnt)), ["big.bin", "train", "val", "weird"])
            harness.check_waiting_notes(self, r.stderr, slow.endpoint,
                                        "the start-up read of 'ds/[^']+'")
        finally:
            subprocess.run(["fusermount3", "-u", mnt], check=False)
            harness.wait_for(lambda: not harness.is_mounted(mnt), 30, "the unmount")
            os.rmdir(mnt)
            slow.stop()

    def test_5_missing_manifest_fails_the_mount(self):
        mnt = tempfile.mkdtemp(prefix="ossmount-mnt-")
        try:
            cmd = [harness.OSSMOUNT, "bucket:/ds", mnt, "--endpoint", self.server.endpoint,
                   "--region", harness.REGION, "--path-style", "-f", "--manifest",
                   "/nonexistent/manifest.tsv"]
            r = subprocess.run(cmd, env=self.server.env(), capture_output=True, text=True,
                               timeout=120)
        finally:
            harness.force_unmount(mnt)
            os.rmdir(mnt)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("/nonexistent/manifest.tsv: cannot open", r.stderr)


if __name__ == "__main__":
    harness.main()
