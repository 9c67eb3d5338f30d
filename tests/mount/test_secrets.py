"""Secrets never reach anything a mount session writes.

docs/SEMANTICS.md "Start-up checks". With an access key secret and an STS token known to the
test, this scans: the daemon's log at trace level with FUSE debugging (-d) over a session
that lists, reads, fails reads (a missing file, a server that returns errors and then
refuses connections) and unmounts; the log file written with --log-file; the stderr of failed
starts (a wrong secret, a wrong token, an expired token, an unknown key id, a bad option);
the --help text; and the audit log when the daemon has an --audit-log option. Fails if the
secret, the token, or a 12-character piece of either appears anywhere.
"""
import os
import subprocess
import tempfile
import time
import unittest
import urllib.request

import harness

SECRET = "S3cr3t-Acc3ss-K3y-0f-th3-t3st-QWERTYzxcv"
TOKEN = "STS.T0k3n-" + "x9Kq" * 16
WRONG_SECRET = "Wr0ng-S3cr3t-n0t-to-b3-l0gg3d-ASDFGH"
WRONG_TOKEN = "STS.Wr0ngT0k3n-" + "b7Zp" * 12


def pieces(secret):
    return {secret[i:i + 12] for i in range(0, len(secret) - 11, 6)} | {secret}


class SecretsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="secrets-data-")
        os.makedirs(os.path.join(cls.root, "bucket", "dir"))
        with open(os.path.join(cls.root, "bucket", "dir", "f.bin"), "wb") as f:
            f.write(os.urandom(300_000))
        with open(os.path.join(cls.root, "bucket", "g.bin"), "wb") as f:
            f.write(os.urandom(50_000))
        cls.server = harness.TestServer(cls.root, bucket="bucket", secret=SECRET, args=[
            "--sts-token", TOKEN, "--sts-expires-at", str(int(time.time()) + 3600)])
        cls.help = subprocess.run([harness.OSSMOUNT, "--help"], capture_output=True,
                                  text=True).stdout
        cls.texts = {"--help": cls.help}

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def env(self, secret=SECRET, token=TOKEN, key_id=harness.AK):
        e = dict(os.environ)
        e.update({"OSS_ACCESS_KEY_ID": key_id, "OSS_ACCESS_KEY_SECRET": secret,
                  "OSS_SESSION_TOKEN": token})
        return e

    def assert_clean(self, what, text):
        for secret in (SECRET, TOKEN, WRONG_SECRET, WRONG_TOKEN):
            for piece in pieces(secret):
                self.assertNotIn(piece, text, "%s contains a piece of a secret" % what)

    def test_1_session_logs(self):
        log_file = tempfile.NamedTemporaryFile(prefix="ossmount-secrets-", suffix=".log",
                                               delete=False).name
        args = ["-d", "--log-level", "trace", "--log-file", log_file, "--retries", "1",
                "--retry-budget", "2s"]
        audit = None
        if "--audit-log" in self.help:
            audit = log_file + ".audit"
            args += ["--audit-log", audit]
        m = harness.Mount(self.server, args=args, env=self.env())
        try:
            for dirpath, _, filenames in os.walk(m.mountpoint):
                for n in filenames:
                    with open(os.path.join(dirpath, n), "rb") as f:
                        f.read()
            self.assertFalse(os.path.exists(m.path("missing.bin")))
            # Failures: injected errors on every GET, then nothing listening at all.
            req = urllib.request.Request(
                self.server.endpoint + "/_ossmount/faults?error-rate=1&error-kinds=500",
                method="POST")
            urllib.request.urlopen(req, timeout=10).read()
            with self.assertRaises(OSError):
                with open(m.path("dir", "f.bin"), "rb") as f:
                    f.read()
            self.assertEqual(m.unmount(), 0)
        finally:
            m.close()
            req = urllib.request.Request(self.server.endpoint + "/_ossmount/faults?clear",
                                         method="POST")
            urllib.request.urlopen(req, timeout=10).read()
        written = harness.read_text(log_file)
        self.assertIn("GET", written.upper())  # the trace log really has request details
        self.assertGreater(len(written), 500)
        self.assert_clean("the daemon's log file", written)
        self.assert_clean("the daemon's stderr", m.output())
        if audit and os.path.exists(audit):
            self.assert_clean("the audit log", harness.read_text(audit))

    def attempt(self, env, extra=()):
        mnt = tempfile.mkdtemp(prefix="ossmount-secrets-mnt-")
        try:
            r = subprocess.run([harness.OSSMOUNT, "bucket", mnt, "--endpoint",
                                self.server.endpoint, "--region", harness.REGION, "--path-style",
                                "-d", "--retries", "0"] + list(extra),
                               env=env, capture_output=True, text=True, timeout=120)
        finally:
            harness.force_unmount(mnt)
        self.assertNotEqual(r.returncode, 0, "the start should have failed")
        return r.stdout + r.stderr

    def test_2_failed_starts(self):
        cases = {
            "wrong secret": self.env(secret=WRONG_SECRET),
            "wrong token": self.env(token=WRONG_TOKEN),
            "no token": self.env(token=""),
            "unknown key id": self.env(key_id="no-such-key-id"),
        }
        for what, env in cases.items():
            out = self.attempt(env)
            self.assertGreater(len(out), 20, what)
            self.assert_clean("stderr of a failed start (%s)" % what, out)
        out = self.attempt(self.env(), extra=["--no-such-option"])
        self.assert_clean("stderr of a bad command line", out)
        self.assert_clean("--help", self.help)


if __name__ == "__main__":
    harness.main()
