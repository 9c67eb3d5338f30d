"""Writes that never lose data when a second handle or a second client takes part.

docs/SEMANTICS.md "Writing", the rows on ownership, server checks and renames. Each test is
a reproduction of a way an earlier write path lost a save or served wrong bytes, run through
a real mount of the bundled server; "another client" is ossmount-client writing the bucket
over HTTP, as a job on another machine would.
- A file open for reading on this mount can be rewritten: its readers keep the old size and
  the old bytes (the writer gets an inode of its own), never bytes of an unfinished upload,
  and after the rewrite no page of the old version is served.
- A reader of a new version never gets pages a reader of the old version brought into the
  kernel's page cache.
- A handle open for writing owns its name until it is released, fsync or not: a second
  writer, a reader, a rename onto it and an unlink get EBUSY.
- O_EXCL, and creates and opens without O_TRUNC, ask the server before anything is replaced;
  a create the server said was new is completed with forbid-overwrite, so a race fails the
  close with EEXIST and the other client's object stays.
- A directory rename onto a directory that is not empty on the server gives ENOTEMPTY.
- Two live daemons sharing an upload journal keep each other's uploads.
- A directory rename that fails removes every copy it made or may have made.
- Clear answers: EPERM for links, FIFOs and devices; names whose keys the service would
  refuse fail at create; an upload the server lost fails with EIO; a full upload journal
  refuses the save with ENOSPC; truncate, reads and posix_fallocate of a file being written.
"""
import errno
import os
import subprocess
import tempfile
import threading
import time
import unittest

import harness
from test_writes import MiB, WriteMountCase, random_bytes, server_files


class SafetyCase(WriteMountCase):
    def assert_errno(self, code, fn, *args):
        with self.assertRaises(OSError) as e:
            fn(*args)
        self.assertEqual(e.exception.errno, code,
                         "%s%r: %s" % (getattr(fn, "__name__", fn), args, e.exception))

    def other_put(self, key, data, server=None):
        """Another client PUTs `key`: over HTTP, as a job on another machine would."""
        path = os.path.join(tempfile.mkdtemp(prefix="other-client-"), "body")
        with open(path, "wb") as f:
            f.write(data)
        harness.client(server or self.server, "put", key, path)

    def server_bytes(self, rel):
        with open(self.on_server(rel), "rb") as f:
            return f.read()

    @staticmethod
    def read(path):
        with open(path, "rb") as f:
            return f.read()


