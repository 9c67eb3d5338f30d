"""Modes, owners and times kept (--posix-metadata) through a real mount, and what it costs.

docs/SEMANTICS.md "Writing", the rows on --posix-metadata. With the option, each file's mode,
uid, gid and mtime are read from its user metadata (x-oss-meta-mode etc., the names ossfs and
s3fs use; one HEAD per file) and chmod, chown, utime and cp -p store them there (a copy of the
object onto itself, or with the upload of a file being written). Without it, a listing and a
stat of every file cost no HEAD, and those calls succeed without effect.
"""
import base64
import errno
import json
import os
import subprocess
import tempfile
import urllib.parse

import harness
from test_writes import WriteMountCase, failed_fuse_ops


def head(server, key):
    out = harness.client(server, "head", key).stdout.decode()
    return dict(line.split("\t", 1) for line in out.splitlines())


def s3fs_xattr_header(attrs):
    """The "xattr" user metadata as s3fs and ossfs write it."""
    doc = {name: base64.b64encode(value).decode() for name, value in attrs.items()}
    return urllib.parse.quote(json.dumps(doc, separators=(",", ":")), safe="")


def stored_xattrs(server, key):
    header = head(server, key).get("meta-xattr")
    if header is None:
        return {}
    doc = json.loads(urllib.parse.unquote(header))
    return {name: base64.b64decode(value) for name, value in doc.items()}


class PosixMountCase(WriteMountCase):
    """A writable mount with --posix-metadata, and fresh read-only ones that trust no cache."""
    def setUp(self):
        super().setUp()
        self.mnt = self.mount("--posix-metadata")

    def fresh_posix(self):
        return self.mount("--posix-metadata", "--negative-metadata-ttl", "0", writes=False,
                          ttl="0")


