"""The disk cache (--cache DIR) through a real mount.

Mounts the bundled test server with --cache DIR --metadata-ttl indefinite, reads every file
of an ImageFolder-like tree, unmounts, remounts with the same DIR and reads everything
again: the second mount costs zero GETs at the server and every byte matches the source.
A block file corrupted between mounts is detected and refetched with one GET. A cache of
an older version, every block at the top level, is moved into the 256 subdirectories by the
next start, which says so. On a small file system (a tmpfs) the cache leaves
--cache-min-free available, and gives way when another program fills the disk. The cache directory and its subdirectories are 0700 and its
files 0600; a directory others can write to fails the start, and
so does one that another live mount uses as its cache.
"""
import os
import stat
import subprocess
import tempfile

import harness


class DiskCacheTest(harness.ImageCacheTestCase):
    DATASET = ("cache-images", 4, 25, 7)

    def mount(self, *args):
        return harness.Mount(self.server,
                             args=["--cache", self.cache, "--metadata-ttl", "indefinite"] +
                             list(args))

    def read_everything(self, m):
        """Reads every file through the mount and checks its bytes against the manifest."""
        self.read_everything_under(m.mountpoint)

    def read_everything_under(self, mountpoint):
        for rel, (size, digest) in sorted(self.manifest.items()):
            path = os.path.join(mountpoint, rel)
            self.assertEqual(os.path.getsize(path), size, rel)
            self.assertEqual(harness.sha256_file(path), digest, rel)

    def start_in_background(self, mnt):
        """Mounts on `mnt` with this test's cache as a user types it (no -f): the command
        returns once the daemon serves, or fails; returns the finished command."""
        cmd = harness.mount_command(self.server, mnt, ["--cache", self.cache,
                                                       "--metadata-ttl", "indefinite"],
                                    foreground=False)
        return subprocess.run(cmd, env=self.server.env(), capture_output=True, text=True,
                              timeout=120)

    def one_mount_pass(self):
        """Mounts, reads everything, unmounts; returns the server's request counts."""
        m = self.mount()
        try:
            self.server.reset_stats()
            self.read_everything(m)
            stats = self.server.stats()
            self.assertEqual(m.unmount(), 0, m.output())
            return stats, m.output()
        finally:
            m.close()

    def test_remount_with_same_cache_costs_zero_gets(self):
        first, _ = self.one_mount_pass()
        self.assertEqual(first.get("GET", 0), len(self.manifest), first)
        self.assertEqual(len(self.block_files()), len(self.manifest))

        second, log = self.one_mount_pass()
        self.assertEqual(second.get("GET", 0), 0, second)
        self.assertEqual(second.get("HEAD", 0), 0, second)
        self.assertIn("%d hits" % len(self.manifest), log)

    def test_corrupt_block_is_refetched_with_one_get(self):
        self.one_mount_pass()
        blocks = self.block_files()
        self.assertEqual(len(blocks), len(self.manifest))
        victim = os.path.join(self.cache, blocks[len(blocks) // 2])
        with open(victim, "r+b") as f:
            f.seek(os.path.getsize(victim) - 1000)
            b = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([b[0] ^ 0x5A]))

        stats, log = self.one_mount_pass()  # read_everything checks every byte
        self.assertEqual(stats.get("GET", 0), 1, stats)
        self.assertIn("1 corrupt", log)
        # Stored again, intact: the next mount needs nothing.
        stats, _ = self.one_mount_pass()
        self.assertEqual(stats.get("GET", 0), 0, stats)

    def test_the_cache_leaves_min_free_on_its_file_system(self):
        """The cache on a 16 MiB tmpfs that another program already holds 4 MiB of, with
        --cache-min-free 6MiB: reading the whole tree (about 11 MB) leaves at least 6 MiB
        available, the cache holding the most recent blocks. When the other program then
        writes 4 MiB more, the cache gives way by itself within seconds, with no read. Every
        byte read stays right, and the log and the metrics say what happened."""
        if os.geteuid() != 0:
            self.skipTest("mounting a tmpfs needs root")
        disk = os.path.join(self.tmp, "disk")
        os.mkdir(disk)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", disk],
                       check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", disk], check=False)
        self.cache = os.path.join(disk, "cache")
        floor = 6 << 20
        slack = 256 << 10  # page rounding of the blocks being written at that moment

        def available():
            st = os.statvfs(disk)
            return st.f_bavail * st.f_frsize

        def write_other(name, size):
            with open(os.path.join(disk, name), "wb") as f:
                f.write(os.urandom(size))

        write_other("other-1", 4 << 20)
        total = sum(size for size, _ in self.manifest.values())
        self.assertGreater(total, available() - floor + (2 << 20))  # would not all fit

        m = harness.Mount(self.server, args=["--cache", self.cache, "--metadata-ttl",
                                             "indefinite", "--cache-min-free", "6MiB"])
        try:
            self.read_everything(m)
            harness.wait_for(lambda: self.space_evictions(m) > 0, 30, "evictions for space")
            self.assertGreaterEqual(available(), floor - slack)
            held = sum(os.path.getsize(os.path.join(self.cache, b)) for b in self.block_files())
            self.assertLess(held, total)
            self.assertGreater(held, 2 << 20)  # the cache is still used up to its room

            # Another program takes 4 MiB more: less than the floor is left, until the cache
            # gives way (checked every second, with no read).
            evicted_before = self.space_evictions(m)
            write_other("other-2", 4 << 20)
            harness.wait_for(lambda: available() >= floor - slack, 30,
                             "the cache to give way (available %d)" % available())
            self.assertGreater(self.space_evictions(m), evicted_before)
            self.read_everything(m)  # what was evicted is fetched again
            self.assertGreaterEqual(available(), floor - slack)
            self.assertEqual(m.unmount(), 0, m.output())
        finally:
            m.close()
        log = m.output()
        self.assertEqual(log.count("--cache-min-free keeps 6.0 MiB free on the file system of "
                                   "'%s'" % self.cache), 1, log)  # said once a minute at most
        self.assertIn("the cache gives way to other files", log)
        self.assertRegex(log, r"evicted \([1-9][0-9]* for free space\)")

    def space_evictions(self, m):
        return harness.mount_metric(m.mountpoint, "counters",
                                    "ossmount_disk_cache_space_evictions_total")

    def test_permissions(self):
        self.one_mount_pass()
        self.assertEqual(stat.S_IMODE(os.stat(self.cache).st_mode), 0o700)
        blocks = self.block_files()
        self.assertTrue(blocks)
        for rel in blocks:
            self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.cache, rel)).st_mode), 0o600,
                             rel)
        subdirs = os.listdir(self.cache)
        self.assertEqual(len(subdirs), 256, subdirs)  # 00 to ff, nothing else at the top
        for n in subdirs:
            self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.cache, n)).st_mode), 0o700, n)

    def test_cache_dir_writable_by_others_fails_the_start(self):
        os.mkdir(self.cache, 0o700)
        os.chmod(self.cache, 0o777)
        with self.assertRaises(AssertionError) as ctx:
            self.mount()
        message = str(ctx.exception)
        self.assertIn("exited 1", message)
        self.assertIn("chmod 700", message)

    def test_a_second_mount_on_the_same_cache_is_refused(self):
        """Two live mounts cannot share DIR (each would keep its own index and budget, and
        sweep the other's temporary files). The second start, here in the background as a
        user types it, says at once that it waits for the holder, waits its 10 s for the
        first to let go, then fails naming the holder and mounts nothing; the first keeps
        serving. Once the first has exited, a mount on the same DIR starts without waiting."""
        first = self.mount()
        try:
            rel = sorted(self.manifest)[0]
            self.assertEqual(harness.sha256_file(first.path(rel)), self.manifest[rel][1])
            mnt = tempfile.mkdtemp(prefix="ossmount-second-")
            try:
                r = self.start_in_background(mnt)
            finally:
                harness.force_unmount(mnt)
            holder = "'%s' is in use by pid %d, ossmount" % (self.cache, first.daemon_pid())
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertFalse(harness.is_mounted(mnt))
            lines = r.stderr.splitlines()
            self.assertEqual(len(lines), 2, r.stderr)
            self.assertIn(holder + "; waiting up to 10 s for it to let go", lines[0])
            self.assertIn(holder + " and was not released within 10 s", lines[1])
            self.assertIn("give each mount its own --cache", lines[1])
            self.read_everything(first)
            self.assertEqual(first.unmount(), 0, first.output())
        finally:
            first.close()
        stats, log = self.one_mount_pass()
        self.assertEqual(stats.get("GET", 0), 0, stats)
        self.assertNotIn("in use by", log)

    def test_a_cache_of_an_older_version_is_moved_into_subdirectories(self):
        """A cache written before the 256 subdirectories (every block at the top level) is
        moved into them by the next start, which says so first, here in the background as a
        user types it; every file is then read from it with zero GETs."""
        self.one_mount_pass()
        blocks = self.block_files()
        self.assertEqual(len(blocks), len(self.manifest))
        for rel in blocks:
            os.rename(os.path.join(self.cache, rel),
                      os.path.join(self.cache, os.path.basename(rel)))
        for sub in os.listdir(self.cache):
            if os.path.isdir(os.path.join(self.cache, sub)):
                os.rmdir(os.path.join(self.cache, sub))
        self.assertEqual(self.block_files(), [])

        mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(mnt)
        try:
            r = self.start_in_background(mnt)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("moving the blocks in '%s' into its 256 subdirectories" % self.cache,
                          r.stderr)
            self.server.reset_stats()
            self.read_everything_under(mnt)
            self.assertEqual(self.server.stats().get("GET", 0), 0)
        finally:
            harness.force_unmount(mnt)
        self.assertEqual(self.block_files(), blocks)
        self.assertEqual([n for n in os.listdir(self.cache) if n.endswith(".blk")], [])

    def test_a_killed_daemon_leaves_no_lock_behind(self):
        """kill -9 releases the cache directory with the process: a new mount on it starts
        at once and reads every byte right."""
        first = self.mount("--no-supervise")  # a supervised daemon would be started again
        try:
            self.read_everything(first)
            first.proc.kill()
            first.proc.wait(10)
        finally:
            first.close()  # detaches the dead mount
        stats, log = self.one_mount_pass()
        self.assertNotIn("in use by", log)
        self.assertLessEqual(stats.get("GET", 0), len(self.manifest), stats)


if __name__ == "__main__":
    harness.main()
