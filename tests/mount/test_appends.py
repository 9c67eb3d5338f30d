"""Appends and live logs through a real mount (OSS): a file opened with O_APPEND becomes an
appendable object, what is written goes up at most --append-interval later, and other readers
see it grow (a second mount's tail -f, a reader on the same mount).

docs/SEMANTICS.md "Writing", the rows on appends.
"""
import errno
import os
import select
import signal
import subprocess
import time

import harness
from test_writes import WriteMountCase, failed_fuse_ops


def head(server, key):
    out = harness.client(server, "head", key).stdout.decode()
    return dict(line.split("\t", 1) for line in out.splitlines())


def wait_until(predicate, timeout=10.0):
    """Seconds until predicate() held; fails the caller's test on timeout (returns None)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():
            return time.monotonic() - start
        time.sleep(0.05)
    return None


def read_or_empty(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


class AppendsTest(WriteMountCase):
    def setUp(self):
        super().setUp()
        self.mnt = self.mount("--append-interval", "300ms")

    def test_a_log_grows_for_another_mount_and_its_tail_f(self):
        other = self.fresh_mount()
        log = open(self.mnt.path("train.log"), "a")
        try:
            log.write("epoch 1 loss 0.9\n")
            log.flush()
            waited = wait_until(lambda: read_or_empty(other.path("train.log")) ==
                                b"epoch 1 loss 0.9\n")
            self.assertIsNotNone(waited, "the other mount never saw the first line")
            self.assertEqual(head(self.server, "train.log")["type"], "Appendable")
            tail = subprocess.Popen(["tail", "-f", "-s", "0.2", other.path("train.log")],
                                    stdout=subprocess.PIPE)
            self.addCleanup(lambda: (tail.kill(), tail.wait(), tail.stdout.close()))
            self.assertEqual(self.read_line(tail), b"epoch 1 loss 0.9\n")
            for epoch in (2, 3, 4):
                line = "epoch %d loss 0.%d\n" % (epoch, 9 - epoch)
                log.write(line)
                log.flush()
                self.assertEqual(self.read_line(tail), line.encode())
        finally:
            log.close()
        self.assertEqual(read_or_empty(self.on_server("train.log")),
                         b"epoch 1 loss 0.9\nepoch 2 loss 0.7\nepoch 3 loss 0.6\n"
                         b"epoch 4 loss 0.5\n")
        self.assertEqual(failed_fuse_ops(self.mnt.output()), [])
        self.assertEqual(failed_fuse_ops(other.output()), [])

    def read_line(self, proc, timeout=10.0):
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        self.assertTrue(ready, "tail -f printed nothing in %.0f s" % timeout)
        return proc.stdout.readline()

    def test_open_a_again_appends_to_the_object_and_sends_only_the_new_bytes(self):
        with open(self.mnt.path("events.log"), "a") as f:
            f.write("first\n")
        before = self.server.stats()
        with open(self.mnt.path("events.log"), "a") as f:
            f.write("second\n")
        subprocess.run("echo third >> %s" % self.mnt.path("events.log"), shell=True, check=True)
        after = self.server.stats()
        self.assertEqual(after["APPEND"] - before["APPEND"], 2)
        self.assertEqual(after["PUT"] - before["PUT"], 0)
        self.assertEqual(after["GET"] - before["GET"], 0)  # nothing staged, nothing loaded
        self.assertEqual(read_or_empty(self.on_server("events.log")), b"first\nsecond\nthird\n")
        self.assertEqual(head(self.server, "events.log")["type"], "Appendable")
        fresh = self.fresh_mount()
        self.assertEqual(read_or_empty(fresh.path("events.log")), b"first\nsecond\nthird\n")

    def test_a_reader_on_the_same_mount_reads_the_log_while_it_is_written(self):
        log = open(self.mnt.path("same.log"), "a")
        try:
            log.write("one\n")
            log.flush()
            self.assertIsNotNone(wait_until(
                lambda: read_or_empty(self.mnt.path("same.log")) == b"one\n"))
            log.write("two\n")
            log.flush()
            self.assertIsNotNone(wait_until(
                lambda: read_or_empty(self.mnt.path("same.log")) == b"one\ntwo\n"))
        finally:
            log.close()

    def test_a_log_replaced_by_another_client_fails_the_writer_not_silently(self):
        log = open(self.mnt.path("raced.log"), "a")
        log.write("mine\n")
        log.flush()
        self.assertIsNotNone(wait_until(
            lambda: read_or_empty(self.on_server("raced.log")) == b"mine\n"))
        src = os.path.join(self.root, "theirs")
        with open(src, "wb") as f:
            f.write(b"theirs\n")
        harness.client(self.server, "put", "raced.log", src)
        log.write("more\n")
        with self.assertRaises(OSError):
            log.close()
        self.assertEqual(read_or_empty(self.on_server("raced.log")), b"theirs\n")
        self.assertIn("saving 'raced.log' failed", self.mnt.output())

    def test_a_server_that_stops_answering_fails_the_log_and_keeps_what_fsync_confirmed(self):
        mnt = self.mount("--append-interval", "200ms", "--stall-timeout", "2s",
                         "--retry-budget", "4s", "--retries", "2")
        fd = os.open(mnt.path("run.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, b"epoch 1\n")
            os.fsync(fd)  # confirmed: in the bucket
            pid = self.server.proc.pid
            os.kill(pid, signal.SIGSTOP)  # connections hang, nothing answers
            self.addCleanup(lambda: self.server.proc.poll() is None and
                            os.kill(pid, signal.SIGCONT))
            os.write(fd, b"epoch 2\n")
            with self.assertRaises(OSError) as e:
                os.fsync(fd)
            self.assertIn(e.exception.errno, (errno.EIO, errno.ETIMEDOUT), e.exception)
            os.kill(pid, signal.SIGCONT)
            # The failure sticks: later writes and the close say so too.
            with self.assertRaises(OSError):
                os.write(fd, b"epoch 3\n")
                os.fsync(fd)
        finally:
            with self.assertRaises(OSError):
                os.close(fd)
        # What fsync confirmed is there; the append it could not confirm may have reached the
        # stopped server (applied once it ran again), never anything else.
        self.assertIsNotNone(wait_until(lambda: self.on_server_text("run.log") is not None))
        self.assertIn(self.on_server_text("run.log"), (b"epoch 1\n", b"epoch 1\nepoch 2\n"))
        self.assertIn("saving 'run.log' failed", mnt.output())
        # The daemon serves on: another log works.
        with open(mnt.path("next.log"), "a") as f:
            f.write("fine\n")
        self.assertEqual(read_or_empty(self.on_server("next.log")), b"fine\n")

    def on_server_text(self, name):
        data = read_or_empty(self.on_server(name))
        return data or None

    def test_with_append_interval_off_a_log_is_uploaded_at_close(self):
        mnt = self.mount("--append-interval", "off")
        with open(mnt.path("plain.log"), "a") as f:
            f.write("line\n")
            f.flush()
            time.sleep(0.5)
            self.assertFalse(os.path.exists(self.on_server("plain.log")))
        self.assertEqual(read_or_empty(self.on_server("plain.log")), b"line\n")
        self.assertEqual(head(self.server, "plain.log")["type"], "Normal")


if __name__ == "__main__":
    harness.main()