class PosixMetadataTest(PosixMountCase):

    def test_chmod_x_is_kept_and_the_script_runs_from_a_fresh_mount(self):
        with open(self.mnt.path("run.sh"), "w") as f:
            f.write("#!/bin/sh\necho ran\n")
        os.chmod(self.mnt.path("run.sh"), 0o755)
        self.assertEqual(os.stat(self.mnt.path("run.sh")).st_mode & 0o7777, 0o755)
        self.assertEqual(head(self.server, "run.sh")["meta-mode"], str(0o100755))
        fresh = self.fresh_posix()
        self.assertEqual(os.stat(fresh.path("run.sh")).st_mode & 0o7777, 0o755)
        out = subprocess.run([fresh.path("run.sh")], capture_output=True, text=True, check=True)
        self.assertEqual(out.stdout, "ran\n")
        self.assertEqual(open(fresh.path("run.sh")).read(), "#!/bin/sh\necho ran\n")

    def test_cp_p_keeps_mode_owner_and_times(self):
        src = os.path.join(tempfile.mkdtemp(prefix="cp-src-"), "weights.bin")
        with open(src, "wb") as f:
            f.write(os.urandom(3 << 20))
        os.chmod(src, 0o640)
        os.chown(src, 1234, 5678)
        os.utime(src, (978307200, 978307200))  # 2001-01-01
        subprocess.run(["cp", "-p", src, self.mnt.path("weights.bin")], check=True)
        fresh = self.fresh_posix()
        st = os.stat(fresh.path("weights.bin"))
        self.assertEqual(st.st_mode & 0o7777, 0o640)
        self.assertEqual((st.st_uid, st.st_gid), (1234, 5678))
        self.assertEqual(int(st.st_mtime), 978307200)
        with open(fresh.path("weights.bin"), "rb") as f, open(src, "rb") as g:
            self.assertTrue(f.read() == g.read())

    def test_touch_and_chown_of_a_closed_file_change_only_its_metadata(self):
        data = os.urandom(100000)
        with open(self.mnt.path("ckpt.pt"), "wb") as f:
            f.write(data)
        before = self.server.stats()
        subprocess.run(["touch", "-d", "2020-02-02 02:02:02 UTC", self.mnt.path("ckpt.pt")],
                       check=True)
        os.chown(self.mnt.path("ckpt.pt"), 42, 43)
        after = self.server.stats()
        self.assertEqual(after["PUT"] - before["PUT"], 0)  # copies onto itself, no upload
        fresh = self.fresh_posix()
        st = os.stat(fresh.path("ckpt.pt"))
        self.assertEqual(int(st.st_mtime), 1580608922)
        self.assertEqual((st.st_uid, st.st_gid), (42, 43))
        with open(fresh.path("ckpt.pt"), "rb") as f:
            self.assertEqual(f.read(), data)

    def test_a_bucket_written_by_ossfs_shows_its_modes_and_other_metadata_is_kept(self):
        src = os.path.join(self.root, "tool")
        with open(src, "wb") as f:
            f.write(b"#!/bin/sh\n")
        harness.client(self.server, "put", "bin/tool", src, "--meta", "mode=%d" % 0o100750,
                       "--meta", "uid=1000", "--meta", "gid=100", "--meta", "mtime=1600000000",
                       "--meta", "owner-team=vision")
        self.server_rescan()
        fresh = self.fresh_posix()
        st = os.stat(fresh.path("bin", "tool"))
        self.assertEqual(st.st_mode & 0o7777, 0o750)
        self.assertEqual((st.st_uid, st.st_gid, int(st.st_mtime)), (1000, 100, 1600000000))
        writer = self.mount("--posix-metadata")  # one that lists the bucket after the put
        os.chmod(writer.path("bin", "tool"), 0o700)
        meta = head(self.server, "bin/tool")
        self.assertEqual(meta["meta-mode"], str(0o100700))
        self.assertEqual(meta["meta-owner-team"], "vision")  # names it does not own are kept
        self.assertEqual(meta["meta-uid"], "1000")

    def test_a_rewrite_keeps_the_mode(self):
        with open(self.mnt.path("tool.sh"), "w") as f:
            f.write("v1\n")
        os.chmod(self.mnt.path("tool.sh"), 0o750)
        with open(self.mnt.path("tool.sh"), "w") as f:  # O_TRUNC: an editor's save
            f.write("v2\n")
        with open(self.mnt.path("tool.sh"), "a") as f:  # staged: changed in place
            f.write("v3\n")
        fresh = self.fresh_posix()
        self.assertEqual(os.stat(fresh.path("tool.sh")).st_mode & 0o7777, 0o750)
        self.assertEqual(open(fresh.path("tool.sh")).read(), "v2\nv3\n")

    def test_it_costs_one_head_per_file_and_without_it_none(self):
        os.mkdir(self.mnt.path("ds"))
        for i in range(20):
            with open(self.mnt.path("ds", "f%02d" % i), "w") as f:
                f.write("x")
        plain = self.mount(writes=False)
        before = self.server.stats()["HEAD"]
        subprocess.run(["ls", "-l", plain.path("ds")], check=True, capture_output=True)
        for i in range(20):
            os.stat(plain.path("ds", "f%02d" % i))
        self.assertEqual(self.server.stats()["HEAD"] - before, 0)
        # chmod without the option: accepted, nothing stored.
        os.chmod(self.mount().path("ds", "f00"), 0o700)
        self.assertNotIn("meta-mode\t%d" % 0o100700, "\n".join(
            "%s\t%s" % kv for kv in head(self.server, "ds/f00").items()))
        posix = self.mount("--posix-metadata", writes=False)
        before = self.server.stats()["HEAD"]
        subprocess.run(["ls", "-l", posix.path("ds")], check=True, capture_output=True)
        # One per file, and one for the directory's marker.
        self.assertEqual(self.server.stats()["HEAD"] - before, 21)
        self.assertEqual(failed_fuse_ops(posix.output()), [])


