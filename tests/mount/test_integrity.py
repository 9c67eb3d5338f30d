"""Large files read from start to end have their whole CRC-64 checked.

A ranged GET carries the whole object's x-oss-hash-crc64ecma, not one of its range, so a byte
damaged inside a range of the right length passes every per-request check. The daemon
combines the CRC-64 of the parts one open file reads in order and compares it with the
object's at the end. Over ossmount-testserver with --corrupt-key (every ranged GET of the key
has one byte flipped, its headers right):
  - `dd` of a 64 MiB object fails with EIO, and so does a Python read of it; the daemon logs
    "CRC-64 mismatch" with the key and both CRCs and counts it
    (ossmount_object_crc_checks_total{result="mismatch"});
  - the same object served intact reads byte-exact and counts a match;
  - with --cache, the damaged parts the cache took are not served again: a read after the
    server is mended fetches from the server and is byte-exact.
"""
import hashlib
import json
import os
import random
import shutil
import subprocess
import tempfile
import unittest
import urllib.request

import harness

MiB = 1 << 20
SIZE = 64 * MiB + 12345  # not a multiple of the part size: a short last part
KEY = "models/weights.bin"


def set_corrupt_key(server, value):
    req = urllib.request.Request(server.endpoint + "/_ossmount/faults?corrupt-key=" + value,
                                 method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def python_read(path):
    """sha256 of the file read whole in 1 MiB reads, or the OSError that stopped it."""
    h = hashlib.sha256()
    try:
        with open(path, "rb", buffering=0) as f:
            while True:
                b = f.read(MiB)
                if not b:
                    break
                h.update(b)
    except OSError as e:
        return e
    return h.hexdigest()


def crc_checks(mount, result):
    return harness.mount_metric(mount.mountpoint, "counters", "ossmount_object_crc_checks_total",
                                result=result)


class IntegrityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="integrity-data-")
        path = os.path.join(cls.root, "bucket", KEY)
        os.makedirs(os.path.dirname(path))
        data = random.Random(41).randbytes(SIZE)
        with open(path, "wb") as f:
            f.write(data)
        cls.digest = hashlib.sha256(data).hexdigest()
        cls.server = harness.TestServer(cls.root, bucket="bucket")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.root, ignore_errors=True)

    def setUp(self):
        set_corrupt_key(self.server, "")

    def check_mismatch_logged(self, mount):
        log = mount.output()
        lines = [l for l in log.splitlines() if "CRC-64 mismatch" in l]
        self.assertTrue(lines, "no CRC-64 mismatch in the daemon log:\n" + log[-3000:])
        self.assertIn(KEY, lines[0])
        # Both CRCs, in decimal as the header carries them.
        self.assertRegex(lines[0], r"has CRC-64 \d+, the object's \(x-oss-hash-crc64ecma\) is \d+")

    def test_damaged_range_fails_with_eio_intact_reads_exact(self):
        set_corrupt_key(self.server, KEY)
        self.server.reset_stats()
        m = harness.Mount(self.server, args=["--prefetch-unit", "8MiB"])
        try:
            self.assertEqual(os.stat(m.path(KEY)).st_size, SIZE)
            dd = subprocess.run(["dd", "if=" + m.path(KEY), "of=/dev/null", "bs=1M",
                                 "status=none"], capture_output=True, text=True, timeout=300)
            self.assertNotEqual(dd.returncode, 0, "dd read the damaged object without an error")
            self.assertIn("Input/output error", dd.stderr)
            self.assertGreater(self.server.stats()["faults"].get("corrupt", 0), 0)
            self.check_mismatch_logged(m)
            self.assertGreaterEqual(crc_checks(m, "mismatch"), 1)

            # Opened again (the kernel drops the pages of an earlier open), read by Python.
            r = python_read(m.path(KEY))
            self.assertIsInstance(r, OSError, "the damaged object read without an error")
            self.assertEqual(r.errno, 5)  # EIO
            self.assertGreaterEqual(crc_checks(m, "mismatch"), 2)
        finally:
            m.close()

        # The same object served intact: byte-exact, one match counted, no mismatch.
        set_corrupt_key(self.server, "")
        m = harness.Mount(self.server, args=["--prefetch-unit", "8MiB"])
        try:
            self.assertEqual(python_read(m.path(KEY)), self.digest)
            dd = subprocess.run(["dd", "if=" + m.path(KEY), "of=/dev/null", "bs=4M",
                                 "status=none"], capture_output=True, text=True, timeout=300)
            self.assertEqual(dd.returncode, 0, dd.stderr)
            self.assertGreaterEqual(crc_checks(m, "match"), 1)
            self.assertEqual(crc_checks(m, "mismatch"), 0)
            self.assertNotIn("CRC-64 mismatch", m.output())
        finally:
            m.close()

    def test_damaged_parts_in_the_disk_cache_are_not_served_again(self):
        cache = tempfile.mkdtemp(prefix="integrity-cache-")
        set_corrupt_key(self.server, KEY)
        m = harness.Mount(self.server, args=["--prefetch-unit", "8MiB", "--cache", cache])
        try:
            self.assertIsInstance(python_read(m.path(KEY)), OSError)
            self.check_mismatch_logged(m)
            # Mended: the cached (damaged) parts are skipped, the server's are exact.
            set_corrupt_key(self.server, "")
            self.server.reset_stats()
            self.assertEqual(python_read(m.path(KEY)), self.digest)
            self.assertGreaterEqual(self.server.stats()["GET_RANGE"], SIZE // (8 * MiB))
        finally:
            m.close()
            shutil.rmtree(cache, ignore_errors=True)

    def test_the_page_cache_of_a_damaged_object_is_not_kept_across_opens(self):
        # With --metadata-ttl indefinite the kernel keeps a file's pages across opens
        # (keep_cache). After a mismatch the next open must not: the pages of the failed pass
        # hold damaged bytes, and a pass that read them from the page cache would fetch and
        # check only what was missing.
        set_corrupt_key(self.server, KEY)
        m = harness.Mount(self.server, args=["--prefetch-unit", "8MiB", "--metadata-ttl",
                                             "indefinite"])
        try:
            self.assertIsInstance(python_read(m.path(KEY)), OSError)
            self.check_mismatch_logged(m)
            set_corrupt_key(self.server, "")
            self.assertEqual(python_read(m.path(KEY)), self.digest)
            self.assertGreaterEqual(crc_checks(m, "match"), 1)
        finally:
            m.close()


if __name__ == "__main__":
    harness.main()
