"""Start and stop: background mode, signals, fusermount3 -u, unmount with reads in flight.

docs/SEMANTICS.md "Lifecycle".
"""
import os
import signal
import subprocess
import tempfile
import threading
import time
import unittest

import harness


def daemon_pids(mountpoint):
    out = subprocess.run(["pgrep", "-f", mountpoint], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


class LifecycleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="lifecycle-data-")
        os.makedirs(os.path.join(cls.root, "bucket", "d"))
        for i in range(8):
            with open(os.path.join(cls.root, "bucket", "d", "f%d" % i), "wb") as f:
                f.write(os.urandom(200000))
        cls.server = harness.TestServer(cls.root, bucket="bucket")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_background_mode_returns_after_mount_answers(self):
        mnt = tempfile.mkdtemp(prefix="ossmount-bg-")
        cmd = [harness.OSSMOUNT, "bucket", mnt, "--endpoint", self.server.endpoint, "--region",
               harness.REGION, "--path-style"]
        try:
            r = subprocess.run(cmd, env=self.server.env(), capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            # The parent returned: the mount must already answer.
            self.assertTrue(harness.is_mounted(mnt))
            self.assertEqual(sorted(os.listdir(mnt)), ["d"])
            # In the background: the supervisor, which holds the mount, and its one child, the
            # daemon proper.
            pids = sorted(daemon_pids(mnt))
            self.assertEqual(len(pids), 2, pids)
            supervisor = [p for p in pids if harness.child_pids(p)]
            self.assertEqual(len(supervisor), 1, pids)
            self.assertEqual(harness.child_pids(supervisor[0]),
                             [p for p in pids if p != supervisor[0]])
            subprocess.run(["fusermount3", "-u", mnt], check=True)
            harness.wait_for(lambda: not daemon_pids(mnt), 30, "the daemon to exit")
        finally:
            harness.force_unmount(mnt)

    def test_background_start_says_while_it_waits_for_a_slow_endpoint(self):
        """An endpoint slow to answer the start-up listing (7 s to its first byte here) does
        not leave the user looking at a silent command: 5 s in, the waiting command prints
        that it waits, for which bucket at which endpoint, for how long so far and at most
        (then every 15 s); the mount then starts as usual."""
        slow = harness.TestServer(self.root, bucket="bucket", args=["--ttfb-ms", "7000"])
        mnt = tempfile.mkdtemp(prefix="ossmount-slow-")
        try:
            r = subprocess.run(harness.mount_command(slow, mnt, foreground=False),
                               env=slow.env(), capture_output=True, text=True, timeout=180)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(harness.is_mounted(mnt))
            self.assertEqual(sorted(os.listdir(mnt)), ["d"])
            harness.check_waiting_notes(self, r.stderr, slow.endpoint, "the start-up listing")
            subprocess.run(["fusermount3", "-u", mnt], check=True)
            harness.wait_for(lambda: not daemon_pids(mnt), 30, "the daemon to exit")
        finally:
            harness.force_unmount(mnt)
            slow.stop()

    def test_sigterm_during_a_slow_start_ends_it_also_as_pid_1(self):
        """As a container's PID 1 (here: PID 1 of a new PID namespace) the kernel ignores a
        signal the process has no handler for. SIGTERM while the start-up listing waits must
        still end the start at once (exit 143), not wait for a SIGKILL."""
        slow = harness.TestServer(self.root, bucket="bucket", args=["--ttfb-ms", "60000"])
        mnt = tempfile.mkdtemp(prefix="ossmount-slow-")
        try:
            proc = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child"] +
                                    harness.mount_command(slow, mnt), env=slow.env(),
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            # The daemon: unshare's child, PID 1 inside its namespace.
            def daemon():
                out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                     text=True).stdout.split()
                return int(out[0]) if out else None
            harness.wait_for(lambda: daemon() is not None, 30, "the daemon")
            pid = daemon()
            with open("/proc/%d/status" % pid) as f:
                self.assertIn("NSpid:\t%d\t1" % pid, f.read())
            time.sleep(1)  # inside the start-up listing, which waits 60 s for its answer
            os.kill(pid, signal.SIGTERM)
            try:
                rc = proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                self.fail("SIGTERM did not end a daemon that was PID 1 in its start-up")
            self.assertEqual(rc, 143, proc.stdout.read())
            self.assertFalse(harness.is_mounted(mnt))
        finally:
            harness.force_unmount(mnt)
            slow.stop()

    def check_signal_unmounts(self, sig):
        m = harness.Mount(self.server)
        try:
            self.assertEqual(len(os.listdir(m.path("d"))), 8)
            m.proc.send_signal(sig)
            self.assertEqual(m.proc.wait(30), 0, m.output())
            self.assertFalse(harness.is_mounted(m.mountpoint))
        finally:
            m.close()

    def test_sigterm_unmounts_cleanly(self):
        self.check_signal_unmounts(signal.SIGTERM)

    def test_sigint_unmounts_cleanly(self):
        self.check_signal_unmounts(signal.SIGINT)

    def test_fusermount_exits_zero(self):
        m = harness.Mount(self.server)
        try:
            os.listdir(m.mountpoint)
            self.assertEqual(m.unmount(), 0, m.output())
        finally:
            m.close()

    def test_unmount_with_reads_in_flight(self):
        slow_root = self.root
        slow = harness.TestServer(slow_root, bucket="bucket", args=["--ttfb-ms", "3000"])
        m = harness.Mount(slow, args=["--metadata-ttl", "indefinite"])
        results = []
        try:
            os.listdir(m.path("d"))  # metadata in hand; the reads below wait on GETs

            def reader(i):
                try:
                    with open(m.path("d", "f%d" % i), "rb") as f:
                        results.append(len(f.read()))
                except OSError as e:
                    results.append(e.errno)

            threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(8)]
            for t in threads:
                t.start()
            time.sleep(0.5)
            m.proc.send_signal(signal.SIGTERM)
            code = m.proc.wait(60)
            for t in threads:
                t.join(60)
                self.assertFalse(t.is_alive(), "a reader hung after the daemon stopped")
            self.assertEqual(code, 0, m.output())
            self.assertFalse(harness.is_mounted(m.mountpoint))
            self.assertEqual(len(results), 8)
            # Each read either completed with every byte or failed; none hung or crashed.
            for r in results:
                self.assertIn(r, (200000, 5, 103, 107, 4), results)  # EIO, ECONNABORTED, ENOTCONN, EINTR
        finally:
            m.close()
            slow.stop()


if __name__ == "__main__":
    harness.main()
