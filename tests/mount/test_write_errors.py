"""Writes that must fail, and fail the right way, through a real mount.

docs/SEMANTICS.md "Writing". What a failed save leaves behind is checked where it lives: on
the server's disk (ROOT/BUCKET/KEY), through a second mount that revalidates everything
(--metadata-ttl 0), and in the server's count of open multipart uploads.
- An O_TRUNC rewrite: until its close returned, another mount reads the old bytes; then the new.
- A write at an offset other than the end: ENOTSUP, the upload aborted, close fails, and
  nothing new is at the key (a new name stays absent, an overwritten object stays old).
- Writing into an existing object without O_TRUNC ("ab", "r+b"): ENOTSUP, object unchanged.
  A write after fsync or close completed the file: EINVAL.
- --no-overwrite: EACCES for O_TRUNC of an existing file and a rename onto one;
  --no-delete: EACCES for rm, rmdir and rename, the objects stay.
- mkdir, rmdir, unlink, rename errno cases (EEXIST, ENOTEMPTY, ENOENT, ENOTDIR, EISDIR,
  RENAME_NOREPLACE through renameat2), names over 255 bytes (ENAMETOOLONG), a read-only
  mount (EROFS), modes and ignored attribute changes, truncate.
- A directory rename copies every object up to --rename-dir-limit; beyond it EXDEV, and mv
  copies instead.
- A mount of BUCKET:/PREFIX writes nothing outside PREFIX.
- kill -9 of the daemon in the middle of a multipart upload: nothing appears under the key;
  a mount with another journal leaves the upload alone; the next mount with the same
  --upload-journal aborts it.
"""
import ctypes
import errno
import os
import signal
import subprocess
import sys
import tempfile
import unittest

import harness
from test_writes import MiB, WriteMountCase, random_bytes, server_files

AT_FDCWD = -100
RENAME_NOREPLACE = 1


def renameat2(old, new, flags):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(AT_FDCWD, old.encode(), AT_FDCWD, new.encode(), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), old)


