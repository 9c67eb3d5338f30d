"""STS token rotation mid-run: reads keep working while the token is rotated and the old one
expires, with the object server enforcing expiry. docs/SEMANTICS.md "Credentials".

The server starts accepting only token T1, which expires a few seconds into the test. Halfway,
STS "issues" T2: the server is told to accept it too (POST /_ossmount/sts), and the daemon's
source is rotated (the credentials file is rewritten; or the fake ECS metadata service starts
answering T2). A reader thread opens and reads files the whole time; after T1 has expired the
test checks that the server really refuses T1, that GETs kept succeeding (so they carried T2),
and that not a single read failed.
"""
import datetime
import http.server
import json
import os
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.request

import harness

AK = harness.AK
SK = harness.SK
T1 = "sts-token-one-0123456789"
T2 = "sts-token-two-9876543210"


def iso8601(unix):
    return datetime.datetime.fromtimestamp(unix, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_private(path, text):
    """Atomically replaces `path` with a 0600 file (how a credentials helper should rotate)."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class Reader(threading.Thread):
    """Opens and reads every file over and over; records failures and wrong bytes."""

    def __init__(self, mount, files):
        super().__init__(daemon=True)
        self.mount, self.files = mount, files
        self.stop = threading.Event()
        self.reads = 0
        self.failures = []

    def run(self):
        while not self.stop.is_set():
            for rel, content in self.files.items():
                try:
                    with open(self.mount.path(rel), "rb") as f:
                        if f.read() != content:
                            self.failures.append("%s: wrong bytes" % rel)
                except OSError as e:
                    self.failures.append("%s: %s" % (rel, e))
                self.reads += 1
            time.sleep(0.02)


class StsRotationTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sts-")
        self.root = os.path.join(self.tmp, "data")
        os.makedirs(os.path.join(self.root, "bucket", "d"))
        self.files = {}
        for i in range(8):
            rel = "d/f%d.bin" % i
            self.files[rel] = os.urandom(20000 + i)
            with open(os.path.join(self.root, "bucket", rel), "wb") as f:
                f.write(self.files[rel])
        # Long enough for the mount to start and the rotation to land before T1 dies.
        self.t1_expires = int(time.time()) + 25
        self.server = harness.TestServer(self.root, args=[
            "--sts-token", T1, "--sts-expires-at", str(self.t1_expires)])

    def tearDown(self):
        self.server.stop()

    def env(self):
        e = dict(os.environ)
        for k in list(e):
            if k.startswith(("OSS_", "ALIBABA_CLOUD_", "AWS_")):
                del e[k]
        e["HOME"] = self.tmp  # no default credentials or passwd files
        return e

    def issue_t2(self):
        req = urllib.request.Request(
            "%s/_ossmount/sts?token=%s&expires_at=%d" % (self.server.endpoint, T2, time.time() + 3600),
            method="POST")
        urllib.request.urlopen(req, timeout=10).read()

    def client_with_token(self, token):
        e = self.env()
        e.update(OSS_ACCESS_KEY_ID=AK, OSS_ACCESS_KEY_SECRET=SK, OSS_SESSION_TOKEN=token)
        cmd = [harness.CLIENT] + self.server.client_args() + ["get", "d/f0.bin", "-o", os.devnull]
        return subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=120)

    def run_rotation(self, mount_args, rotate):
        m = harness.Mount(self.server, args=["--metadata-ttl", "0"] + mount_args, env=self.env())
        try:
            reader = Reader(m, self.files)
            reader.start()
            time.sleep(3)
            self.issue_t2()
            rotate()
            # Read on until T1 has been expired for a while.
            while time.time() < self.t1_expires + 2:
                time.sleep(0.5)
            self.server.reset_stats()
            gets_after_expiry_start = time.time()
            time.sleep(6)
            stats = self.server.stats()
            reader.stop.set()
            reader.join(30)
            self.assertGreater(reader.reads, 50)
            self.assertEqual(reader.failures, [], m.output()[-3000:])
            # The server enforces expiry: T1 is refused now, T2 accepted.
            old = self.client_with_token(T1)
            self.assertNotEqual(old.returncode, 0, old.stdout)
            self.assertIn("expired", (old.stdout + old.stderr).lower())
            self.assertNotIn(T1, old.stdout + old.stderr)
            self.assertEqual(self.client_with_token(T2).returncode, 0)
            # Requests after T1's expiry succeeded, so they carried T2.
            served = sum(stats.get(op, 0) for op in ("GET", "LIST", "HEAD"))
            self.assertGreater(served, 0, "no request reached the server after T1 expired (%.0fs): %s"
                               % (time.time() - gets_after_expiry_start, stats))
            out = m.output()
            self.assertNotIn(T1, out)
            self.assertNotIn(T2, out)
            self.assertNotIn(SK, out)
        finally:
            m.close()

    def test_rotated_credentials_file(self):
        creds = os.path.join(self.tmp, "credentials.json")

        def content(token, expires):
            return json.dumps({"AccessKeyId": AK, "AccessKeySecret": SK, "SecurityToken": token,
                               "Expiration": iso8601(expires)})
        write_private(creds, content(T1, self.t1_expires))
        self.run_rotation(["--credentials-file", creds],
                          lambda: write_private(creds, content(T2, time.time() + 3600)))

    def test_ecs_ram_role_endpoint(self):
        state = {"token": T1, "expires": self.t1_expires, "requests": 0}

        class Metadata(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def reply(self, code, body):
                data = body.encode()
                self.send_response(code)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_PUT(self):
                self.reply(200, "imds-session-token")

            def do_GET(self):
                state["requests"] += 1
                base = "/latest/meta-data/ram/security-credentials/"
                if self.path == base:
                    return self.reply(200, "test-role\n")
                if self.path == base + "test-role":
                    return self.reply(200, json.dumps({
                        "Code": "Success", "AccessKeyId": AK, "AccessKeySecret": SK,
                        "SecurityToken": state["token"], "Expiration": iso8601(state["expires"])}))
                self.reply(404, "")

        metadata = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metadata)
        threading.Thread(target=metadata.serve_forever, daemon=True).start()
        try:
            def rotate():
                state["token"], state["expires"] = T2, int(time.time()) + 3600
            url = "http://127.0.0.1:%d" % metadata.server_address[1]
            self.run_rotation(["--ram-role", "auto", "--ecs-metadata-url", url], rotate)
            self.assertGreater(state["requests"], 0)
        finally:
            metadata.shutdown()
            metadata.server_close()  # shutdown() stops the loop; this closes the listening socket


if __name__ == "__main__":
    harness.main()