class DirectoryModesTest(PosixMountCase):
    """Directories keep their mode, owner and time on their marker ("dir/"), as ossfs does."""

    def test_mkdir_m_and_chmod_of_a_directory_are_kept_on_its_marker(self):
        os.mkdir(self.mnt.path("private"), 0o700)
        os.chown(self.mnt.path("private"), 1234, 5678)
        self.assertEqual(os.stat(self.mnt.path("private")).st_mode & 0o7777, 0o700)
        meta = head(self.server, "private/")
        self.assertEqual(meta["meta-mode"], str(0o40700))
        self.assertEqual((meta["meta-uid"], meta["meta-gid"]), ("1234", "5678"))
        os.chmod(self.mnt.path("private"), 0o750)
        with open(self.mnt.path("private", "w.bin"), "wb") as f:
            f.write(b"w")
        fresh = self.fresh_posix()
        st = os.stat(fresh.path("private"))
        self.assertTrue(os.path.isdir(fresh.path("private")))
        self.assertEqual(st.st_mode & 0o7777, 0o750)
        self.assertEqual((st.st_uid, st.st_gid), (1234, 5678))
        self.assertEqual(os.listdir(fresh.path("private")), ["w.bin"])

    def test_a_directory_without_a_marker_gets_one_when_its_mode_changes(self):
        src = os.path.join(self.root, "x")
        with open(src, "wb") as f:
            f.write(b"x")
        harness.client(self.server, "put", "implicit/x.bin", src)
        self.server_rescan()
        mnt = self.mount("--posix-metadata")
        self.assertEqual(os.stat(mnt.path("implicit")).st_mode & 0o7777, 0o755)  # --dir-mode
        os.chmod(mnt.path("implicit"), 0o711)
        self.assertEqual(head(self.server, "implicit/")["meta-mode"], str(0o40711))
        fresh = self.fresh_posix()
        self.assertEqual(os.stat(fresh.path("implicit")).st_mode & 0o7777, 0o711)
        self.assertEqual(os.listdir(fresh.path("implicit")), ["x.bin"])

    def test_a_directory_ossfs_made_shows_its_mode_and_cp_a_keeps_a_tree(self):
        empty = os.path.join(self.root, "empty")
        open(empty, "wb").close()
        harness.client(self.server, "put", "tools/", empty, "--meta", "mode=%d" % 0o40750,
                       "--meta", "uid=1000", "--meta", "gid=100")
        self.server_rescan()
        fresh = self.fresh_posix()
        st = os.stat(fresh.path("tools"))
        self.assertEqual((st.st_mode & 0o7777, st.st_uid, st.st_gid), (0o750, 1000, 100))
        # cp -a restores the modes of a tree's directories.
        tree = tempfile.mkdtemp(prefix="tree-")
        os.makedirs(os.path.join(tree, "run", "logs"))
        with open(os.path.join(tree, "run", "logs", "a.log"), "w") as f:
            f.write("a\n")
        os.chmod(os.path.join(tree, "run", "logs"), 0o700)
        os.chmod(os.path.join(tree, "run"), 0o751)
        subprocess.run(["cp", "-a", os.path.join(tree, "run"), self.mnt.path("run")], check=True)
        fresh = self.fresh_posix()
        self.assertEqual(os.stat(fresh.path("run")).st_mode & 0o7777, 0o751)
        self.assertEqual(os.stat(fresh.path("run", "logs")).st_mode & 0o7777, 0o700)
        with open(fresh.path("run", "logs", "a.log")) as f:
            self.assertEqual(f.read(), "a\n")