def mount_options(mnt):
    """The per-mount options of /proc/self/mountinfo (the sixth field): "ro" or "rw" first."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == os.path.realpath(mnt.mountpoint):
                return fields[5].split(",")
    raise AssertionError("%s is not mounted" % mnt.mountpoint)


class ErrnoMixin:
    def assert_errno(self, code, fn, *args):
        with self.assertRaises(OSError) as e:
            fn(*args)
        self.assertEqual(e.exception.errno, code,
                         "%s%r: %s" % (getattr(fn, "__name__", fn), args, e.exception))

    def put(self, rel, data):
        """An object put on the server's disk, as another client would have."""
        path = self.on_server(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        self.server_rescan()

    def server_bytes(self, rel):
        with open(self.on_server(rel), "rb") as f:
            return f.read()

    def read(self, path):
        with open(path, "rb") as f:
            return f.read()


class FailedWritesTest(WriteMountCase, ErrnoMixin):
    def test_o_trunc_rewrite_other_mount_reads_old_until_close(self):
        old, new = random_bytes(2 * MiB, 1), random_bytes(3 * MiB + 5, 2)
        self.put("ckpt.bin", old)
        mnt = self.mount("--upload-part-size", "1MiB")
        other = self.fresh_mount()
        f = open(mnt.path("ckpt.bin"), "wb", buffering=0)
        try:
            f.write(new[:2 * MiB])  # two parts up
            self.assertEqual(self.read(other.path("ckpt.bin")), old)
            self.assertEqual(self.server_bytes("ckpt.bin"), old)
            f.write(new[2 * MiB:])
            self.assertEqual(self.read(other.path("ckpt.bin")), old)
        finally:
            f.close()
        self.assertEqual(self.read(other.path("ckpt.bin")), new)
        self.assertEqual(self.server_bytes("ckpt.bin"), new)
        self.assertEqual(self.read(mnt.path("ckpt.bin")), new)
        self.assert_no_open_uploads()

    def check_gap_write(self, mnt, rel):
        fd = os.open(mnt.path(rel), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, random_bytes(3 * MiB // 2, 3))  # a multipart upload is open
            self.assert_errno(errno.ENOTSUP, os.pwrite, fd, b"gap", 2 * MiB)
            # The upload is aborted: a later write in sequence fails too.
            self.assert_errno(errno.ENOTSUP, os.write, fd, b"more")
        finally:
            with self.assertRaises(OSError) as e:
                os.close(fd)
        self.assertEqual(e.exception.errno, errno.ENOTSUP)

    # Without a staging directory: with one, these writes move the file to a staged copy
    # (test_staged_writes.py).
    def test_out_of_order_write_to_a_new_file(self):
        mnt = self.mount("--upload-part-size", "1MiB", "--staging-dir", "")
        other = self.fresh_mount()
        self.check_gap_write(mnt, "new.bin")
        self.assertFalse(os.path.exists(mnt.path("new.bin")))
        self.assertFalse(os.path.exists(other.path("new.bin")))
        self.assertFalse(os.path.exists(self.on_server("new.bin")))
        self.assertEqual(os.listdir(mnt.mountpoint), [])
        self.assert_no_open_uploads()  # the abort may follow the failed close by a moment
        stats = self.server.stats()
        self.assertEqual(stats["INITIATE_MULTIPART"], 1)
        self.assertEqual(stats["ABORT_MULTIPART"], 1)
        self.assertEqual(stats["COMPLETE_MULTIPART"], 0)
        self.assert_no_open_uploads()

    def test_out_of_order_write_over_an_existing_object(self):
        old = random_bytes(MiB + 7, 4)
        self.put("keep.bin", old)
        mnt = self.mount("--upload-part-size", "1MiB", "--staging-dir", "")
        other = self.fresh_mount()
        self.check_gap_write(mnt, "keep.bin")
        self.assertEqual(self.server_bytes("keep.bin"), old)
        self.assertEqual(self.read(other.path("keep.bin")), old)
        self.assertEqual(self.read(mnt.path("keep.bin")), old)
        self.assertEqual(os.stat(mnt.path("keep.bin")).st_size, len(old))
        self.assert_no_open_uploads()

    def test_writes_into_an_existing_object_without_o_trunc(self):
        old = random_bytes(5000, 5)
        self.put("log.txt", old)
        mnt = self.mount("--staging-dir", "")
        with self.assertRaises(OSError) as e:
            with open(mnt.path("log.txt"), "ab") as f:
                f.write(b"appended")
        self.assertEqual(e.exception.errno, errno.ENOTSUP)
        fd = os.open(mnt.path("log.txt"), os.O_RDWR)
        try:
            self.assert_errno(errno.ENOTSUP, os.pwrite, fd, b"X", 0)
        finally:
            os.close(fd)
        self.assertEqual(self.server_bytes("log.txt"), old)
        self.assertEqual(self.read(mnt.path("log.txt")), old)
        self.assert_no_open_uploads()

    def test_writes_after_fsync_or_close_continue_the_file(self):
        # An fsync (or a close) completes the object; bytes written after it continue it, and
        # the next close or fsync completes the longer version (a multipart object is copied
        # on the server for that, a small one re-sent from memory).
        mnt = self.mount("--upload-part-size", "1MiB")
        data = random_bytes(MiB + 3, 6)
        fd = os.open(mnt.path("done.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)  # complete: the object is there now, whole
            self.assertEqual(self.server_bytes("done.bin"), data)
            os.write(fd, b"late")
        finally:
            os.close(fd)
        self.assertEqual(self.server_bytes("done.bin"), data + b"late")
        # A descriptor dup'ed before the close: the close completed the file, and the dup's
        # writes continue it until its own close.
        fd = os.open(mnt.path("dup.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, b"first")
        fd2 = os.dup(fd)
        os.close(fd)
        self.assertEqual(self.server_bytes("dup.bin"), b"first")
        os.write(fd2, b" second")
        os.close(fd2)
        self.assertEqual(self.server_bytes("dup.bin"), b"first second")
        self.assert_no_open_uploads()


class PolicyTest(WriteMountCase, ErrnoMixin):
    def test_no_overwrite(self):
        old = random_bytes(3000, 7)
        self.put("model.pt", old)
        mnt = self.mount("--no-overwrite")
        self.assert_errno(errno.EACCES, open, mnt.path("model.pt"), "wb")
        self.assert_errno(errno.EACCES, os.open, mnt.path("model.pt"), os.O_WRONLY | os.O_TRUNC)
        with open(mnt.path("model.pt.tmp"), "wb") as f:  # new names are fine
            f.write(b"new")
        self.assert_errno(errno.EACCES, os.rename, mnt.path("model.pt.tmp"),
                          mnt.path("model.pt"))
        self.assertEqual(self.server_bytes("model.pt"), old)
        self.assertEqual(self.server_bytes("model.pt.tmp"), b"new")
        self.assertEqual(self.read(mnt.path("model.pt")), old)
        os.rename(mnt.path("model.pt.tmp"), mnt.path("model2.pt"))  # onto a free name
        self.assertEqual(self.server_bytes("model2.pt"), b"new")

    def test_no_delete(self):
        self.put("a/keep.bin", b"keep")
        mnt = self.mount("--no-delete")
        os.mkdir(mnt.path("empty"))
        r = subprocess.run(["rm", "-f", mnt.path("a", "keep.bin")], capture_output=True,
                           text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Permission denied", r.stderr)
        self.assert_errno(errno.EACCES, os.remove, mnt.path("a", "keep.bin"))
        self.assert_errno(errno.EACCES, os.rmdir, mnt.path("empty"))
        self.assert_errno(errno.EACCES, os.rename, mnt.path("a", "keep.bin"),
                          mnt.path("a", "moved.bin"))
        self.assertEqual(self.server_bytes("a/keep.bin"), b"keep")
        fresh = self.fresh_mount()
        self.assertEqual(sorted(os.listdir(fresh.mountpoint)), ["a", "empty"])
        self.assertEqual(os.listdir(fresh.path("a")), ["keep.bin"])

    def test_read_only_without_allow_writes(self):
        self.put("f.txt", b"data")
        os.makedirs(self.on_server("d"))
        self.put("d/g.txt", b"g")
        mnt = self.mount(writes=False)
        self.assertEqual(mount_options(mnt)[0], "ro")
        self.assert_errno(errno.EROFS, open, mnt.path("new.txt"), "wb")
        self.assert_errno(errno.EROFS, open, mnt.path("f.txt"), "wb")
        self.assert_errno(errno.EROFS, os.mkdir, mnt.path("nd"))
        self.assert_errno(errno.EROFS, os.remove, mnt.path("f.txt"))
        self.assert_errno(errno.EROFS, os.rmdir, mnt.path("d"))
        self.assert_errno(errno.EROFS, os.rename, mnt.path("f.txt"), mnt.path("g.txt"))
        self.assertEqual(os.stat(mnt.path("f.txt")).st_mode & 0o7777, 0o444)
        self.assertEqual(self.server_bytes("f.txt"), b"data")
        self.assertEqual(sorted(server_files(self.bucket_dir)), ["d/g.txt", "f.txt"])

    def test_rw_mount_modes_ignored_attributes_and_truncate(self):
        self.put("old.bin", b"0123456789")
        mnt = self.mount()
        self.assertEqual(mount_options(mnt)[0], "rw")
        os.mkdir(mnt.path("d"))
        with open(mnt.path("d", "f"), "wb") as f:
            f.write(b"abc")
        self.assertEqual(os.stat(mnt.path("d", "f")).st_mode & 0o7777, 0o644)
        self.assertEqual(os.stat(mnt.path("d")).st_mode & 0o7777, 0o755)
        self.assertEqual(os.stat(mnt.path("old.bin")).st_mode & 0o7777, 0o644)
        # chmod, chown and utime succeed and change nothing.
        os.chmod(mnt.path("d", "f"), 0o600)
        os.chown(mnt.path("d", "f"), 1234, 1234)
        os.utime(mnt.path("d", "f"), (1, 1))
        os.chmod(mnt.path("d"), 0o700)
        self.assertEqual(os.stat(mnt.path("d", "f")).st_mode & 0o7777, 0o644)
        self.assertEqual(self.server_bytes("d/f"), b"abc")
        # ftruncate to the size written so far (0 after an O_TRUNC open) is a no-op.
        with open(mnt.path("d", "t"), "wb") as f:
            f.truncate(0)
            f.write(b"xyz")
            f.flush()
            f.truncate(3)
        self.assertEqual(self.server_bytes("d/t"), b"xyz")
        # truncate(path) to the current size of a closed file: a no-op.
        put_before = self.server.stats()["PUT"]
        os.truncate(mnt.path("old.bin"), 10)
        os.truncate(mnt.path("d", "f"), 3)
        self.assertEqual(self.server_bytes("old.bin"), b"0123456789")
        self.assertEqual(self.server.stats()["PUT"], put_before)
        # To another size: the object is changed through a staged copy.
        os.truncate(mnt.path("old.bin"), 4)
        self.assertEqual(self.server_bytes("old.bin"), b"0123")
        os.truncate(mnt.path("old.bin"), 20)
        self.assertEqual(self.server_bytes("old.bin"), b"0123" + bytes(16))
        self.assertEqual(os.stat(mnt.path("old.bin")).st_size, 20)
        # Without a staging directory, other sizes are ENOTSUP and change nothing.
        bare = self.mount("--staging-dir", "")
        self.assert_errno(errno.ENOTSUP, os.truncate, bare.path("d", "f"), 1)
        self.assertEqual(self.server_bytes("d/f"), b"abc")


class NamespaceTest(WriteMountCase, ErrnoMixin):
    def test_mkdir_rmdir_unlink_rename_errnos(self):
        mnt = self.mount()
        p = mnt.path
        os.mkdir(p("d"))
        with open(p("d", "f"), "wb") as f:
            f.write(b"f-bytes")
        with open(p("g"), "wb") as f:
            f.write(b"g-bytes")
        os.mkdir(p("empty"))
        self.assert_errno(errno.EEXIST, os.mkdir, p("d"))
        self.assert_errno(errno.EEXIST, os.mkdir, p("g"))
        self.assert_errno(errno.ENOTEMPTY, os.rmdir, p("d"))
        self.assert_errno(errno.ENOENT, os.rmdir, p("missing"))
        self.assert_errno(errno.ENOTDIR, os.rmdir, p("g"))
        self.assert_errno(errno.ENOENT, os.remove, p("missing"))
        self.assert_errno(errno.EISDIR, os.remove, p("d"))
        self.assert_errno(errno.ENOENT, os.rename, p("missing"), p("x"))
        self.assert_errno(errno.EEXIST, os.open, p("g"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        self.assert_errno(errno.EEXIST, renameat2, p("g"), p("d", "f"), RENAME_NOREPLACE)
        self.assertEqual(self.server_bytes("g"), b"g-bytes")
        self.assertEqual(self.server_bytes("d/f"), b"f-bytes")
        # A plain rename replaces the target; the source is gone.
        os.rename(p("g"), p("d", "f"))
        self.assertFalse(os.path.exists(p("g")))
        self.assertEqual(self.read(p("d", "f")), b"g-bytes")
        self.assertEqual(server_files(self.bucket_dir), {"d/f": 7})
        renameat2(p("d", "f"), p("h"), RENAME_NOREPLACE)  # onto a free name
        self.assertEqual(server_files(self.bucket_dir), {"h": 7})
        os.remove(p("h"))
        self.assertEqual(server_files(self.bucket_dir), {})
        os.rmdir(p("d"))  # empty now
        self.assertEqual(sorted(os.listdir(mnt.mountpoint)), ["empty"])
        # The empty directory is a marker object: another mount sees it.
        fresh = self.fresh_mount()
        self.assertEqual(sorted(os.listdir(fresh.mountpoint)), ["empty"])
        self.assertTrue(os.path.isdir(fresh.path("empty")))
        os.rmdir(p("empty"))
        self.assertFalse(os.path.exists(fresh.path("empty")))
        self.assert_no_open_uploads()

    def test_names_over_255_bytes(self):
        mnt = self.mount()
        with open(mnt.path("a" * 255), "wb") as f:
            f.write(b"ok")
        self.assertEqual(self.server_bytes("a" * 255), b"ok")
        self.assert_errno(errno.ENAMETOOLONG, open, mnt.path("b" * 256), "wb")
        self.assert_errno(errno.ENAMETOOLONG, os.mkdir, mnt.path("c" * 256))
        self.assert_errno(errno.ENAMETOOLONG, os.rename, mnt.path("a" * 255),
                          mnt.path("d" * 256))
        # 86 three-byte characters: 258 bytes.
        self.assert_errno(errno.ENAMETOOLONG, open, mnt.path("\u4e2d" * 86), "wb")
        self.assertEqual(server_files(self.bucket_dir), {"a" * 255: 2})

    def test_directory_rename_up_to_the_limit_then_exdev(self):
        mnt = self.mount("--rename-dir-limit", "3")
        p = mnt.path
        os.mkdir(p("a"))  # objects: a/, a/x, a/y
        for n in ("x", "y"):
            with open(p("a", n), "wb") as f:
                f.write(n.encode() * 1000)
        os.mkdir(p("c"))  # objects: c/, c/x, c/y, c/z: one more than the limit
        for n in ("x", "y", "z"):
            with open(p("c", n), "wb") as f:
                f.write(n.encode() * 1000)
        os.rename(p("a"), p("b"))
        self.assertEqual(sorted(os.listdir(p("b"))), ["x", "y"])
        self.assertFalse(os.path.exists(p("a")))
        self.assert_errno(errno.EXDEV, os.rename, p("c"), p("e"))
        self.assertEqual(sorted(os.listdir(p("c"))), ["x", "y", "z"])
        self.assertFalse(os.path.exists(p("e")))
        # mv copies instead when rename says EXDEV.
        r = subprocess.run(["mv", p("c"), p("e")], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(server_files(self.bucket_dir),
                         {"b/x": 1000, "b/y": 1000, "e/x": 1000, "e/y": 1000, "e/z": 1000})
        fresh = self.fresh_mount()
        self.assertEqual(sorted(os.listdir(fresh.mountpoint)), ["b", "e"])
        self.assertEqual(self.read(fresh.path("e", "z")), b"z" * 1000)
        self.assert_no_open_uploads()

    def test_a_prefix_mount_writes_only_under_its_prefix(self):
        self.put("outside.txt", b"outside")
        self.put("jail/seed.txt", b"seed")
        mnt = self.mount("--upload-part-size", "1MiB", spec="bucket:/jail")
        p = mnt.path
        self.assertEqual(os.listdir(mnt.mountpoint), ["seed.txt"])
        os.mkdir(p("d"))
        with open(p("d", "big.bin"), "wb") as f:
            f.write(random_bytes(2 * MiB, 8))
        with open(p("top.txt"), "w") as f:
            f.write("top")
        os.rename(p("top.txt"), p("d", "top.txt"))
        os.rename(p("d"), p("d2"))
        os.remove(p("seed.txt"))
        self.assert_errno(errno.ENOENT, os.remove, p("outside.txt"))
        self.assertEqual(server_files(self.bucket_dir),
                         {"outside.txt": 7, "jail/d2/big.bin": 2 * MiB, "jail/d2/top.txt": 3})
        self.assertEqual(self.server_bytes("outside.txt"), b"outside")
        keys = harness.client(self.server, "ls", "-r", "").stdout.decode().split()
        self.assertEqual([k for k in keys if "/" in k and not k.startswith("jail/")], [],
                         "keys outside the prefix: %r" % keys)
        self.assert_no_open_uploads()


class CrashTest(WriteMountCase, ErrnoMixin):
    def open_uploads(self):
        with harness.urllib.request.urlopen(self.server.endpoint + "/_ossmount/uploads",
                                            timeout=10) as r:
            return harness.json.loads(r.read())["uploads"]

    WRITER = r"""
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
block = os.urandom(1 << 20)
for i in range(int(sys.argv[2])):
    os.write(fd, block)
print("written", flush=True)
sys.stdin.read()  # holds the file open, mid-way, until killed
"""

    def start_writer(self, mnt):
        """A process that wrote 20 MiB to ckpt/big.bin and holds it open, two 8 MiB parts
        stored on the server (the default part size); killed at cleanup."""
        os.mkdir(mnt.path("ckpt"))
        writer = subprocess.Popen([sys.executable, "-c", self.WRITER, mnt.path("ckpt", "big.bin"),
                                   "20"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        self.addCleanup(writer.stdin.close)
        self.addCleanup(writer.stdout.close)
        self.addCleanup(lambda: writer.poll() is None and writer.kill())
        self.assertEqual(writer.stdout.readline(), "written\n")
        harness.wait_for(lambda: [u["parts"] for u in self.open_uploads()] == [2], 60,
                         "two parts stored on the server")
        return writer

    def leave_an_open_upload(self, journal):
        """kill -9 of an unsupervised mount writing ckpt/big.bin, two of its parts stored."""
        # Unsupervised, the mount dies with the daemon (test_restart.py kills a supervised one).
        mnt = self.mount("--no-supervise", journal=journal)  # default 8 MiB parts
        writer = self.start_writer(mnt)
        os.kill(mnt.proc.pid, signal.SIGKILL)
        mnt.proc.wait(30)
        writer.kill()
        writer.wait(30)
        harness.force_unmount(mnt.mountpoint)

    def test_kill_9_mid_upload_then_next_mount_aborts_it(self):
        journal = tempfile.mkdtemp(prefix="upload-journal-")
        self.leave_an_open_upload(journal)
        self.assertEqual(sorted(os.listdir(journal)) != [], True, "the journal holds a record")
        # Nothing under the key; the upload is still open on the server.
        self.assertFalse(os.path.exists(self.on_server("ckpt", "big.bin")))
        uploads = self.open_uploads()
        self.assertEqual([(u["key"], u["parts"], u["bytes"]) for u in uploads],
                         [("ckpt/big.bin", 2, 16 * MiB)])
        # A mount with another journal leaves another run's upload alone.
        other = self.mount()
        self.assertFalse(os.path.exists(other.path("ckpt", "big.bin")))
        self.assertEqual(self.server.stats()["open_multipart_uploads"], 1)
        self.assertEqual(other.unmount(), 0)
        self.assertNotIn("an earlier run left open", other.output())
        # The next mount with the same journal aborts it before it serves.
        again = self.mount(journal=journal)
        self.assertIn("aborted 1 multipart upload(s) an earlier run left open", again.output())
        self.assertEqual(self.server.stats()["open_multipart_uploads"], 0)
        self.assertEqual(self.server.stats()["ABORT_MULTIPART"], 1)
        self.assertEqual(os.listdir(again.path("ckpt")), [])
        self.assertFalse(os.path.exists(self.on_server("ckpt", "big.bin")))
        self.assertEqual(again.unmount(), 0)
        # A third mount finds nothing left to abort.
        third = self.mount(journal=journal)
        self.assertEqual(third.unmount(), 0)
        self.assertNotIn("an earlier run left open", third.output())

    def test_sigterm_while_a_file_is_open_for_writing_saves_nothing_under_its_key(self):
        # A DaemonSet pod deleted mid-save: the writer never closed, so the 20 MiB so far are
        # not a checkpoint. Completing them would leave a truncated file that looks saved.
        mnt = self.mount()
        writer = self.start_writer(mnt)
        mnt.proc.send_signal(signal.SIGTERM)
        self.assertEqual(mnt.proc.wait(60), 0, mnt.output())
        writer.kill()
        writer.wait(30)
        harness.force_unmount(mnt.mountpoint)
        self.assertFalse(os.path.exists(self.on_server("ckpt", "big.bin")))
        self.assertEqual(self.server.stats()["open_multipart_uploads"], 0)
        self.assertIn("saving 'ckpt/big.bin' failed", mnt.output())
        self.assertIn("the mount ended while the file was still open for writing", mnt.output())

    def abort_uploads(self, *args, endpoint=None):
        cmd = [harness.OSSMOUNT, "abort-uploads", self.server.bucket] + \
            self.server.client_args()[4:] + ["--endpoint", endpoint or self.server.endpoint] + \
            list(args)
        return subprocess.run(cmd, env=self.server.env(), capture_output=True, text=True,
                              timeout=300)

    def test_abort_uploads_command_aborts_what_a_machine_that_never_came_back_left(self):
        # The journal is lost with the machine: only the command can find the upload.
        self.leave_an_open_upload(tempfile.mkdtemp(prefix="upload-journal-"))
        self.assertEqual(self.server.stats()["open_multipart_uploads"], 1)
        # Younger than --older-than (default 24h, here 1h): left alone, a save in progress.
        for args in ((), ("--older-than", "1h")):
            r = self.abort_uploads(*args)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("1 open upload(s) under 'bucket/'; aborted 0", r.stdout)
        self.assertEqual(self.server.stats()["open_multipart_uploads"], 1)
        r = self.abort_uploads("--older-than", "0", "--dry-run")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("would abort ckpt/big.bin (upload ", r.stdout)
        self.assertEqual(self.server.stats()["open_multipart_uploads"], 1)
        # A prefix the upload is not under finds nothing.
        r = subprocess.run([harness.OSSMOUNT, "abort-uploads", "bucket:/other",
                            "--endpoint", self.server.endpoint, "--older-than=0"] +
                           self.server.client_args()[4:], env=self.server.env(),
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("0 open upload(s) under 'bucket/other/'", r.stdout)
        r = self.abort_uploads("--older-than", "0")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("aborted ckpt/big.bin (upload ", r.stdout)
        self.assertEqual(self.server.stats()["open_multipart_uploads"], 0)
        self.assertEqual(self.server.stats()["ABORT_MULTIPART"], 1)
        self.assertFalse(os.path.exists(self.on_server("ckpt", "big.bin")))
        # Bad input: a clear error, and the exit status says which kind.
        r = self.abort_uploads("--older-than", "soon")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--older-than", r.stderr)
        r = self.abort_uploads("--older-than", "0", "--retry-budget", "2s",
                               endpoint="http://127.0.0.1:1")
        self.assertEqual(r.returncode, 1)
        self.assertIn("listing the open uploads", r.stderr)
        self.assertNotIn(harness.SK, r.stdout + r.stderr)


if __name__ == "__main__":
    harness.main()
