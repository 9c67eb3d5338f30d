"""Symbolic links through a real mount: ln -s, readlink, ls -l, find -L, a dangling link, a link
to a directory, mv and rm of a link, and what a fresh mount shows.

docs/SEMANTICS.md "Writing", the rows on links. On OSS a link is a symlink object (PutSymlink),
and listings say which objects are links, so a fresh mount shows them with no HEAD. S3 has no
links, and its listings cannot tell a link stored as s3fs stores one from a file, so ln -s
there is EPERM.
"""
import errno
import os
import subprocess
import tempfile

import harness
from test_writes import WriteMountCase, failed_fuse_ops


def ls_l(path):
    out = subprocess.run(["ls", "-l", path], check=True, capture_output=True, text=True).stdout
    return {line.split()[-1] if "->" not in line else line.split()[-3]: line
            for line in out.splitlines()[1:]}


class Links:
    def make_tree(self, mnt):
        os.makedirs(mnt.path("models", "v1"))
        with open(mnt.path("models", "v1", "weights.bin"), "wb") as f:
            f.write(b"W" * 1000)
        # The Hugging Face hub cache's layout: snapshots link to blobs, relatively.
        os.symlink("v1/weights.bin", mnt.path("models", "latest.bin"))
        os.symlink("v1", mnt.path("models", "current"))
        os.symlink("/nonexistent/target", mnt.path("models", "dangling"))

    def check_tree(self, mnt):
        self.assertEqual(os.readlink(mnt.path("models", "latest.bin")), "v1/weights.bin")
        with open(mnt.path("models", "latest.bin"), "rb") as f:
            self.assertEqual(f.read(), b"W" * 1000)
        self.assertEqual(os.listdir(mnt.path("models", "current")), ["weights.bin"])
        self.assertEqual(os.readlink(mnt.path("models", "dangling")), "/nonexistent/target")
        self.assertFalse(os.path.exists(mnt.path("models", "dangling")))
        self.assertTrue(os.path.islink(mnt.path("models", "dangling")))
        listing = ls_l(mnt.path("models"))
        self.assertTrue(listing["latest.bin"].startswith("lrwxrwxrwx"), listing)
        self.assertIn("latest.bin -> v1/weights.bin", listing["latest.bin"])
        self.assertTrue(listing["current"].startswith("l"), listing)
        found = subprocess.run(["find", "-L", mnt.path("models"), "-type", "f"], check=True,
                               capture_output=True, text=True).stdout.split()
        self.assertEqual(sorted(os.path.relpath(p, mnt.path("models")) for p in found),
                         ["current/weights.bin", "latest.bin", "v1/weights.bin"])

    def test_links_work_on_the_mount_that_made_them(self):
        self.make_tree(self.mnt)
        self.check_tree(self.mnt)
        # mv and rm of a link move and remove the link, never its target.
        os.rename(self.mnt.path("models", "latest.bin"), self.mnt.path("models", "best.bin"))
        self.assertEqual(os.readlink(self.mnt.path("models", "best.bin")), "v1/weights.bin")
        os.unlink(self.mnt.path("models", "dangling"))
        self.assertEqual(sorted(os.listdir(self.mnt.path("models"))), ["best.bin", "current", "v1"])
        with open(self.mnt.path("models", "v1", "weights.bin"), "rb") as f:
            self.assertEqual(f.read(), b"W" * 1000)

    def test_a_link_over_an_existing_name_is_eexist(self):
        self.make_tree(self.mnt)
        with self.assertRaises(OSError) as e:
            os.symlink("elsewhere", self.mnt.path("models", "latest.bin"))
        self.assertEqual(e.exception.errno, errno.EEXIST)
        with self.assertRaises(OSError) as e:
            os.symlink("elsewhere", self.mnt.path("models", "v1"))
        self.assertEqual(e.exception.errno, errno.EEXIST)

    def test_readlink_of_a_file_is_einval_and_hard_links_are_eperm(self):
        self.make_tree(self.mnt)
        with self.assertRaises(OSError) as e:
            os.readlink(self.mnt.path("models", "v1", "weights.bin"))
        self.assertEqual(e.exception.errno, errno.EINVAL)
        with self.assertRaises(OSError) as e:
            os.link(self.mnt.path("models", "v1", "weights.bin"), self.mnt.path("hard"))
        self.assertEqual(e.exception.errno, errno.EPERM)


class OssLinksTest(Links, WriteMountCase):
    def setUp(self):
        super().setUp()
        self.mnt = self.mount()

    def test_a_fresh_mount_shows_links_with_no_head(self):
        self.make_tree(self.mnt)
        before = self.server.stats()
        fresh = self.fresh_mount()
        self.check_tree(fresh)
        after = self.server.stats()
        self.assertEqual(after["HEAD"] - before["HEAD"], 0)
        # One GetSymlink per link read, at most (the kernel keeps targets).
        self.assertLessEqual(after["GET_SYMLINK"] - before["GET_SYMLINK"], 6)
        self.assertEqual(failed_fuse_ops(fresh.output()), [])

    def test_a_read_only_mount_refuses_links_with_erofs(self):
        ro = self.mount(writes=False)
        with self.assertRaises(OSError) as e:
            os.symlink("x", ro.path("l"))
        self.assertEqual(e.exception.errno, errno.EROFS)


class S3LinksTest(harness.S3MountCase):
    def test_s3_refuses_links_with_eperm_and_leaves_nothing(self):
        mnt = self.mount("--allow-writes", "--upload-journal", tempfile.mkdtemp(prefix="journal-"))
        with self.assertRaises(OSError) as e:
            os.symlink("target", mnt.path("link"))
        self.assertEqual(e.exception.errno, errno.EPERM)
        self.assertEqual(os.listdir(mnt.mountpoint), [])
        self.assertIn("S3 listings cannot tell a link from a file", mnt.output())


if __name__ == "__main__":
    harness.main()
