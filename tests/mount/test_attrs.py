"""Attributes and mount options: owner, modes, mtime, statfs, default_permissions,
allow_other only when asked. docs/SEMANTICS.md "Tree" and "Mount options".
"""
import os
import stat
import tempfile
import unittest

import harness


def mount_options(path):
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == path:
                sep = fields.index("-")
                return set(fields[5].split(",")) | set(fields[sep + 3].split(","))
    raise AssertionError("%s is not mounted" % path)


class AttrsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="attrs-data-")
        os.makedirs(os.path.join(cls.root, "bucket", "dir"))
        cls.file = os.path.join(cls.root, "bucket", "dir", "f.bin")
        with open(cls.file, "wb") as f:
            f.write(b"z" * 1234)
        os.utime(cls.file, (1600000000, 1600000000))
        cls.server = harness.TestServer(cls.root, bucket="bucket")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_defaults(self):
        m = harness.Mount(self.server)
        try:
            st = os.stat(m.path("dir", "f.bin"))
            self.assertEqual(st.st_size, 1234)
            self.assertEqual(int(st.st_mtime), 1600000000)
            self.assertEqual(stat.S_IMODE(st.st_mode), 0o444)
            self.assertTrue(stat.S_ISREG(st.st_mode))
            self.assertEqual((st.st_uid, st.st_gid), (os.getuid(), os.getgid()))
            d = os.stat(m.path("dir"))
            self.assertTrue(stat.S_ISDIR(d.st_mode))
            self.assertEqual(stat.S_IMODE(d.st_mode), 0o555)
            opts = mount_options(m.mountpoint)
            self.assertIn("ro", opts)
            self.assertIn("default_permissions", opts)
            self.assertNotIn("allow_other", opts)
            vfs = os.statvfs(m.mountpoint)
            self.assertEqual(vfs.f_namemax, 255)
            self.assertGreater(vfs.f_bsize, 0)
            self.assertGreater(vfs.f_blocks, 0)
        finally:
            m.close()

    def test_owner_modes_and_allow_other(self):
        m = harness.Mount(self.server, args=["--uid", "1234", "--gid", "5678", "--file-mode",
                                             "0440", "--dir-mode", "0750", "--allow-other"])
        try:
            st = os.stat(m.path("dir", "f.bin"))
            self.assertEqual((st.st_uid, st.st_gid), (1234, 5678))
            self.assertEqual(stat.S_IMODE(st.st_mode), 0o440)
            self.assertEqual(stat.S_IMODE(os.stat(m.path("dir")).st_mode), 0o750)
            opts = mount_options(m.mountpoint)
            self.assertIn("allow_other", opts)
            # allow_other never drops the kernel's permission checks.
            self.assertIn("default_permissions", opts)
        finally:
            m.close()

    def test_fstab_option_form(self):
        # What mount.fuse3 runs for an fstab line: options in one -o list, generic ones ignored.
        m = harness.Mount(self.server, args=[
            "-o", "metadata_ttl=indefinite,file_mode=0400,_netdev,nofail,rw,nodev,nosuid,"
                  "x-systemd.automount"])
        try:
            self.assertEqual(stat.S_IMODE(os.stat(m.path("dir", "f.bin")).st_mode), 0o400)
            with open(m.path("dir", "f.bin"), "rb") as f:
                self.assertEqual(f.read(), b"z" * 1234)
        finally:
            m.close()


if __name__ == "__main__":
    harness.main()
