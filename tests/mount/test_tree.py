"""A mounted bucket shows exactly the source tree, byte for byte.

Usage: test_tree.py oss|s3
  oss: the project's object server (OSS protocol, signature V4) serving the generated tree.
  s3:  s3rver (third-party S3 server), loaded with the same tree through ossmount-client.
Checks (docs/SEMANTICS.md "Tree", "Reads"): every path, type and size; every byte; find,
ls -R, du -sb and a normalised tar stream agree with the source; random preads of the
large files match; ioctls answer ENOTTY; the daemon exits 0 after fusermount3 -u.
"""
import errno
import fcntl
import os
import random
import struct
import subprocess
import sys
import termios
import unittest

import harness

MODE = sys.argv.pop(1) if len(sys.argv) > 1 and sys.argv[1] in ("oss", "s3") else "oss"


def source_entries(root):
    entries = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for d in dirnames:
            entries[os.path.normpath(os.path.join(rel, d))] = ("d", 0)
        for f in filenames:
            p = os.path.join(dirpath, f)
            entries[os.path.normpath(os.path.join(rel, f))] = ("f", os.path.getsize(p))
    return entries


def run(cmd, cwd):
    return subprocess.run(cmd, cwd=cwd, shell=True, check=True, capture_output=True,
                          timeout=600).stdout


class TreeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.src = harness.ensure_dataset("mixed", "mixed")
        if MODE == "oss":
            cls.server = harness.TestServer(os.path.dirname(cls.src), bucket="mixed")
            args = ["--signature-version", "v4"]
        else:
            cls.server = harness.S3rver(bucket="mixed")
            harness.client(cls.server, "put-tree", cls.src)
            # s3rver omits folders that hold only folders unless a marker object exists.
            empty = os.path.join(harness.DATA_DIR, "empty-marker")
            open(empty, "wb").close()
            for rel, (kind, _) in source_entries(cls.src).items():
                if kind == "d":
                    harness.client(cls.server, "put", rel + "/", empty)
            args = []
        cls.mount = harness.Mount(cls.server, args=args + ["--metadata-ttl", "indefinite"])
        cls.mnt = cls.mount.mountpoint

    @classmethod
    def tearDownClass(cls):
        cls.mount.close()
        cls.server.stop()

    def test_01_paths_types_sizes(self):
        self.assertEqual(source_entries(self.mnt), source_entries(self.src))

    def test_02_every_byte(self):
        manifest = harness.read_manifest(self.src)
        self.assertGreater(len(manifest), 1000)
        for rel, (size, digest) in manifest.items():
            p = os.path.join(self.mnt, rel)
            self.assertEqual(os.path.getsize(p), size, rel)
            self.assertEqual(harness.sha256_file(p), digest, rel)

    def test_03_find_ls_du_tar(self):
        self.assertEqual(run("find . | sort", self.mnt), run("find . | sort", self.src))
        self.assertEqual(run("ls -R", self.mnt), run("ls -R", self.src))
        run("ls -lR >/dev/null", self.mnt)
        files = [v for v in source_entries(self.src).values() if v[0] == "f"]
        dirs = [v for v in source_entries(self.src).values() if v[0] == "d"]
        du = int(run("du -sb .", self.mnt).split()[0])
        dir_size = os.stat(self.mnt).st_size
        self.assertEqual(du, sum(s for _, s in files) + (len(dirs) + 1) * dir_size)
        tar = ("tar c --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner "
               "--mode=a=rX,u+w --format=gnu . | sha256sum")
        self.assertEqual(run(tar, self.mnt), run(tar, self.src))

    def test_04_random_pread(self):
        rng = random.Random(5)
        for name in ("large.bin", "medium.bin", "small.bin", "one.bin", "empty.bin"):
            size = os.path.getsize(os.path.join(self.src, name))
            with open(os.path.join(self.src, name), "rb") as a, \
                    open(os.path.join(self.mnt, name), "rb") as b:
                for _ in range(60):
                    off = rng.randrange(0, size + 2)
                    n = rng.choice([1, 7, 4096, 65536, 131072, 1 << 20, 3 << 20])
                    self.assertEqual(os.pread(b.fileno(), n, off), os.pread(a.fileno(), n, off),
                                     "%s at %d+%d" % (name, off, n))

    def test_05_read_only(self):
        for op in (lambda: open(os.path.join(self.mnt, "new.txt"), "w"),
                   lambda: os.mkdir(os.path.join(self.mnt, "newdir")),
                   lambda: os.unlink(os.path.join(self.mnt, "one.bin")),
                   lambda: os.rename(os.path.join(self.mnt, "one.bin"),
                                     os.path.join(self.mnt, "two.bin")),
                   lambda: os.chmod(os.path.join(self.mnt, "one.bin"), 0o777),
                   lambda: open(os.path.join(self.mnt, "one.bin"), "r+")):
            with self.assertRaises(OSError) as cm:
                op()
            self.assertEqual(cm.exception.errno, 30, cm.exception)  # EROFS

    def test_06_ioctls_are_not_supported(self):
        # Python's open() asks isatty() (TCGETS) of every file it opens. The kernel sends
        # every ioctl to the daemon, which implements none; the kernel reports that as ENOTTY.
        path = os.path.join(self.mnt, "one.bin")
        fd = os.open(path, os.O_RDONLY)
        try:
            self.assertFalse(os.isatty(fd))
            fs_ioc_getflags = 0x80086601  # what lsattr asks
            for cmd in (termios.TCGETS, fs_ioc_getflags):
                with self.assertRaises(OSError) as cm:
                    fcntl.ioctl(fd, cmd, bytes(64))
                self.assertEqual(cm.exception.errno, errno.ENOTTY, (hex(cmd), cm.exception))
            # FIONREAD is answered by the kernel itself: the bytes left to read.
            left = fcntl.ioctl(fd, termios.FIONREAD, struct.pack("i", 0))
            self.assertEqual(struct.unpack("i", left)[0], os.path.getsize(path))
        finally:
            os.close(fd)
        with open(path, "rb") as f, open(os.path.join(self.src, "one.bin"), "rb") as want:
            self.assertEqual(f.read(), want.read())  # the read after isatty() is whole

    def test_99_unmount_exits_zero(self):
        self.assertEqual(self.mount.unmount(), 0, self.mount.output())


if __name__ == "__main__":
    harness.main()
