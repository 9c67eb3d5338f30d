"""Outliving the daemon: a supervised mount (the default) survives the death of its daemon.

docs/SEMANTICS.md "Outliving the daemon". The daemon proper is the supervisor's child; each
case kills it with SIGKILL and checks what the mount's users saw.
- Five kills during one ImageFolder epoch (8 DataLoader workers, --metadata-ttl indefinite, the
  server 35 ms to first byte): the epoch completes, every file's bytes equal the object's, and
  no reader sees an error.
- Three kills during a sequential read of a 1 GiB file through one descriptor: every byte
  equals the object's (the handle comes back pinned to the version it opened).
- Three kills during `find` over 10,000 files in 100 directories, and one while a directory of
  3,000 entries is half read through one handle: find lists every file and exits 0, and the
  half-read directory's listing continues where it was, each name once.
- A kill during 8 writers: each writer either finished (its close returned 0, and the bucket
  holds exactly its bytes) or got EIO (and the bucket holds nothing of it); no multipart
  upload stays open.
- A daemon that keeps dying: after 10 deaths in a row, each soon after its start, the
  supervisor unmounts and exits 1.
- `ossmount stats` and the metrics count the restarts and say the last cause.
Whatever the kernel's FUSE io_uring switch (scripts/test.sh turns it on), a supervised mount
serves over /dev/fuse, which the log says.
"""
import errno
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import harness

MiB = 1 << 20
DIGEST_EPOCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "digest_epoch.py")


def served_again(mount):
    return mount.output().count("the mount is served again")


def kill_daemon(test, mount):
    """SIGKILL to the serving child; returns once another child serves the mount."""
    before = served_again(mount)
    pid = mount.daemon_pid()
    os.kill(pid, signal.SIGKILL)
    harness.wait_for(lambda: served_again(mount) > before, 60, "a new daemon serving")
    test.assertNotEqual(mount.daemon_pid(), pid)


class RestartCase(unittest.TestCase):
    def assert_resumed(self, mount, times):
        out = mount.output()
        self.assertEqual(out.count("the mount is served again"), times, out[-3000:])
        self.assertEqual(out.count("asked the kernel to resend"), times, out[-3000:])
        # Each restarted daemon skipped the bucket probe the first one made.
        self.assertEqual(out.count("no start-up probe"), times, out[-3000:])
        self.assertIn("FUSE over io_uring off: not used on a connection that outlives", out)


