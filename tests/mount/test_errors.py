"""Bad input fails the mount at start: clear message, non-zero exit, nothing mounted.

docs/SEMANTICS.md "Start-up checks". Runs the daemon in its default background mode, so the
parent's exit status is what is checked (it must report the child's failure).
"""
import os
import subprocess
import tempfile
import unittest

import harness


class ErrorsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="errors-data-")
        os.makedirs(os.path.join(cls.root, "bucket", "dir"))
        with open(os.path.join(cls.root, "bucket", "dir", "f.txt"), "w") as f:
            f.write("x")
        cls.server = harness.TestServer(cls.root, bucket="bucket")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def attempt(self, spec="bucket", env=None, endpoint=None, mountpoint=None, extra=()):
        mnt = mountpoint or tempfile.mkdtemp(prefix="ossmount-err-")
        cmd = [harness.OSSMOUNT, spec, mnt, "--endpoint", endpoint or self.server.endpoint,
               "--region", harness.REGION, "--path-style", "--retries", "2"] + list(extra)
        try:
            r = subprocess.run(cmd, env=env or self.server.env(), capture_output=True, text=True,
                               timeout=120)
            mounted = os.path.isdir(mnt) and harness.is_mounted(mnt)
        finally:
            harness.force_unmount(mnt)
        self.assertFalse(mounted, "a failed start left %s mounted" % mnt)
        self.assertNotEqual(r.returncode, 0, r.stderr)
        return r.returncode, r.stdout + r.stderr

    def test_wrong_bucket(self):
        _, out = self.attempt(spec="no-such-bucket")
        self.assertIn("no-such-bucket", out)
        self.assertIn("does not exist", out)

    def test_wrong_secret(self):
        env = self.server.env()
        env["OSS_ACCESS_KEY_SECRET"] = "wrong-secret-value-123"
        _, out = self.attempt(env=env)
        self.assertIn("SignatureDoesNotMatch", out)
        self.assertIn("secret", out.lower())
        self.assertNotIn("wrong-secret-value-123", out)

    def test_unknown_key_id(self):
        env = self.server.env()
        env["OSS_ACCESS_KEY_ID"] = "no-such-key-id"
        _, out = self.attempt(env=env)
        self.assertIn("InvalidAccessKeyId", out)
        self.assertNotIn(harness.SK, out)

    def test_manifest_in_the_bucket_failures_say_what_to_fix(self):
        # A HEAD's error has no code in its body: the daemon reads the first byte to tell a
        # missing key from a missing bucket, and a wrong secret from a wrong key id.
        def manifest_of(bucket):
            return ["--manifest", "oss://%s/manifests/m.tsv" % bucket]
        wrong_secret = self.server.env()
        wrong_secret["OSS_ACCESS_KEY_SECRET"] = "wrong-secret-value-123"
        unknown_id = self.server.env()
        unknown_id["OSS_ACCESS_KEY_ID"] = "no-such-key-id"
        cases = {
            "missing key": (dict(extra=manifest_of("bucket")),
                            ["manifest oss://bucket/manifests/m.tsv: no such object"]),
            "missing bucket": (dict(spec="no-such-bucket", extra=manifest_of("no-such-bucket")),
                               ["NoSuchBucket", "hint: bucket 'no-such-bucket' does not exist"]),
            "wrong secret": (dict(env=wrong_secret, extra=manifest_of("bucket")),
                             ["SignatureDoesNotMatch", "hint: the access key secret"]),
            "unknown key id": (dict(env=unknown_id, extra=manifest_of("bucket")),
                               ["InvalidAccessKeyId", "hint: the access key id is unknown"]),
        }
        for name, (kwargs, expected) in cases.items():
            with self.subTest(name):
                self.server.reset_stats()
                _, out = self.attempt(**kwargs)
                for text in expected:
                    self.assertIn(text, out)
                self.assertNotIn("wrong-secret-value-123", out)
                self.assertNotIn(harness.SK, out)
                self.assertEqual(self.server.stats()["LIST"], 0, "no listing at any start")

    def test_unreachable_endpoint(self):
        _, out = self.attempt(endpoint="http://127.0.0.1:%d" % harness.free_port())
        self.assertIn("127.0.0.1", out)
        self.assertIn("endpoint", out.lower())

    def test_missing_mountpoint(self):
        missing = os.path.join(tempfile.mkdtemp(), "does-not-exist")
        _, out = self.attempt(mountpoint=missing)
        self.assertIn(missing, out)
        self.assertIn("does not exist", out)

    def test_nonempty_mountpoint(self):
        mnt = tempfile.mkdtemp(prefix="ossmount-nonempty-")
        open(os.path.join(mnt, "something"), "w").close()
        _, out = self.attempt(mountpoint=mnt)
        self.assertIn("not empty", out)
        self.assertTrue(os.path.exists(os.path.join(mnt, "something")))

    def test_unknown_option(self):
        code, out = self.attempt(extra=["--no-such-option"])
        self.assertIn("--no-such-option", out)
        self.assertEqual(code, 2)


if __name__ == "__main__":
    harness.main()