class XattrTest(PosixMountCase):
    """setfattr user.* with --posix-metadata: kept in the "xattr" header as s3fs keeps them."""

    def write(self, name, data=b"weights"):
        with open(self.mnt.path(name), "wb") as f:
            f.write(data)

    def test_setfattr_getfattr_and_a_fresh_mount_sees_them_in_s3fs_format(self):
        data = os.urandom(200000)
        self.write("ckpt.pt", data)
        subprocess.run(["setfattr", "-n", "user.origin", "-v", "imagenet", self.mnt.path("ckpt.pt")],
                       check=True)
        os.setxattr(self.mnt.path("ckpt.pt"), "user.step", b"\x00\x01binary")
        self.assertEqual(os.getxattr(self.mnt.path("ckpt.pt"), "user.origin"), b"imagenet")
        self.assertEqual(stored_xattrs(self.server, "ckpt.pt"),
                         {"user.origin": b"imagenet", "user.step": b"\x00\x01binary"})
        fresh = self.fresh_posix()
        self.assertEqual(sorted(os.listxattr(fresh.path("ckpt.pt"))), ["user.origin", "user.step"])
        out = subprocess.run(["getfattr", "--only-values", "-n", "user.origin",
                              fresh.path("ckpt.pt")], capture_output=True, check=True)
        self.assertEqual(out.stdout, b"imagenet")
        with open(fresh.path("ckpt.pt"), "rb") as f:
            self.assertTrue(f.read() == data)  # the copy onto itself kept the bytes
        # Removed: gone from the mount, the header and a fresh mount.
        os.removexattr(self.mnt.path("ckpt.pt"), "user.origin")
        os.removexattr(self.mnt.path("ckpt.pt"), "user.step")
        self.assertEqual(os.listxattr(self.mnt.path("ckpt.pt")), [])
        self.assertNotIn("meta-xattr", head(self.server, "ckpt.pt"))
        self.assertEqual(os.listxattr(self.fresh_posix().path("ckpt.pt")), [])

    def test_create_replace_and_missing_names_give_the_errnos_of_local_disks(self):
        self.write("a.bin")
        path = self.mnt.path("a.bin")
        with self.assertRaises(OSError) as e:
            os.getxattr(path, "user.none")
        self.assertEqual(e.exception.errno, errno.ENODATA)
        with self.assertRaises(OSError) as e:
            os.setxattr(path, "user.k", b"v", os.XATTR_REPLACE)
        self.assertEqual(e.exception.errno, errno.ENODATA)
        os.setxattr(path, "user.k", b"v1", os.XATTR_CREATE)
        with self.assertRaises(OSError) as e:
            os.setxattr(path, "user.k", b"v2", os.XATTR_CREATE)
        self.assertEqual(e.exception.errno, errno.EEXIST)
        os.setxattr(path, "user.k", b"v2", os.XATTR_REPLACE)
        self.assertEqual(os.getxattr(path, "user.k"), b"v2")
        with self.assertRaises(OSError) as e:
            os.removexattr(path, "user.none")
        self.assertEqual(e.exception.errno, errno.ENODATA)
        # Other namespaces mean something to the kernel: not kept.
        with self.assertRaises(OSError) as e:
            os.setxattr(path, "trusted.k", b"v")
        self.assertEqual(e.exception.errno, errno.EOPNOTSUPP)
        # More than an object's user metadata may hold: refused, the object unchanged.
        with self.assertRaises(OSError) as e:
            os.setxattr(path, "user.big", os.urandom(9000))
        self.assertEqual(e.exception.errno, errno.ENOSPC)
        self.assertEqual(stored_xattrs(self.server, "a.bin"), {"user.k": b"v2"})
        with open(path, "rb") as f:
            self.assertEqual(f.read(), b"weights")

    def test_a_bucket_written_by_s3fs_shows_its_attributes_and_keeps_the_others(self):
        src = os.path.join(self.root, "labels.json")
        with open(src, "wb") as f:
            f.write(b"{}")
        header = s3fs_xattr_header({"user.source": b"crawl-2024", "user.license": b"cc-by"})
        harness.client(self.server, "put", "labels.json", src, "--meta", "xattr=" + header,
                       "--meta", "owner-team=vision")
        self.server_rescan()
        writer = self.mount("--posix-metadata")
        self.assertEqual(os.getxattr(writer.path("labels.json"), "user.source"), b"crawl-2024")
        os.setxattr(writer.path("labels.json"), "user.license", b"cc-by-4.0")
        self.assertEqual(stored_xattrs(self.server, "labels.json"),
                         {"user.source": b"crawl-2024", "user.license": b"cc-by-4.0"})
        self.assertEqual(head(self.server, "labels.json")["meta-owner-team"], "vision")

    def test_attributes_set_while_writing_are_stored_with_the_file_and_kept_by_a_rewrite(self):
        with open(self.mnt.path("run.log"), "wb") as f:
            f.write(b"epoch 1\n")
            os.setxattr(f.fileno(), "user.job", b"resnet50")
            self.assertEqual(os.getxattr(f.fileno(), "user.job"), b"resnet50")
            f.write(b"epoch 2\n")
        self.assertEqual(stored_xattrs(self.server, "run.log"), {"user.job": b"resnet50"})
        with open(self.mnt.path("run.log"), "wb") as f:  # O_TRUNC: a new version
            f.write(b"rewritten\n")
        fresh = self.fresh_posix()
        self.assertEqual(os.getxattr(fresh.path("run.log"), "user.job"), b"resnet50")
        with open(fresh.path("run.log"), "rb") as f:
            self.assertEqual(f.read(), b"rewritten\n")
        # cp --preserve=xattr from a local file, as cp -a does.
        src = os.path.join(tempfile.mkdtemp(prefix="xattr-src-"), "w.bin")
        with open(src, "wb") as f:
            f.write(b"w")
        os.setxattr(src, "user.sha", b"abc123")
        subprocess.run(["cp", "--preserve=xattr", src, self.mnt.path("w.bin")], check=True)
        self.assertEqual(stored_xattrs(self.server, "w.bin"), {"user.sha": b"abc123"})

    def test_without_the_option_attributes_are_refused_and_cost_no_request(self):
        plain = self.mount()
        with open(plain.path("p.bin"), "wb") as f:
            f.write(b"x")
        before = self.server.stats()
        with self.assertRaises(OSError) as e:
            os.setxattr(plain.path("p.bin"), "user.k", b"v")
        self.assertEqual(e.exception.errno, errno.EOPNOTSUPP)
        with self.assertRaises(OSError) as e:
            os.getxattr(plain.path("p.bin"), "user.k")
        self.assertIn(e.exception.errno, (errno.EOPNOTSUPP, errno.ENODATA))
        self.assertEqual(os.listxattr(plain.path("p.bin")), [])
        after = self.server.stats()
        self.assertEqual(after["HEAD"] - before["HEAD"], 0)
        self.assertNotIn("meta-xattr", head(self.server, "p.bin"))