class EpochCase(RestartCase):
    """An ImageFolder tree on a server 35 ms to first byte, and an epoch over a mount of it
    in a process of its own (digest_epoch.py)."""

    @classmethod
    def setUpClass(cls):
        cls.src = harness.ensure_dataset("imagefolder", "restart-images", "--classes", "8",
                                         "--per-class", "150", "--seed", "50")
        cls.manifest = harness.read_manifest(cls.src)
        cls.server = harness.TestServer(os.path.dirname(cls.src), bucket="restart-images",
                                        args=["--ttfb-ms", "35"])

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def start_epoch(self, m):
        """The epoch's process, once ImageFolder has listed the tree, and its output file."""
        out = tempfile.NamedTemporaryFile(prefix="epoch-", suffix=".json", delete=False).name
        epoch = subprocess.Popen(
            ["/usr/bin/python3", DIGEST_EPOCH, m.mountpoint, out], stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        self.addCleanup(lambda: epoch.poll() is None and epoch.kill())
        self.assertEqual(epoch.stdout.readline(), "scanned\n")
        return epoch, out

    def check_epoch(self, epoch, out):
        """The epoch ended with no error, and every file's bytes are the object's."""
        rc = epoch.wait(600)
        rest = epoch.stdout.read()
        epoch.stdout.close()
        self.assertEqual(rc, 0, rest)
        with open(out) as f:
            seen = json.load(f)["files"]
        self.assertEqual(len(seen), len(self.manifest))
        for rel, (size, digest) in self.manifest.items():
            self.assertEqual(seen[rel], [size, digest], rel)


class ImageFolderRestartTest(EpochCase):
    def test_five_kills_during_an_epoch_cost_no_error(self):
        m = harness.Mount(self.server, args=["--metadata-ttl", "indefinite"])
        self.addCleanup(m.close)
        epoch, out = self.start_epoch(m)
        # ImageFolder has listed every directory; each new daemon has the listings of the one
        # before (the state directory's "listings"), so no kill costs a listing again.
        time.sleep(0.2)  # the last listing is written by a thread of its own
        lists = self.server.stats()["LIST"]
        for _ in range(5):
            time.sleep(0.4)
            self.assertIsNone(epoch.poll(), "the epoch ended before the kills")
            kill_daemon(self, m)
        self.check_epoch(epoch, out)
        self.assert_resumed(m, 5)
        self.assertEqual(self.server.stats()["LIST"], lists, "a restart listed again")
        self.assertRegex(m.output(), r"files open for writing \(these get EIO: their bytes died "
                         r"with it\), (9|[1-9][0-9]+) directory listings")
        # Five kills, each answered by a new child on the same mount: the last epoch's pid.
        self.assertIn("restart 5", m.output())




class LargeFileRestartTest(RestartCase):
    SIZE = 1 << 30

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="restart-large-")
        os.makedirs(os.path.join(self.root, "bucket"))
        block = os.urandom(MiB)
        digest = hashlib.sha256()
        with open(os.path.join(self.root, "bucket", "big.bin"), "wb") as f:
            for i in range(self.SIZE // MiB):
                chunk = i.to_bytes(8, "little") + block[8:]  # each MiB its own
                digest.update(chunk)
                f.write(chunk)
        self.digest = digest.hexdigest()
        self.server = harness.TestServer(self.root, bucket="bucket")
        self.addCleanup(self.server.stop)

    def test_kills_during_a_sequential_read_of_1_GiB(self):
        m = harness.Mount(self.server, args=["--metadata-ttl", "indefinite"])
        self.addCleanup(m.close)
        progress = {"bytes": 0, "error": None, "digest": None}

        def read():
            digest = hashlib.sha256()
            try:
                with open(m.path("big.bin"), "rb", buffering=0) as f:
                    while True:
                        chunk = f.read(MiB)
                        if not chunk:
                            break
                        digest.update(chunk)
                        progress["bytes"] += len(chunk)
                progress["digest"] = digest.hexdigest()
            except OSError as e:
                progress["error"] = e

        reader = threading.Thread(target=read)
        reader.start()
        for quarter in (1, 2, 3):
            harness.wait_for(lambda: progress["bytes"] >= quarter * self.SIZE // 4 or
                             not reader.is_alive(), 300, "the read to pass a quarter")
            self.assertTrue(reader.is_alive(), "the read ended before the kill: %r" % progress)
            kill_daemon(self, m)
        reader.join(600)
        self.assertIsNone(progress["error"])
        self.assertEqual(progress["bytes"], self.SIZE)
        self.assertEqual(progress["digest"], self.digest)
        self.assert_resumed(m, 3)
        self.assertRegex(m.output(), r"\d+ nodes, 1 files open for reading")


class TreeRestartTest(RestartCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="restart-tree-")
        bucket = os.path.join(self.root, "bucket")
        for d in range(100):
            os.makedirs(os.path.join(bucket, "tree", "d%03d" % d))
            for i in range(100):
                with open(os.path.join(bucket, "tree", "d%03d" % d, "f%03d" % i), "wb") as f:
                    f.write(b"x")
        os.makedirs(os.path.join(bucket, "wide"))
        self.wide = sorted("entry-with-a-long-name-to-fill-pages-%05d" % i for i in range(3000))
        for name in self.wide:
            with open(os.path.join(bucket, "wide", name), "wb") as f:
                f.write(b"y")
        # 35 ms to first byte: the walk lists for a few seconds, long enough to be killed in.
        self.server = harness.TestServer(self.root, bucket="bucket", args=["--ttfb-ms", "35"])
        self.addCleanup(self.server.stop)

    def test_kills_during_find_over_10000_files(self):
        m = harness.Mount(self.server, args=["--metadata-ttl", "indefinite"])
        self.addCleanup(m.close)
        find = subprocess.Popen(["find", m.path("tree"), "-type", "f"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        kills = 0
        for _ in range(3):
            time.sleep(0.2)
            if find.poll() is not None:
                break
            kill_daemon(self, m)
            kills += 1
        self.assertGreater(kills, 0, "find ended before the first kill")
        out, err = find.communicate(300)
        self.assertEqual(find.returncode, 0, err)
        self.assertEqual(err, "")
        found = out.split()
        self.assertEqual(len(found), 10000)
        self.assertEqual(len(set(found)), 10000)
        self.assert_resumed(m, kills)
        # What a user asks: how often, why, and how long readers waited.
        stats = json.loads(harness.stats_json(m.mountpoint).stdout)
        self.assertEqual(stats["restarts"], kills)
        self.assertEqual(stats["pid"], m.daemon_pid())
        self.assertEqual(stats["last_restart_cause"], "was killed by signal 9 (SIGKILL)")
        self.assertGreaterEqual(stats["longest_restart_pause_ms"], stats["restart_pause_ms"])
        self.assertEqual(harness.metric(stats, "counters", "ossmount_daemon_restarts_total"),
                         kills)
        view = subprocess.run([harness.OSSMOUNT, "stats", m.mountpoint, "--once"],
                              capture_output=True, text=True, check=True).stdout
        self.assertIn("The daemon was restarted %d time(s) on this mount" % kills, view)

    def test_a_half_read_directory_continues_after_a_kill(self):
        m = harness.Mount(self.server, args=["--metadata-ttl", "indefinite"])
        self.addCleanup(m.close)
        # The kernel reads a directory in pages of about 4 KiB (a READDIR each, with the
        # offset to go on from); Python's scandir asks for 32 KiB at a time.
        names = []
        with os.scandir(m.path("wide")) as it:
            for entry in it:
                names.append(entry.name)
                if len(names) == 100:
                    kill_daemon(self, m)
        self.assertEqual(sorted(names), self.wide)
        self.assertEqual(len(names), len(set(names)))
        self.assert_resumed(m, 1)
        self.assertRegex(m.output(), r"\d+ nodes, \d+ files open for reading, 1 directories open")


class WritersRestartTest(RestartCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="restart-writes-")
        os.makedirs(os.path.join(self.root, "bucket"))
        self.server = harness.TestServer(self.root, bucket="bucket")
        self.addCleanup(self.server.stop)

    def test_a_kill_during_8_writers_saves_whole_files_or_fails_them(self):
        journal = tempfile.mkdtemp(prefix="upload-journal-")
        m = harness.Mount(self.server, args=["--allow-writes", "--upload-journal", journal,
                                             "--upload-part-size", "5MiB"])
        self.addCleanup(m.close)
        os.mkdir(m.path("ckpt"))
        writers = [subprocess.Popen([sys.executable, "-c", WRITER, m.path("ckpt", "w%d" % i),
                                     str(i)], stdout=subprocess.PIPE, text=True)
                   for i in range(8)]
        for w in writers:
            self.assertEqual(w.stdout.readline(), "started\n")
        time.sleep(0.5)  # each has about half its 24 MiB written
        kill_daemon(self, m)
        outcomes = []
        for w in writers:
            outcomes.append(w.stdout.read().strip())
            w.stdout.close()
            self.assertEqual(w.wait(120), 0)
        saved = failed = 0
        for i, outcome in enumerate(outcomes):
            on_server = os.path.join(self.root, "bucket", "ckpt", "w%d" % i)
            if outcome == "ok":
                saved += 1
                with open(on_server, "rb") as f:
                    self.assertEqual(hashlib.sha256(f.read()).hexdigest(), writer_digest(i))
            else:
                failed += 1
                self.assertEqual(outcome, "error %d" % errno.EIO, outcomes)
                self.assertFalse(os.path.exists(on_server), "w%d: %s" % (i, outcome))
        self.assertGreater(failed, 0, "no writer was cut by the kill: %r" % outcomes)
        harness.wait_for(lambda: self.server.stats()["open_multipart_uploads"] == 0, 60,
                         "no multipart upload left open")
        self.assertRegex(m.output(), r"aborted \d+ multipart upload\(s\) an earlier run left open")
        self.assertRegex(m.output(), r"\d+ files open for writing \(these get EIO")
        print("\n8 writers, one kill: %d saved whole, %d failed with EIO" % (saved, failed))


# Writes 24 MiB (writer_digest's bytes) in 1 MiB pieces, 40 ms apart, then closes; prints
# "ok" or "error ERRNO".
WRITER = r"""
import os, random, sys, time
path, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
print("started", flush=True)
try:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for _ in range(24):
            os.write(fd, rng.randbytes(1 << 20))
            time.sleep(0.04)
    finally:
        os.close(fd)
    print("ok")
except OSError as e:
    print("error %d" % e.errno)
"""


def writer_digest(seed):
    import random
    rng = random.Random(seed)
    digest = hashlib.sha256()
    for _ in range(24):
        digest.update(rng.randbytes(MiB))
    return digest.hexdigest()


def other_version_binary(directory):
    """A copy of ossmount that reports another version (its version string patched in place):
    an upgrade without a second build."""
    with open(harness.OSSMOUNT, "rb") as f:
        binary = f.read()
    version = subprocess.run([harness.OSSMOUNT, "--version"], capture_output=True, text=True,
                             check=True).stdout.split()[-1].encode()
    other = b"9" * len(version)
    copy = os.path.join(directory, "ossmount-next")
    with open(copy, "wb") as f:
        f.write(binary.replace(b"\0" + version + b"\0", b"\0" + other + b"\0"))
    os.chmod(copy, 0o755)
    got = subprocess.run([copy, "--version"], capture_output=True, text=True, check=True).stdout
    assert other.decode() in got, got
    return copy, other.decode()


def take_over(mount, server, binary=None, args=()):
    """`ossmount ... --take-over` of `mount`'s mount point in the foreground; returns the new
    supervisor's Popen and log path once it exits or says it serves."""
    log = tempfile.NamedTemporaryFile(prefix="take-over-", suffix=".log", delete=False).name
    cmd = harness.mount_command(server, mount.mountpoint,
                                ["--metadata-ttl", "indefinite", "--take-over"] + list(args))
    if binary:
        cmd[0] = binary
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, env=server.env(), stdout=out, stderr=subprocess.STDOUT)
    harness.wait_for(lambda: proc.poll() is not None or
                     "the mount is served again" in harness.read_text(log), 90,
                     "the new supervisor")
    return proc, log


class TakeOverTest(EpochCase):
    def test_a_take_over_mid_epoch_by_another_version_costs_no_error(self):
        m = harness.Mount(self.server, args=["--metadata-ttl", "indefinite"])
        self.addCleanup(m.close)
        binary, version = other_version_binary(tempfile.mkdtemp(prefix="upgrade-"))
        epoch, out = self.start_epoch(m)
        time.sleep(1)
        self.assertIsNone(epoch.poll(), "the epoch ended before the take-over")
        new, log = take_over(m, self.server, binary)
        self.addCleanup(lambda: new.poll() is None and harness.stop_process(new))
        self.assertIsNone(new.poll(), harness.read_text(log))
        # The old supervisor hands over and exits 0 once the new one serves.
        self.assertEqual(m.proc.wait(60), 0, m.output())
        self.assertIn("the new ossmount serves", m.output())
        self.check_epoch(epoch, out)
        stats = json.loads(harness.stats_json(m.mountpoint).stdout)
        self.assertEqual(stats["version"], version)
        self.assertEqual(stats["take_overs"], 1)
        self.assertEqual(stats["pid"], harness.serving_pid(new.pid))
        self.assertIn("asked the kernel to resend", harness.read_text(log))
        # The new daemon checked the bucket with its own options before it served.
        self.assertNotIn("no start-up probe", harness.read_text(log))
        # The new supervisor owns the mount now: an unmount ends it cleanly.
        subprocess.run(["fusermount3", "-u", m.mountpoint], check=True)
        self.assertEqual(new.wait(60), 0)

    def test_a_take_over_waits_for_a_file_being_written(self):
        m = harness.Mount(self.server, args=["--metadata-ttl", "indefinite", "--allow-writes",
                                             "--upload-journal",
                                             tempfile.mkdtemp(prefix="journal-")])
        self.addCleanup(m.close)
        data = os.urandom(3 * MiB)
        fd = os.open(m.path("saving.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.write(fd, data[:MiB])
        holder = {}

        def start():
            holder["new"], holder["log"] = take_over(m, self.server)

        thread = threading.Thread(target=start)
        thread.start()
        harness.wait_for(lambda: "asks for the mount" in m.output(), 60, "the request")
        time.sleep(1)
        # Still waiting for the writer: the old daemon serves its writes.
        self.assertIsNone(m.proc.poll())
        os.write(fd, data[MiB:])
        os.close(fd)  # saved by the old daemon; the hand-over follows
        thread.join(120)
        self.addCleanup(lambda: holder["new"].poll() is None and
                        harness.stop_process(holder["new"]))
        self.assertEqual(m.proc.wait(60), 0, m.output())
        with open(os.path.join(self.server.root, "restart-images", "saving.bin"), "rb") as f:
            self.assertEqual(f.read(), data)
        with open(m.path("saving.bin"), "rb") as f:
            self.assertEqual(f.read(), data)

    def test_a_take_over_that_fails_leaves_the_old_supervisor_serving(self):
        m = harness.Mount(self.server, args=["--metadata-ttl", "indefinite"])
        self.addCleanup(m.close)
        # A new daemon whose start fails: its bucket does not exist.
        log = tempfile.NamedTemporaryFile(prefix="take-over-", suffix=".log", delete=False).name
        cmd = harness.mount_command(self.server, m.mountpoint, ["--take-over"],
                                    bucket_spec="no-such-bucket")
        with open(log, "w") as out:
            r = subprocess.run(cmd, env=self.server.env(), stdout=out, stderr=subprocess.STDOUT,
                               timeout=120)
        self.assertEqual(r.returncode, 1, harness.read_text(log))
        harness.wait_for(lambda: "serving again" in m.output() or
                         "the mount is served again" in m.output(), 60, "the old one serving")
        self.assertIsNone(m.proc.poll())
        rel, (size, digest) = next(iter(self.manifest.items()))
        self.assertEqual(os.path.getsize(m.path(rel)), size)
        self.assertIn("no hand-over: the new ossmount ended before it served", m.output())
        # Its socket is still the one a take-over reaches: the next one succeeds.
        new, log = take_over(m, self.server)
        self.addCleanup(lambda: new.poll() is None and harness.stop_process(new))
        self.assertIsNone(new.poll(), harness.read_text(log))
        self.assertEqual(m.proc.wait(60), 0, m.output())

    def test_a_take_over_with_nothing_to_take_says_so(self):
        mnt = tempfile.mkdtemp(prefix="ossmount-none-")
        r = subprocess.run(harness.mount_command(self.server, mnt, ["--take-over"]),
                           env=self.server.env(), capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn("--take-over: no ossmount serves %s" % mnt, r.stdout + r.stderr)
        self.assertFalse(harness.is_mounted(mnt))


class CrashLoopTest(unittest.TestCase):
    def test_a_daemon_that_keeps_dying_ends_the_mount(self):
        root = tempfile.mkdtemp(prefix="restart-loop-")
        os.makedirs(os.path.join(root, "bucket"))
        server = harness.TestServer(root, bucket="bucket")
        self.addCleanup(server.stop)
        m = harness.Mount(server)
        self.addCleanup(m.close)
        for _ in range(10):
            kill_daemon(self, m)
        os.kill(m.daemon_pid(), signal.SIGKILL)  # the 11th death in a row
        self.assertEqual(m.proc.wait(60), 1)
        self.assertIn("the daemon died 11 times in a row", m.output())
        self.assertFalse(harness.is_mounted(m.mountpoint))


if __name__ == "__main__":
    harness.main()
