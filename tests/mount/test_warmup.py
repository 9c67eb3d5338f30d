"""`ossmount warmup` and --prefetch-on-list through a real mount.

- Into the disk cache: `ossmount warmup MOUNT/train` fetches every file once (server GET
  count = files), exits 0 with a summary; reading everything afterwards costs no GET and
  every byte matches.
- Into memory (no --cache): the same, the reads served from the warmed buffers.
- A large file (above --small-file-threshold) is warmed into the disk cache part by part;
  reading it afterwards costs no GET.
- Budget: with --max-cache-size below the dataset, the warm-up stops, exits 3 and says the
  cache budget was reached; it fetched less than the whole dataset.
- --detach returns at once; `warmup --status MOUNTPOINT` reports the job until done.
- Bad usage: a path outside any ossmount mount is an error naming it.
- With --manifest: warm-up lists through the manifest (zero LIST requests) and fetches
  exactly the manifest's entries.
- --prefetch-on-list: listing the class directories alone fetches every file (within the
  budget); the reads after it cost no GET.
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import harness

sys.path.insert(0, os.path.join(harness.SOURCE_DIR, "python"))
import ossmount_hints  # noqa: E402


def warmup(*args, timeout=300):
    return subprocess.run([harness.OSSMOUNT, "warmup"] + list(args), capture_output=True,
                          text=True, timeout=timeout)


class WarmupTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.src = harness.ensure_dataset("imagefolder", "warmup-images", "--classes", "4",
                                         "--per-class", "25", "--seed", "13")
        cls.manifest = harness.read_manifest(cls.src)
        cls.total = sum(size for size, _ in cls.manifest.values())
        # One large object (above --small-file-threshold, 3 parts of --prefetch-unit 8MiB),
        # outside train/, for the disk-mode warm-up of large files.
        cls.large = os.path.join(cls.src, "large", "blob.bin")
        if not os.path.exists(cls.large):
            os.makedirs(os.path.dirname(cls.large), exist_ok=True)
            rng = random.Random(3)
            with open(cls.large + ".tmp", "wb") as f:
                f.write(rng.randbytes(20 << 20))
            os.rename(cls.large + ".tmp", cls.large)
        cls.large_digest = harness.sha256_file(cls.large)
        cls.server = harness.TestServer(os.path.dirname(cls.src), bucket="warmup-images",
                                        args=["--ttfb-ms", "10"])

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ossmount-warmup-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def mount(self, *extra):
        return harness.Mount(self.server, args=["--metadata-ttl", "indefinite"] + list(extra))

    def read_everything(self, m):
        for rel, (size, digest) in sorted(self.manifest.items()):
            self.assertEqual(harness.sha256_file(m.path(rel)), digest, rel)

    def check_warm_then_read(self, m):
        self.server.reset_stats()
        r = warmup(m.path("train"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("done", r.stderr)
        self.assertIn("%d file(s) fetched" % len(self.manifest), r.stderr)
        self.assertEqual(self.server.stats().get("GET", 0), len(self.manifest))
        self.read_everything(m)
        self.assertEqual(self.server.stats().get("GET", 0), len(self.manifest))

    def test_warmup_into_disk_cache(self):
        m = self.mount("--cache", os.path.join(self.tmp, "cache"))
        try:
            self.check_warm_then_read(m)
            # A second warm-up finds everything cached: no GET.
            self.server.reset_stats()
            r = warmup(m.path("train"))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("%d already cached" % len(self.manifest), r.stderr)
            self.assertEqual(self.server.stats().get("GET", 0), 0)
        finally:
            m.close()

    def test_warmup_of_a_large_file_into_disk_cache(self):
        m = self.mount("--cache", os.path.join(self.tmp, "cache"))
        try:
            self.server.reset_stats()
            r = warmup(m.path("large"))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("1 file(s) fetched", r.stderr)
            self.assertEqual(self.server.stats().get("GET", 0), 3)  # 20 MiB in 8 MiB parts
            self.assertEqual(harness.sha256_file(m.path("large", "blob.bin")), self.large_digest)
            self.assertEqual(self.server.stats().get("GET", 0), 3)
        finally:
            m.close()

    def test_warmup_with_a_manifest_sends_no_list_and_fetches_only_its_entries(self):
        first_class = sorted({os.path.dirname(rel) for rel in self.manifest})[0]
        named = sorted(rel for rel in self.manifest if os.path.dirname(rel) == first_class)
        path = os.path.join(self.tmp, "manifest.tsv")
        with open(path, "w") as f:
            for rel in named:
                f.write("%s\t%d\n" % (rel, self.manifest[rel][0]))
        self.server.reset_stats()
        m = self.mount("--cache", os.path.join(self.tmp, "cache"), "--manifest", path)
        try:
            r = warmup(m.path("train"))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("%d file(s) fetched" % len(named), r.stderr)
            stats = self.server.stats()
            self.assertEqual(stats.get("LIST", 0), 0, stats)
            self.assertEqual(stats.get("GET", 0) - 1, len(named), stats)  # + the start-up probe
        finally:
            m.close()

    def test_warmup_into_memory(self):
        m = self.mount()
        try:
            self.check_warm_then_read(m)
        finally:
            m.close()

    def test_warmup_stops_at_the_cache_budget(self):
        budget = self.total // 3
        m = self.mount("--cache", os.path.join(self.tmp, "cache"), "--max-cache-size",
                       str(budget))
        try:
            self.server.reset_stats()
            r = warmup(m.path("train"))
            self.assertEqual(r.returncode, 3, r.stderr)
            self.assertIn("budget-full", r.stderr)
            self.assertIn("--max-cache-size", r.stderr)
            gets = self.server.stats().get("GET", 0)
            self.assertGreater(gets, 0)
            self.assertLess(gets, len(self.manifest))
            self.read_everything(m)  # still correct, on demand for the rest
        finally:
            m.close()

    def test_detach_and_status(self):
        m = self.mount("--cache", os.path.join(self.tmp, "cache"))
        try:
            r = warmup("--detach", "--concurrency", "16", m.path("train"))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("started", r.stdout)

            def done():
                s = warmup("--status", m.mountpoint)
                self.assertEqual(s.returncode, 0, s.stderr)
                return " done " in s.stdout
            harness.wait_for(done, 120, "the detached warm-up to finish")
            s = warmup("--status", m.mountpoint)
            self.assertIn("%d/%d files" % (len(self.manifest), len(self.manifest)), s.stdout)
        finally:
            m.close()

    def test_bad_usage(self):
        r = warmup(self.tmp)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not in an ossmount mount", r.stderr)
        r = warmup()
        self.assertEqual(r.returncode, 2)
        r = warmup("--concurrency", "0", self.tmp)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--concurrency", r.stderr)

    def test_prefetch_on_list(self):
        m = self.mount("--cache", os.path.join(self.tmp, "cache"), "--prefetch-on-list")
        try:
            # The root listing made at mount time warmed the root's own files (MANIFEST.tsv)
            # already: let that finish before counting.
            def idle():
                jobs = ossmount_hints._call(m.mountpoint, {"command": "warmup-status"})["jobs"]
                return all(j["state"] not in ("listing", "running") for j in jobs)
            harness.wait_for(idle, 60, "the mount-time warm-up")
            self.server.reset_stats()
            for d in sorted({os.path.dirname(rel) for rel in self.manifest}):
                os.listdir(m.path(d))
            harness.wait_for(lambda: self.server.stats().get("GET", 0) >= len(self.manifest),
                             120, "the listed directories to be warmed")
            time.sleep(0.5)  # nothing more must come
            self.assertEqual(self.server.stats().get("GET", 0), len(self.manifest))
            self.read_everything(m)
            self.assertEqual(self.server.stats().get("GET", 0), len(self.manifest))
        finally:
            m.close()


if __name__ == "__main__":
    harness.main()