class S3PosixMetadataTest(harness.S3MountCase):
    def test_modes_and_links_on_s3_as_s3fs_stores_them(self):
        mnt = self.mount("--allow-writes", "--posix-metadata", "--metadata-ttl", "indefinite",
                         "--upload-journal", tempfile.mkdtemp(prefix="journal-"))
        with open(mnt.path("run.sh"), "w") as f:
            f.write("#!/bin/sh\necho s3\n")
        os.chmod(mnt.path("run.sh"), 0o755)
        os.symlink("run.sh", mnt.path("latest"))
        fresh = self.mount("--posix-metadata", "--metadata-ttl", "0")
        self.assertEqual(os.stat(fresh.path("run.sh")).st_mode & 0o7777, 0o755)
        self.assertTrue(os.path.islink(fresh.path("latest")))
        self.assertEqual(os.readlink(fresh.path("latest")), "run.sh")
        out = subprocess.run([fresh.path("latest")], capture_output=True, text=True, check=True)
        self.assertEqual(out.stdout, "s3\n")
        os.setxattr(mnt.path("run.sh"), "user.origin", b"s3")
        self.assertEqual(os.getxattr(fresh.path("run.sh"), "user.origin"), b"s3")
        os.mkdir(mnt.path("private"), 0o700)
        self.assertEqual(os.stat(fresh.path("private")).st_mode & 0o7777, 0o700)


if __name__ == "__main__":
    harness.main()