class ReadersAndRewritesTest(SafetyCase):
    def test_a_rewrite_while_a_reader_has_it_open_serves_no_page_of_another_version(self):
        """Issue item 1: A reads old.bin, B rewrites it with O_TRUNC in two pieces, A reads in
        the middle, both close. A keeps reading the old version while B writes, a new reader
        reads what B wrote so far, and afterwards every page read is the new version's."""
        old, new = random_bytes(3_000_000, 1), random_bytes(3_000_000, 2)
        self.other_put("old.bin", old)
        mnt = self.mount()
        path = mnt.path("old.bin")
        a = open(path, "rb", buffering=0)
        try:
            self.assertEqual(a.read(MiB), old[:MiB])
            b = os.open(path, os.O_WRONLY | os.O_TRUNC)
            try:
                os.write(b, new[:1_501_234])
                self.assertEqual(os.pread(a.fileno(), MiB, 1_500_234),
                                 old[1_500_234:1_500_234 + MiB])
                self.assertEqual(os.fstat(a.fileno()).st_size, len(old))
                # A reader opened while B writes reads what B wrote so far.
                with open(path, "rb") as c:
                    self.assertEqual(c.read(), new[:1_501_234])
                os.write(b, new[1_501_234:])
            finally:
                os.close(b)
        finally:
            a.close()
        self.assertEqual(self.read(path), new)
        with open(path, "rb", buffering=0) as f:
            for off in range(0, len(new), 4096):
                self.assertEqual(os.pread(f.fileno(), 4096, off), new[off:off + 4096],
                                 "page at %d" % off)
        self.assertEqual(self.server_bytes("old.bin"), new)
        self.assert_no_open_uploads()

    def test_a_reader_keeps_the_old_file_until_the_rewrite_completes(self):
        """Issue item 2: r = open(f); another descriptor on this mount opens f with O_TRUNC and
        writes 1.5 MB. r still sees the old size and reads the old bytes, never the upload's;
        a reader opened after the new file completed reads the new one."""
        old, new = random_bytes(2 * MiB + 11, 3), random_bytes(3 * MiB // 2, 13)
        self.other_put("f.bin", old)
        mnt = self.mount(ttl="60")
        path = mnt.path("f.bin")
        r = os.open(path, os.O_RDONLY)
        try:
            self.assertEqual(os.pread(r, 4096, 0), old[:4096])
            w = os.open(path, os.O_WRONLY | os.O_TRUNC)
            try:
                self.assertEqual(os.fstat(r).st_size, len(old))
                self.assertEqual(os.pread(r, 4096, MiB), old[MiB:MiB + 4096])
                os.write(w, new)
                self.assertEqual(os.fstat(r).st_size, len(old))
                self.assertEqual(os.pread(r, 4096, MiB), old[MiB:MiB + 4096])
                self.assertEqual(os.pread(r, len(old), 0), old)
                self.assertEqual(self.server_bytes("f.bin"), old)
            finally:
                os.close(w)
        finally:
            os.close(r)
        self.assertEqual(self.server_bytes("f.bin"), new)
        self.assertEqual(self.read(path), new)
        self.assertEqual(os.stat(path).st_size, len(new))
        self.assertNotIn("fuse open", mnt.output())  # the reopen on a new inode is silent

    def test_a_reader_of_the_new_version_never_gets_the_old_versions_pages(self):
        """Another client replaces a small file while A, on this mount, holds the old version
        open. C opens the new version; A reads its old bytes again (into the kernel's page
        cache of the same inode). C must read the new version, every byte."""
        v1, v2 = random_bytes(200_000, 4), random_bytes(200_000, 5)
        self.other_put("img.bin", v1)
        mnt = self.mount(writes=False, ttl="0")
        path = mnt.path("img.bin")
        a = os.open(path, os.O_RDONLY)
        try:
            self.assertEqual(os.pread(a, 4096, 0), v1[:4096])
            self.other_put("img.bin", v2)
            c = os.open(path, os.O_RDONLY)
            try:
                self.assertEqual(os.pread(a, len(v1), 0), v1)  # A keeps its version
                self.assertEqual(os.pread(c, len(v2), 0), v2)
            finally:
                os.close(c)
        finally:
            os.close(a)
        self.assertEqual(self.read(path), v2)

    def test_save_then_load_at_once_is_never_refused(self):
        """A close returns before the kernel sends the release: the next open (torch.save
        then torch.load) must not meet the handle being released."""
        mnt = self.mount()
        path = mnt.path("ck.pt")
        for i in range(40):
            data = random_bytes(10_000 + i, 100 + i)
            with open(path, "wb") as f:
                f.write(data)
            self.assertEqual(self.read(path), data)
            with open(path, "rb") as r:
                r.read(10)
            with open(path, "wb") as f:  # right after a reader's close
                f.write(data[::-1])
            self.assertEqual(self.read(path), data[::-1])


class OneWriterTest(SafetyCase):
    def test_the_writer_owns_its_name_after_fsync_until_close(self):
        """Issue item 3: A writes ck.pt, fsyncs and keeps it open. B's O_TRUNC open and
        `mv new.pt ck.pt` get EBUSY, a reader reads what A wrote; A's last byte and close make
        the object, and new.pt is untouched. (A rename or unlink of the open file itself
        works: test_staged_writes.py.)"""
        mnt = self.mount()
        ck, new = mnt.path("ck.pt"), mnt.path("new.pt")
        with open(new, "wb") as f:
            f.write(b"N" * 700)
        a = os.open(ck, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(a, b"A" * 1000)
            os.fsync(a)
            self.assertEqual(self.server_bytes("ck.pt"), b"A" * 1000)
            self.assert_errno(errno.EBUSY, os.open, ck, os.O_WRONLY | os.O_TRUNC)
            self.assert_errno(errno.EBUSY, os.open, ck, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            self.assert_errno(errno.EBUSY, os.rename, new, ck)
            # A reader reads what is written so far (through a staged copy).
            with open(ck, "rb") as r:
                self.assertEqual(r.read(), b"A" * 1000)
            os.write(a, b"A")
        finally:
            os.close(a)
        self.assertEqual(self.server_bytes("ck.pt"), b"A" * 1001)
        self.assertEqual(self.server_bytes("new.pt"), b"N" * 700)
        self.assertEqual(self.read(ck), b"A" * 1001)
        # Released: the name is free again.
        os.rename(new, ck)
        self.assertEqual(self.read(ck), b"N" * 700)
        self.assert_no_open_uploads()


class CreatesAskTheServerTest(SafetyCase):
    def test_o_excl_and_creates_see_what_another_client_made(self):
        """Issue item 4: the listing of lock/ is cached (also under an indefinite TTL), then
        another client PUTs lock/leader: O_EXCL gives EEXIST, and touch or an open without
        O_TRUNC leaves the object as it is."""
        for ttl in ("60", "indefinite"):
            with self.subTest(ttl=ttl):
                mnt = self.mount(ttl=ttl)
                d = "lock-" + ttl
                os.mkdir(mnt.path(d))
                self.assertEqual(os.listdir(mnt.path(d)), [])
                theirs = random_bytes(MiB, 6)
                self.other_put(d + "/leader", theirs)
                self.assert_errno(errno.EEXIST, os.open, mnt.path(d, "leader"),
                                  os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                subprocess.run(["touch", mnt.path(d, "leader")], check=True)
                fd = os.open(mnt.path(d, "leader"), os.O_WRONLY | os.O_CREAT, 0o644)
                self.assertEqual(os.fstat(fd).st_size, len(theirs))
                os.close(fd)
                self.assertEqual(self.server_bytes(d + "/leader"), theirs)
                self.assertEqual(self.read(mnt.path(d, "leader")), theirs)
                # O_EXCL of a name that is new on the server too still works.
                fd = os.open(mnt.path(d, "mine"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                os.write(fd, b"mine")
                os.close(fd)
                self.assertEqual(self.server_bytes(d + "/mine"), b"mine")

    def check_create_race(self, mnt, rel, size, server=None):
        """O_EXCL create that the server says is new; another client PUTs the name before the
        close: the close fails with EEXIST and the other object stays."""
        fd = os.open(mnt.path(rel), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        mine = random_bytes(size, 7)
        theirs = random_bytes(1000, 8)
        try:
            os.write(fd, mine)
            self.other_put(rel, theirs, server=server)
        finally:
            with self.assertRaises(OSError) as e:
                os.close(fd)
        self.assertEqual(e.exception.errno, errno.EEXIST)
        return theirs

    def test_a_create_raced_by_another_client_fails_the_close_with_eexist(self):
        mnt = self.mount("--upload-part-size", "1MiB")
        for rel, size in (("small.bin", 5000), ("large.bin", 3 * MiB + 5)):
            with self.subTest(size=size):
                theirs = self.check_create_race(mnt, rel, size)
                self.assertEqual(self.server_bytes(rel), theirs)
                self.assertIn("saving '%s' failed" % rel, mnt.output())
        self.assert_no_open_uploads()

    def test_the_race_over_s3_uses_if_none_match(self):
        env = self.server.env()
        env["AWS_ACCESS_KEY_ID"] = harness.AK
        env["AWS_SECRET_ACCESS_KEY"] = harness.SK
        journal = tempfile.mkdtemp(prefix="upload-journal-")
        mnt = harness.Mount(self.server, args=["--protocol", "s3", "--allow-writes",
                                               "--upload-journal", journal,
                                               "--upload-part-size", "5MiB"], env=env)
        self.addCleanup(mnt.close)
        for rel, size in (("s3-small.bin", 5000), ("s3-large.bin", 11 * MiB)):
            with self.subTest(size=size):
                theirs = self.check_create_race(mnt, rel, size)
                self.assertEqual(self.server_bytes(rel), theirs)
        self.assert_no_open_uploads()


class DirectoryRenameTest(SafetyCase):
    def test_rename_onto_a_directory_another_client_filled_is_enotempty(self):
        """Issue item 5: mv -T src dst, where dst/ holds objects another client PUT after this
        mount listed the root: ENOTEMPTY, nothing of dst replaced, src intact."""
        mnt = self.mount(ttl="60")
        os.mkdir(mnt.path("src"))
        with open(mnt.path("src", "a"), "w") as f:
            f.write("mine")
        self.assertEqual(sorted(os.listdir(mnt.mountpoint)), ["src"])
        self.other_put("dst/a", b"theirs a")
        self.other_put("dst/b", b"theirs b")
        r = subprocess.run(["mv", "-T", mnt.path("src"), mnt.path("dst")],
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Directory not empty", r.stderr)
        self.assertEqual(self.server_bytes("dst/a"), b"theirs a")
        self.assertEqual(self.server_bytes("dst/b"), b"theirs b")
        self.assertEqual(self.server_bytes("src/a"), b"mine")
        self.assertEqual(self.read(mnt.path("src", "a")), b"mine")
        # An empty directory on the server is replaced, as POSIX rename does.
        os.mkdir(mnt.path("empty"))
        os.rename(mnt.path("src"), mnt.path("empty"))
        self.assertEqual(self.server_bytes("empty/a"), b"mine")
        self.assertFalse(os.path.exists(self.on_server("src", "a")))
        # A file on the server where the directory would go: ENOTDIR.
        os.mkdir(mnt.path("src2"))
        self.other_put("file2", b"f")
        self.assert_errno(errno.ENOTDIR, os.rename, mnt.path("src2"), mnt.path("file2"))
        self.assertEqual(self.server_bytes("file2"), b"f")


class SharedJournalTest(SafetyCase):
    def test_a_new_mount_keeps_a_live_mounts_uploads(self):
        """Issue item 6: A writes 3 MiB in 1 MiB parts and keeps the file open; B starts with
        the same --upload-journal. B aborts nothing; A's next write and its close succeed.
        Then A is killed mid-upload: the next mount aborts A's upload, and only it."""
        journal = tempfile.mkdtemp(prefix="shared-journal-")
        a = self.mount("--upload-part-size", "1MiB", journal=journal)
        data = random_bytes(4 * MiB + 3, 9)
        fd = os.open(a.path("live.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data[:3 * MiB])
            harness.wait_for(lambda: self.server.stats()["UPLOAD_PART"] >= 2, 30, "parts")
            # Unsupervised: B is killed below, and its death must end the mount's uploads.
            b = self.mount("--upload-part-size", "1MiB", "--no-supervise", journal=journal)
            b_fd = os.open(b.path("b.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(b_fd, random_bytes(2 * MiB, 10))  # B's own upload, live too
            os.write(fd, data[3 * MiB:])
        finally:
            os.close(fd)
        self.assertEqual(self.server_bytes("live.bin"), data)
        self.assertNotIn("aborted", b.output())
        # A third mount on the same journal while B's upload is open: B's stays.
        c = self.mount(journal=journal)
        self.assertNotIn("aborted", c.output())
        os.write(b_fd, b"end")
        os.close(b_fd)
        self.assertEqual(len(self.server_bytes("b.bin")), 2 * MiB + 3)
        # A daemon that dies leaves its upload to the next mount with the journal.
        parts_before = self.server.stats()["UPLOAD_PART"]
        fd = os.open(b.path("dead.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, random_bytes(3 * MiB, 11))
        # A part is sent only once the upload is in the journal (a kill between the server's
        # answer to the initiate and the record is the one window the journal cannot close).
        harness.wait_for(lambda: self.server.stats()["UPLOAD_PART"] > parts_before, 30,
                         "the first part of dead.bin")
        b.proc.kill()
        b.proc.wait()
        with self.assertRaises(OSError):
            os.close(fd)
        harness.force_unmount(b.mountpoint)
        d = self.mount(journal=journal)
        self.assertIn("aborted 1 multipart upload(s)", d.output())
        self.assert_no_open_uploads()
        self.assertFalse(os.path.exists(self.on_server("dead.bin")))


class FailedDirectoryRenameTest(SafetyCase):
    def test_a_failed_directory_rename_removes_every_copy(self):
        """Issue item 7: 1,000 objects under big/; copies to moved/ are reset before the server
        runs them (30%) or after it did (20%: an answer lost), with one retry (libcurl also
        resends a request whose connection was reset before any answer, once). The rename
        fails with EIO, the sources are intact and nothing is left under moved/, also where
        a copy's answer was lost."""
        for i in range(1000):
            path = self.on_server("big", "f%04d" % i)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(b"%04d" % i * 25)
        self.server_rescan()
        mnt = self.mount("--retries", "1", ttl="60")
        self.assertEqual(len(os.listdir(mnt.path("big"))), 1000)
        faults = "write-reset-rate=0.3&lost-copy-rate=0.2&write-fault-prefix=moved/"
        urllib_post(self.server.endpoint + "/_ossmount/faults?" + faults)
        r = subprocess.run(["mv", "-T", mnt.path("big"), mnt.path("moved")],
                           capture_output=True, text=True)
        urllib_post(self.server.endpoint + "/_ossmount/faults?clear")
        self.assertNotEqual(r.returncode, 0, r.stderr)
        self.assertIn("Input/output error", r.stderr)
        stats = self.server.stats()
        self.assertGreater(stats["faults"]["lost_copy"], 0)
        files = server_files(self.bucket_dir)
        self.assertEqual(sorted(k for k in files if k.startswith("moved")), [])
        self.assertEqual(len([k for k in files if k.startswith("big/")]), 1000)
        self.assertNotIn("could not remove", mnt.output())
        self.assertEqual(len(os.listdir(mnt.path("big"))), 1000)
        self.assertFalse(os.path.exists(mnt.path("moved")))


class ClearAnswersTest(SafetyCase):
    """What the issue listed as wrong answers: each now the documented errno, with nothing
    lost."""

    def test_hard_links_fifos_and_devices_are_eperm_a_regular_mknod_works(self):
        # (Symbolic links work: test_symlinks.py.)
        mnt = self.mount()
        with open(mnt.path("target"), "wb") as f:
            f.write(b"t")
        self.assert_errno(errno.EPERM, os.link, mnt.path("target"), mnt.path("hard"))
        self.assert_errno(errno.EPERM, os.mkfifo, mnt.path("fifo"))
        self.assert_errno(errno.EPERM, os.mknod, mnt.path("dev"), 0o644 | 0o020000, os.makedev(1, 3))
        os.mknod(mnt.path("plain"), 0o644 | 0o100000)
        self.assertEqual(self.server_bytes("plain"), b"")
        self.assertEqual(sorted(os.listdir(mnt.mountpoint)), ["plain", "target"])
        ro = self.mount(writes=False)
        self.assert_errno(errno.EROFS, os.symlink, "target", ro.path("link"))

    def test_names_the_service_would_refuse_fail_at_create(self):
        mnt = self.mount("--upload-part-size", "1MiB")
        deep = mnt.path(*(["d" * 200] * 4))
        os.makedirs(deep)  # 804 bytes of key so far
        self.assert_errno(errno.ENAMETOOLONG, os.open, os.path.join(deep, "f" * 230),
                          os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        with open(os.path.join(deep, "f" * 200), "wb") as f:  # 1,005 bytes: fine
            f.write(b"ok")
        bad = os.path.join(os.fsencode(mnt.mountpoint), b"bad-\xff-utf8")
        self.assert_errno(errno.EINVAL, os.open, bad, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.assert_errno(errno.EINVAL, os.open, mnt.path("\\leading"),
                          os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.assert_errno(errno.EINVAL, os.mkdir, mnt.path("\\dir"))
        os.mkdir(mnt.path("sub"))
        with open(mnt.path("sub", "\\fine below the root"), "wb") as f:
            f.write(b"x")
        self.assertIn("fuse create", mnt.output())  # each refusal logged with its reason
        self.assertIn("not valid UTF-8", mnt.output())

    def test_an_upload_the_server_lost_in_a_restart_fails_with_eio(self):
        mnt = self.mount("--upload-part-size", "1MiB", "--retries", "1")
        fd = os.open(mnt.path("lost.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, random_bytes(2 * MiB + 5, 20))
            harness.wait_for(lambda: self.server.stats()["UPLOAD_PART"] >= 2, 30, "parts")
            # The server restarts on the same port: its open uploads are gone.
            port = self.server.port
            self.server.stop()
            self.server = harness.TestServer(self.root, bucket="bucket", port=port)
            self.addCleanup(self.server.stop)
            with self.assertRaises(OSError) as e:
                for _ in range(4):
                    os.write(fd, random_bytes(MiB, 21))
                os.fsync(fd)
            self.assertEqual(e.exception.errno, errno.EIO)
        finally:
            with self.assertRaises(OSError):
                os.close(fd)
        self.assertIn("no longer knows the multipart upload", mnt.output())
        self.assertFalse(os.path.exists(self.on_server("lost.bin")))

    def test_a_full_upload_journal_refuses_the_save(self):
        journal = tempfile.mkdtemp(prefix="full-journal-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", journal], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", journal])
        mnt = self.mount("--upload-part-size", "1MiB", journal=journal)
        subprocess.run(["dd", "if=/dev/zero", "of=" + os.path.join(journal, "filler"), "bs=4k"],
                       stderr=subprocess.DEVNULL)
        fd = os.open(mnt.path("big.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            with self.assertRaises(OSError) as e:
                for _ in range(8):
                    os.write(fd, random_bytes(MiB, 22))
                os.fsync(fd)
            self.assertEqual(e.exception.errno, errno.ENOSPC)
        finally:
            with self.assertRaises(OSError):
                os.close(fd)
        self.assertIn("cannot record the upload", mnt.output())
        self.assertFalse(os.path.exists(self.on_server("big.bin")))
        self.assert_no_open_uploads()
        # With room again, saves work.
        os.unlink(os.path.join(journal, "filler"))
        with open(mnt.path("big.bin"), "wb") as f:
            f.write(random_bytes(3 * MiB, 23))
        self.assertEqual(len(self.server_bytes("big.bin")), 3 * MiB)

    def test_truncate_reads_and_fallocate_of_a_file_being_written(self):
        # Without a staging directory the file can only stream.
        bare = self.mount("--upload-part-size", "1MiB", "--staging-dir", "")
        # ftruncate to another size than written: ENOTSUP, and the file goes on.
        fd = os.open(bare.path("t.bin"), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, b"abc")
            self.assert_errno(errno.ENOTSUP, os.ftruncate, fd, 0)
            os.ftruncate(fd, 3)
            # Reading through the descriptor that writes: ENOTSUP, and the file goes on.
            self.assert_errno(errno.ENOTSUP, os.pread, fd, 1, 1)
            os.write(fd, b"def")
        finally:
            os.close(fd)
        self.assertEqual(self.server_bytes("t.bin"), b"abcdef")
        # With one (the default), both work on a staged copy.
        mnt = self.mount("--upload-part-size", "1MiB")
        fd = os.open(mnt.path("t2.bin"), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, b"abc")
            os.ftruncate(fd, 1)
            self.assertEqual(os.pread(fd, 10, 0), b"a")
            os.write(fd, b"def")  # at offset 3: the file position stays
        finally:
            os.close(fd)
        self.assertEqual(self.server_bytes("t2.bin"), b"a\0\0def")
        # posix_fallocate: the file gets its size, the bytes not written are zeros, and the
        # upload goes on (glibc would otherwise write a byte into every 4 KiB block).
        data = random_bytes(MiB + 5, 24)
        with open(mnt.path("pre.bin"), "wb") as f:
            os.posix_fallocate(f.fileno(), 0, 3 * MiB)
            self.assertEqual(os.fstat(f.fileno()).st_size, 3 * MiB)
            f.write(data)
        self.assertEqual(self.server_bytes("pre.bin"), data + bytes(3 * MiB - len(data)))
        self.assertEqual(os.stat(mnt.path("pre.bin")).st_size, 3 * MiB)
        self.assert_no_open_uploads()


def urllib_post(url):
    import urllib.request
    urllib.request.urlopen(urllib.request.Request(url, method="POST"), timeout=10).read()


if __name__ == "__main__":
    harness.main()
