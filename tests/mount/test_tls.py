"""TLS: the daemon and the client verify https endpoints, by default against the system CAs;
--ca-bundle adds a private CA; a failed verification stops the mount at start with a clear
error. docs/SEMANTICS.md "TLS".

The object server serves HTTPS from a certificate signed by a CA made here with openssl.
"""
import os
import subprocess
import tempfile
import unittest

import harness
import tls_util


class TlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tls-")
        cls.ca, cert, key = tls_util.make_ca_and_server_cert(cls.tmp)
        cls.other_ca, _, _ = tls_util.make_ca_and_server_cert(cls.tmp, name="other")
        cls.root = os.path.join(cls.tmp, "data")
        os.makedirs(os.path.join(cls.root, "bucket", "dir"))
        cls.content = os.urandom(300 * 1024)  # a whole-object read and ranged reads
        with open(os.path.join(cls.root, "bucket", "dir", "f.bin"), "wb") as f:
            f.write(cls.content)
        cls.server = tls_util.TlsTestServer(cls.root, cls.ca, cert, key)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_server_really_serves_tls_from_the_generated_ca(self):
        # The test would prove nothing if the server spoke plain HTTP.
        self.assertTrue(self.server.endpoint.startswith("https://"))
        self.assertIn("requests", self.server.stats())

    def test_mount_with_ca_bundle_reads_the_file(self):
        m = harness.Mount(self.server, args=["--ca-bundle", self.ca])
        try:
            with open(m.path("dir", "f.bin"), "rb") as f:
                self.assertEqual(f.read(), self.content)
            self.assertEqual(sorted(os.listdir(m.path("dir"))), ["f.bin"])
        finally:
            m.close()

    def test_client_with_ca_bundle(self):
        r = harness.client(self.server, "--ca-bundle", self.ca, "get", "dir/f.bin")
        self.assertEqual(r.stdout, self.content)

    def attempt_mount(self, extra):
        """The daemon in its default background mode: returns (exit code, output)."""
        mnt = tempfile.mkdtemp(prefix="ossmount-tls-")
        cmd = [harness.OSSMOUNT, "bucket", mnt, "--endpoint", self.server.endpoint,
               "--region", harness.REGION, "--path-style", "--retries", "2"] + list(extra)
        try:
            r = subprocess.run(cmd, env=self.server.env(), capture_output=True, text=True,
                               timeout=120)
            mounted = harness.is_mounted(mnt)
        finally:
            harness.force_unmount(mnt)
            os.rmdir(mnt)
        self.assertFalse(mounted, "a failed start left %s mounted" % mnt)
        return r.returncode, r.stdout + r.stderr

    def check_verification_failure(self, code, out):
        self.assertEqual(code, 1, out)
        self.assertIn("127.0.0.1:%d" % self.server.port, out)  # names the endpoint
        self.assertIn("certificate", out)
        self.assertIn("--ca-bundle", out)  # and says what to do

    def test_without_ca_bundle_verification_fails_at_start(self):
        # The default is to verify against the system CAs, which do not know the test CA.
        code, out = self.attempt_mount([])
        self.check_verification_failure(code, out)

    def test_wrong_ca_bundle_fails_at_start(self):
        code, out = self.attempt_mount(["--ca-bundle", self.other_ca])
        self.check_verification_failure(code, out)

    def test_client_without_ca_bundle_fails(self):
        r = harness.client(self.server, "get", "dir/f.bin", check=False)
        self.assertNotEqual(r.returncode, 0)
        err = r.stderr.decode(errors="replace")
        self.assertIn("--ca-bundle", err)
        self.assertNotIn(harness.SK, err)

    def test_no_verify_tls_connects_and_warns(self):
        m = harness.Mount(self.server, args=["--no-verify-tls"])
        try:
            with open(m.path("dir", "f.bin"), "rb") as f:
                self.assertEqual(f.read(), self.content)
            self.assertIn("--no-verify-tls", m.output())
        finally:
            m.close()


if __name__ == "__main__":
    harness.main()
