"""FUSE passthrough of cached files through a real mount.

With --cache DIR and a kernel that offers passthrough (Linux 6.9+), a file whose bytes the
disk cache holds, opened for the first time in a mount, is answered with a verified cache
file the kernel reads itself. Checked here: after a remount every file is read that way
with zero GETs and every byte right; --no-passthrough (and --audit-log) turn it off;
concurrent opens of one file share one backing file; an inode already open the normal way
is never switched (the kernel would fail the open); a file read the normal way in this
mount stays with its page cache; a corrupt cache file is refetched, never handed out;
mmap works. On a kernel without passthrough the tests are skipped (exit 77).
"""
import json
import mmap
import os
import threading

import harness


def stats(mountpoint):
    return json.loads(harness.stats_json(mountpoint).stdout)


def counter(doc, name):
    return harness.metric(doc, "counters", name)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


class PassthroughTest(harness.ImageCacheTestCase):
    DATASET = ("passthrough-images", 3, 20, 11)

    def mount(self, *extra, ttl="indefinite"):
        m = harness.Mount(self.server, args=["--cache", self.cache, "--metadata-ttl", ttl] +
                          list(extra))
        harness.wait_for(lambda: "FUSE passthrough" in m.output(), 30, "the passthrough log line")
        return m

    def skip_unless_on(self, m):
        log = m.output()
        if "FUSE passthrough off: this kernel does not offer" in log:
            m.close()
            self.skipTest("this kernel does not offer FUSE passthrough")
        self.assertIn("FUSE passthrough on", log)

    def source(self, rel):
        return read_bytes(os.path.join(self.src, rel))

    def read_everything(self, m):
        for rel, (size, digest) in sorted(self.manifest.items()):
            self.assertEqual(harness.sha256_file(m.path(rel)), digest, rel)

    def fill_cache(self):
        """One mount that reads everything (GETs fill the cache), then unmounts."""
        m = self.mount()
        try:
            self.skip_unless_on(m)
            self.read_everything(m)
            self.assertEqual(counter(stats(m.mountpoint), "ossmount_passthrough_opens_total"), 0)
            self.assertEqual(m.unmount(), 0, m.output())
        finally:
            m.close()

    def remount_with_cached(self, index):
        """Fills the cache, mounts again; returns (file, its source bytes, the mount)."""
        self.fill_cache()
        rel = sorted(self.manifest)[index]
        return rel, self.source(rel), self.mount()

    def test_after_a_remount_cached_files_are_read_by_the_kernel(self):
        self.fill_cache()
        m = self.mount()
        try:
            self.server.reset_stats()
            self.read_everything(m)
            doc = stats(m.mountpoint)
            self.assertEqual(counter(doc, "ossmount_passthrough_opens_total"), len(self.manifest))
            self.assertEqual(counter(doc, "ossmount_read_bytes_total"), 0)  # no READ reached us
            self.assertEqual(self.server.stats().get("GET", 0), 0)
            # A second pass in the same mount: still passthrough (nothing is page-cached).
            self.read_everything(m)
            self.assertEqual(counter(stats(m.mountpoint), "ossmount_passthrough_opens_total"),
                             2 * len(self.manifest))
            self.assertEqual(self.server.stats().get("GET", 0), 0)
        finally:
            m.close()

    def test_no_passthrough_and_audit_log_turn_it_off(self):
        self.fill_cache()
        for extra, reason in ((["--no-passthrough"], "turned off (--no-passthrough)"),
                              (["--audit-log", os.path.join(self.tmp, "audit.log")], "--audit-log counts")):
            m = harness.Mount(self.server, args=["--cache", self.cache, "--metadata-ttl",
                                                 "indefinite"] + extra)
            try:
                self.read_everything(m)
                doc = stats(m.mountpoint)
                self.assertEqual(counter(doc, "ossmount_passthrough_opens_total"), 0, extra)
                self.assertGreater(counter(doc, "ossmount_read_bytes_total"), 0, extra)
                self.assertNotIn("FUSE passthrough on", m.output())
                self.assertIn("FUSE passthrough off: " + reason, m.output())
            finally:
                m.close()

    def test_concurrent_opens_of_one_file_share_its_backing_file(self):
        rel, want, m = self.remount_with_cached(0)
        try:
            first = open(m.path(rel), "rb")
            second = open(m.path(rel), "rb")
            self.assertEqual(second.read(), want)
            second.close()
            self.assertEqual(first.read(), want)
            errors = []

            def reader():
                try:
                    for _ in range(40):
                        if read_bytes(m.path(rel)) != want:
                            errors.append("wrong bytes")
                except OSError as e:
                    errors.append(repr(e))

            threads = [threading.Thread(target=reader) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            first.close()
            self.assertEqual(errors, [])
            self.assertEqual(counter(stats(m.mountpoint), "ossmount_passthrough_opens_total"),
                             2 + 8 * 40)
        finally:
            m.close()

    def test_a_file_open_the_normal_way_is_never_switched(self):
        rel = sorted(self.manifest)[1]
        want = self.source(rel)
        m = self.mount()
        try:
            self.skip_unless_on(m)
            held = open(m.path(rel), "rb")  # not cached yet: the normal way, one GET
            self.assertEqual(held.read(), want)
            harness.wait_for(lambda: self.block_files(), 30,
                             "the block in the disk cache")
            # Cached now, but the inode is open in page-cache mode: a passthrough open of it
            # would fail in the kernel (EIO). Both while it is open and after it is closed
            # (the page cache stays valid), opens take the normal way.
            self.assertEqual(read_bytes(m.path(rel)), want)
            held.close()
            self.assertEqual(read_bytes(m.path(rel)), want)
            self.assertEqual(counter(stats(m.mountpoint), "ossmount_passthrough_opens_total"), 0)
        finally:
            m.close()

    def test_an_inode_open_the_normal_way_is_not_switched_with_a_finite_ttl(self):
        # With a finite TTL opens drop the page cache, so only the open-mode rule keeps a
        # second open of a normally open file from passthrough (and the kernel's EIO).
        rel = sorted(self.manifest)[3]
        want = self.source(rel)
        m = self.mount(ttl="60")
        try:
            self.skip_unless_on(m)
            held = open(m.path(rel), "rb")
            self.assertEqual(held.read(), want)
            harness.wait_for(lambda: self.block_files(), 30,
                             "the block in the disk cache")
            self.assertEqual(read_bytes(m.path(rel)), want)
            self.assertEqual(counter(stats(m.mountpoint), "ossmount_passthrough_opens_total"), 0)
            held.close()
            # Nothing open the normal way any more: the next open may be passthrough.
            harness.wait_for(
                lambda: read_bytes(m.path(rel)) == want and
                counter(stats(m.mountpoint), "ossmount_passthrough_opens_total") >= 1, 10,
                "a passthrough open once the normal ones were released")
        finally:
            m.close()

    def test_a_corrupt_cache_file_is_refetched_not_handed_to_the_kernel(self):
        self.fill_cache()
        blocks = self.block_files()
        self.assertEqual(len(blocks), len(self.manifest))
        victim = os.path.join(self.cache, blocks[len(blocks) // 2])
        with open(victim, "r+b") as f:
            f.seek(500)
            b = f.read(1)
            f.seek(500)
            f.write(bytes([b[0] ^ 0x01]))
        m = self.mount()
        try:
            self.server.reset_stats()
            self.read_everything(m)  # every byte checked against the source
            self.assertEqual(self.server.stats().get("GET", 0), 1)
            doc = stats(m.mountpoint)
            self.assertEqual(counter(doc, "ossmount_passthrough_opens_total"),
                             len(self.manifest) - 1)
        finally:
            m.close()

    def test_mmap_of_a_passthrough_file(self):
        rel, want, m = self.remount_with_cached(2)
        try:
            with open(m.path(rel), "rb") as f:
                with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                    self.assertEqual(mm[:], want)
            self.assertEqual(counter(stats(m.mountpoint), "ossmount_passthrough_opens_total"), 1)
        finally:
            m.close()


if __name__ == "__main__":
    harness.main()
