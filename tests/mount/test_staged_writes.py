"""Every write a program makes, through a real mount: the patterns that cannot stream.

docs/SEMANTICS.md "Writing", the rows on staged writes. A file written in order from its start
streams to the bucket; everything else is staged in a local copy and uploaded whole at close
or fsync: appends to an existing object (echo >>), writes in the middle (dd conv=notrunc),
truncate up and down, scattered pwrites with holes, a writer that seeks back to patch a
header, zipfile and h5py, rsync --inplace, reads of a file while it is written, renames and
unlinks of open files, and a staging directory that fills up (ENOSPC at the write, the daemon
serving on). Each runs against the bundled OSS server and, where the protocol allows the same
behaviour, against s3rver.
"""
import errno
import os
import signal
import subprocess
import sys
import tempfile
import zipfile

import harness
from test_writes import MiB, WriteMountCase, failed_fuse_ops, random_bytes


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


class Patterns:
    """The patterns, against self.mnt (a writable mount) and self.fresh() (a mount that
    never saw the writes)."""

    def check_fresh(self, rel, expected):
        fresh = self.fresh()
        got = read(fresh.path(rel))
        self.assertEqual(len(got), len(expected), rel)
        self.assertTrue(got == expected, "%s differs on a fresh mount" % rel)

    def test_echo_appends_to_an_existing_object(self):
        write(self.mnt.path("train.log"), b"epoch 1\n")
        subprocess.run("echo 'epoch 2' >> %s" % self.mnt.path("train.log"), shell=True,
                       check=True)
        with open(self.mnt.path("train.log"), "a") as f:
            f.write("epoch 3\n")
        self.assertEqual(read(self.mnt.path("train.log")), b"epoch 1\nepoch 2\nepoch 3\n")
        self.check_fresh("train.log", b"epoch 1\nepoch 2\nepoch 3\n")

    def test_dd_conv_notrunc_in_the_middle_of_a_64_MiB_object(self):
        data = bytearray(random_bytes(64 * MiB, 3))
        write(self.mnt.path("big.bin"), data)  # streamed
        patch = random_bytes(MiB, 4)
        src = os.path.join(tempfile.mkdtemp(prefix="dd-"), "patch")
        write(src, patch)
        counts = getattr(self.server, "stats", None)  # the bundled server counts requests
        before = counts() if counts else None
        subprocess.run(["dd", "if=" + src, "of=" + self.mnt.path("big.bin"), "bs=1M",
                        "seek=20", "conv=notrunc", "status=none"], check=True)
        data[20 * MiB:21 * MiB] = patch
        self.assertEqual(os.stat(self.mnt.path("big.bin")).st_size, 64 * MiB)
        self.check_fresh("big.bin", bytes(data))
        # Eight parts of 8 MiB: the one the patch lands in goes up; the runs before and after
        # it are copied on the server from the object the file was loaded from, each run as
        # one copy (up to 64 MiB).
        if counts:
            after = counts()
            self.assertEqual(after["UPLOAD_PART"] - before["UPLOAD_PART"], 1)
            self.assertEqual(after["UPLOAD_PART_COPY"] - before["UPLOAD_PART_COPY"], 2)

    def test_truncate_up_and_down(self):
        write(self.mnt.path("t.bin"), b"0123456789")
        subprocess.run(["truncate", "-s", "4", self.mnt.path("t.bin")], check=True)
        self.assertEqual(read(self.mnt.path("t.bin")), b"0123")
        subprocess.run(["truncate", "-s", "8", self.mnt.path("t.bin")], check=True)
        self.assertEqual(read(self.mnt.path("t.bin")), b"0123\0\0\0\0")
        with open(self.mnt.path("t.bin"), "r+b") as f:
            f.truncate(2)
            f.seek(0, os.SEEK_END)
            f.write(b"xy")
        self.check_fresh("t.bin", b"01xy")

    def test_pwrite_at_scattered_offsets_with_holes(self):
        expected = bytearray(5 * MiB + 17)
        fd = os.open(self.mnt.path("holes.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            for i, off in enumerate([5 * MiB, 17, 3 * MiB + 1, 0, MiB // 2]):
                piece = random_bytes(17 if off == 5 * MiB else 4096, 10 + i)
                os.pwrite(fd, piece, off)
                expected[off:off + len(piece)] = piece
        finally:
            os.close(fd)
        self.check_fresh("holes.bin", bytes(expected))

    def test_a_writer_that_seeks_back_to_patch_its_header(self):
        body = random_bytes(3 * MiB, 5)
        with open(self.mnt.path("rec.bin"), "wb") as f:
            f.write(b"\0" * 16)
            f.write(body)
            f.seek(0)
            f.write(b"LEN=%012d" % len(body))
        self.check_fresh("rec.bin", b"LEN=%012d" % len(body) + body)

    def test_a_file_streamed_in_many_parts_moves_to_staging_at_a_write_behind(self):
        # 24 MiB in order: parts went up already. Then the header is patched, as HDF5 and
        # zipfile do at the end: the file moves to its local copy, the multipart upload is
        # aborted (nothing partial appears), and the close saves every byte.
        data = bytearray(random_bytes(24 * MiB, 30))
        fd = os.open(self.mnt.path("streamed.h5"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            for off in range(0, len(data), MiB):
                os.write(fd, data[off:off + MiB])
            os.pwrite(fd, b"HEADER", 0)
            data[0:6] = b"HEADER"
            self.assertFalse(os.path.exists(self.fresh().path("streamed.h5")))
        finally:
            os.close(fd)
        self.check_fresh("streamed.h5", bytes(data))

    def test_zipfile_writes_an_archive(self):
        members = {"a.txt": b"alpha\n" * 1000, "b.bin": random_bytes(300_000, 6)}
        with zipfile.ZipFile(self.mnt.path("bundle.zip"), "w", zipfile.ZIP_DEFLATED) as z:
            for name, data in members.items():
                z.writestr(name, data)
        fresh = self.fresh()
        with zipfile.ZipFile(fresh.path("bundle.zip")) as z:
            self.assertIsNone(z.testzip())
            self.assertEqual({n: z.read(n) for n in z.namelist()}, members)

    def test_h5py_writes_a_dataset_file(self):
        try:
            import h5py
            import numpy
        except ImportError:
            self.fail("h5py is not installed (scripts/install-deps.sh installs python3-h5py)")
        values = numpy.arange(200_000, dtype=numpy.float32).reshape(400, 500)
        with h5py.File(self.mnt.path("weights.h5"), "w") as h:
            h.create_dataset("layer0", data=values)
            h.attrs["epoch"] = 7
        with h5py.File(self.mnt.path("weights.h5"), "a") as h:  # changed in place
            h.attrs["epoch"] = 8
        fresh = self.fresh()
        with h5py.File(fresh.path("weights.h5"), "r") as h:
            self.assertEqual(int(h.attrs["epoch"]), 8)
            self.assertTrue((h["layer0"][...] == values).all())

    def test_rsync_inplace(self):
        local = tempfile.mkdtemp(prefix="rsync-src-")
        data = bytearray(random_bytes(6 * MiB, 7))
        write(os.path.join(local, "shard.bin"), data)
        os.mkdir(self.mnt.path("mirror"))
        rsync = ["rsync", "-r", "--inplace", "--no-whole-file", "--checksum"]
        subprocess.run(rsync + [local + "/", self.mnt.path("mirror") + "/"], check=True)
        data[4 * MiB:4 * MiB + 100] = b"z" * 100
        write(os.path.join(local, "shard.bin"), data)
        subprocess.run(rsync + [local + "/", self.mnt.path("mirror") + "/"], check=True)
        self.check_fresh("mirror/shard.bin", bytes(data))

    def test_a_file_reads_back_while_it_is_written(self):
        fd = os.open(self.mnt.path("live.bin"), os.O_RDWR | os.O_CREAT | os.O_TRUNC)
        try:
            os.write(fd, b"hello world")
            self.assertEqual(os.pread(fd, 100, 0), b"hello world")
            with open(self.mnt.path("live.bin"), "rb", buffering=0) as other:
                self.assertEqual(other.read(), b"hello world")
                os.pwrite(fd, b"there", 6)
                other.seek(0)
                self.assertEqual(other.read(), b"hello there")
        finally:
            os.close(fd)
        self.check_fresh("live.bin", b"hello there")

    def test_rename_and_unlink_of_open_files(self):
        fd = os.open(self.mnt.path("part.tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.write(fd, b"first ")
        os.rename(self.mnt.path("part.tmp"), self.mnt.path("part.done"))
        os.write(fd, b"second")
        os.close(fd)
        scratch = os.open(self.mnt.path("scratch"), os.O_RDWR | os.O_CREAT | os.O_TRUNC)
        os.write(scratch, b"temporary")
        os.unlink(self.mnt.path("scratch"))
        os.write(scratch, b" bytes")
        self.assertEqual(os.pread(scratch, 100, 0), b"temporary bytes")
        os.close(scratch)
        fresh = self.fresh()
        self.assertEqual(sorted(os.listdir(fresh.mountpoint)), ["part.done"])
        self.assertEqual(read(fresh.path("part.done")), b"first second")


class OssStagedWritesTest(Patterns, WriteMountCase):
    def setUp(self):
        super().setUp()
        self.staging = tempfile.mkdtemp(prefix="staging-")
        self.mnt = self.mount("--staging-dir", self.staging)

    def fresh(self):
        return self.fresh_mount()

    def tearDown(self):
        # Every staged file went with its handle: nothing left in the directory.
        self.assertEqual(os.listdir(self.staging), [])
        self.assertEqual(failed_fuse_ops(self.mnt.output()), [])
        self.assert_no_open_uploads()

    def test_opening_an_object_read_write_and_not_writing_costs_no_download(self):
        write(self.mnt.path("model.pt"), random_bytes(20 * MiB, 8))
        before = self.server.stats()
        with open(self.mnt.path("model.pt"), "r+b") as f:
            f.seek(0, os.SEEK_END)
        after = self.server.stats()
        self.assertEqual(after["GET"] - before["GET"], 0)
        self.assertEqual(after["PUT"] - before["PUT"], 0)


class ContentTypeTest(WriteMountCase):
    def test_uploaded_objects_get_the_content_type_of_their_extension(self):
        mnt = self.mount("--upload-part-size", "1MiB")

        def content_type(key):
            out = harness.client(self.server, "head", key).stdout.decode()
            return dict(line.split("\t", 1) for line in out.splitlines())["content-type"]

        write(mnt.path("config.json"), b"{}")  # one PUT
        write(mnt.path("big.jpg"), random_bytes(3 * MiB, 31))  # a multipart upload
        write(mnt.path("model.pt"), b"weights")
        with open(mnt.path("config.json"), "r+b") as f:  # a staged rewrite
            f.write(b"[]")
        self.assertEqual(content_type("config.json"), "application/json")
        self.assertEqual(content_type("big.jpg"), "image/jpeg")
        self.assertEqual(content_type("model.pt"), "application/octet-stream")
        os.mkdir(mnt.path("runs"))  # a directory marker, typed as ossfs and s3fs type theirs
        self.assertEqual(content_type("runs/"), "application/x-directory")


class StagingLimitsTest(WriteMountCase):
    def test_a_full_staging_budget_fails_the_write_with_ENOSPC_and_the_mount_serves_on(self):
        staging = tempfile.mkdtemp(prefix="staging-")
        mnt = self.mount("--staging-dir", staging, "--max-staging-size", "4MiB")
        write(mnt.path("base.bin"), random_bytes(3 * MiB, 9))
        fd = os.open(mnt.path("base.bin"), os.O_WRONLY)
        try:
            os.pwrite(fd, b"x", 10)  # staged: the 3 MiB copy
            # Past 4 MiB: the kernel sends the 2 MiB in pieces, so the call may first report
            # the bytes that fit (a short write, as on a full disk); writing the rest fails.
            data, offset = random_bytes(2 * MiB, 10), 3 * MiB
            with self.assertRaises(OSError) as e:
                while data:
                    n = os.pwrite(fd, data, offset)
                    data, offset = data[n:], offset + n
            self.assertEqual(e.exception.errno, errno.ENOSPC)
            self.assertLessEqual(offset, 4 * MiB)
        finally:
            with self.assertRaises(OSError) as e:
                os.close(fd)
            self.assertEqual(e.exception.errno, errno.ENOSPC)
        # Nothing partial: the object is the one before.
        self.assertEqual(read(self.on_server("base.bin")), random_bytes(3 * MiB, 9))
        # The mount serves on: a staged file that fits, and plain streaming.
        with open(mnt.path("base.bin"), "r+b") as f:
            f.write(b"ok")
        write(mnt.path("next.bin"), random_bytes(10 * MiB, 11))
        self.assertEqual(read(self.on_server("base.bin"))[:2], b"ok")
        self.assertEqual(read(self.on_server("next.bin")), random_bytes(10 * MiB, 11))
        self.assertEqual(os.listdir(staging), [])

    def test_a_full_staging_disk_fails_the_write_with_ENOSPC(self):
        disk = tempfile.mkdtemp(prefix="staging-disk-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", disk], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", disk], check=False)
        mnt = self.mount("--staging-dir", disk)
        fd = os.open(mnt.path("f.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            os.pwrite(fd, b"x", MiB)  # staged from the start (a hole)
            with self.assertRaises(OSError) as e:
                for i in range(4):
                    os.pwrite(fd, random_bytes(MiB, i), i * MiB)
            self.assertEqual(e.exception.errno, errno.ENOSPC)
        finally:
            with self.assertRaises(OSError):
                os.close(fd)
        self.assertFalse(os.path.exists(self.on_server("f.bin")))
        write(mnt.path("g.bin"), b"streams on")
        self.assertEqual(read(self.on_server("g.bin")), b"streams on")

    def test_kill_9_with_staged_files_open_leaves_the_bucket_as_it_was(self):
        # An existing object changed in the middle, and a new file whose header was patched
        # after 20 MiB streamed, both still open when the daemon is killed: the object stays
        # the old one and the new name holds nothing. The upload the new file had started
        # before moving to staging is aborted when it moves, or, when the kill came first, by
        # the next mount with the same journal.
        write(self.on_server("old.bin"), random_bytes(3 * MiB, 40))
        self.server_rescan()
        staging = tempfile.mkdtemp(prefix="staging-")
        journal = tempfile.mkdtemp(prefix="upload-journal-")
        # Unsupervised, the mount dies with the daemon (test_restart.py kills a supervised one).
        mnt = self.mount("--staging-dir", staging, "--no-supervise", journal=journal)
        script = (
            "import os, sys\n"
            "old = os.open(sys.argv[1], os.O_WRONLY)\n"
            "os.pwrite(old, b'changed', 1 << 20)\n"
            "new = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)\n"
            "for i in range(20):\n"
            "    os.write(new, os.urandom(1 << 20))\n"
            "os.pwrite(new, b'HEADER', 0)\n"
            "print('written', flush=True)\n"
            "sys.stdin.read()\n")
        writer = subprocess.Popen([sys.executable, "-c", script, mnt.path("old.bin"),
                                   mnt.path("new.h5")], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: writer.poll() is None and writer.kill())
        self.assertEqual(writer.stdout.readline(), "written\n")
        os.kill(mnt.proc.pid, signal.SIGKILL)
        mnt.proc.wait(30)
        writer.kill()
        writer.wait(30)
        writer.stdin.close()
        writer.stdout.close()
        harness.force_unmount(mnt.mountpoint)
        self.assertEqual(read(self.on_server("old.bin")), random_bytes(3 * MiB, 40))
        self.assertFalse(os.path.exists(self.on_server("new.h5")))
        self.assertEqual(os.listdir(staging), [])  # unnamed files: nothing to clean up
        again = self.mount("--staging-dir", staging, journal=journal)
        self.assert_no_open_uploads()
        self.assertEqual(read(again.path("old.bin")), random_bytes(3 * MiB, 40))
        self.assertFalse(os.path.exists(again.path("new.h5")))

    def test_without_a_staging_directory_out_of_order_writes_fail_with_ENOTSUP(self):
        mnt = self.mount("--staging-dir", "")
        write(mnt.path("f"), b"abc")
        fd = os.open(mnt.path("f"), os.O_WRONLY)
        with self.assertRaises(OSError) as e:
            os.pwrite(fd, b"x", 1)
        self.assertEqual(e.exception.errno, errno.EOPNOTSUPP)
        os.close(fd)
        self.assertEqual(read(self.on_server("f")), b"abc")


class S3StagedWritesTest(Patterns, harness.S3MountCase):
    """The same patterns over s3rver."""

    def setUp(self):
        super().setUp()
        self.staging = tempfile.mkdtemp(prefix="staging-")
        self.mnt = self.mount("--allow-writes", "--staging-dir", self.staging,
                              "--upload-journal", tempfile.mkdtemp(prefix="journal-"),
                              "--metadata-ttl", "indefinite")

    def fresh(self):
        return self.mount("--metadata-ttl", "0")

    def tearDown(self):
        self.assertEqual(os.listdir(self.staging), [])
        self.assertEqual(failed_fuse_ops(self.mnt.output()), [])


if __name__ == "__main__":
    harness.main()
