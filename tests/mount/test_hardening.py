"""Hardening on a real mount: a listing that never ends, and readers killed while they wait.

docs/SEMANTICS.md "Limits and hostile input".
- A server whose continuation tokens alternate (A, B, A, B, ...) fails that directory with EIO
  after a bounded number of LISTs, the daemon's memory stays flat, the log names the prefix
  and the reason, other directories keep working and the mount unmounts.
- A reader killed (SIGKILL) while it waits on a listing or a GET that takes a minute returns
  at once instead of staying in D state, and `fusermount3 -u` then works at once.
"""
import errno
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import harness


def make_tree():
    root = tempfile.mkdtemp(prefix="hardening-data-", dir=harness.RUN_DIR)
    for d in ("loop", "ok", "slow", "slowread"):
        os.makedirs(os.path.join(root, "bucket", d))
        for i in range(5):
            with open(os.path.join(root, "bucket", d, "f%d.bin" % i), "wb") as f:
                f.write(os.urandom(1000 + i))
    return root


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for %d" % pid)


def set_faults(server, query):
    req = urllib.request.Request(server.endpoint + "/_ossmount/faults?" + query, method="POST")
    urllib.request.urlopen(req, timeout=10).read()


def errno_in_child(code, timeout=60):
    """Runs `code` (which sets `p`... and does one call) in a child; returns its errno or 0."""
    r = subprocess.run([sys.executable, "-c", "import os\ntry:\n %s\n print(0)\n"
                        "except OSError as e:\n print(e.errno)" % code],
                       capture_output=True, text=True, timeout=timeout)
    return int(r.stdout.strip())


class LoopingListingTest(unittest.TestCase):
    def setUp(self):
        self.root = make_tree()
        self.server = harness.TestServer(self.root, args=["--list-loop-prefix", "loop/"])
        self.mount = harness.Mount(self.server, args=["--metadata-ttl", "indefinite",
                                                      "--list-ahead", "0"])

    def tearDown(self):
        self.mount.close()
        self.server.stop()

    def test_alternating_tokens_fail_the_directory_with_eio(self):
        m = self.mount
        self.assertEqual(sorted(os.listdir(m.mountpoint)), ["loop", "ok", "slow", "slowread"])
        rss_before = rss_kib(m.daemon_pid())
        self.server.reset_stats()
        start = time.monotonic()
        self.assertEqual(errno_in_child("os.listdir(%r)" % m.path("loop")), errno.EIO)
        took = time.monotonic() - start
        lists = self.server.stats()["LIST"]
        print("\nlooping listing: EIO after %.2f s and %d LIST requests" % (took, lists))
        # Pages 1 and 2 hand out tokens A and B, page 3 repeats A: one listing costs 3 LISTs
        # (a lookup or opendir may list the directory once more).
        self.assertLessEqual(lists, 8)
        self.assertLess(rss_kib(m.daemon_pid()) - rss_before, 64 << 10)
        log = m.output()
        self.assertIn("listing 'loop/': page 3 repeats a continuation token", log)
        # The failure was not cached as an answer, and the rest of the mount is unaffected.
        self.assertEqual(len(os.listdir(m.path("ok"))), 5)
        with open(m.path("ok", "f0.bin"), "rb") as f:
            self.assertEqual(len(f.read()), 1000)
        self.assertEqual(m.unmount(), 0, m.output()[-2000:])


class KilledReaderTest(unittest.TestCase):
    STALL_MS = 60000  # far longer than the bounds asserted below

    def setUp(self):
        self.root = make_tree()
        self.server = harness.TestServer(self.root)
        self.mount = harness.Mount(self.server, args=["--metadata-ttl", "indefinite",
                                                      "--list-ahead", "0",
                                                      "--request-timeout", "120s",
                                                      "--stall-timeout", "120s"])

    def tearDown(self):
        set_faults(self.server, "clear")
        self.mount.close()
        self.server.stop()

    def start_waiting(self, code):
        child = subprocess.Popen([sys.executable, "-c", code])
        # Wait until the child is blocked inside the mount: the server has its request.
        harness.wait_for(lambda: self.server.stats()["requests"] > self.requests_before, 30,
                         "the reader's request to reach the server")
        time.sleep(0.3)
        self.assertIsNone(child.poll(), "the reader should still be waiting")
        return child

    def kill_and_reap(self, child, what):
        start = time.monotonic()
        child.send_signal(signal.SIGKILL)
        try:
            child.wait(20)
        except subprocess.TimeoutExpired:
            self.fail("a reader killed while waiting on %s did not exit (D state)" % what)
        print("\n%s: the killed reader was gone after %.2f s" % (what, time.monotonic() - start))

    def test_killed_readers_return_and_unmount_works(self):
        m = self.mount
        self.assertEqual(len(os.listdir(m.mountpoint)), 4)
        set_faults(self.server, "ttfb-ms=%d" % self.STALL_MS)

        self.requests_before = self.server.stats()["requests"]
        lister = self.start_waiting("import os; os.listdir(%r)" % m.path("slow"))
        self.kill_and_reap(lister, "a listing")

        self.requests_before = self.server.stats()["requests"]
        reader = self.start_waiting("open(%r, 'rb').read()" % m.path("slowread", "f2.bin"))
        self.kill_and_reap(reader, "a GET")

        # Nobody uses the mount now: unmount works although both requests are still waiting at
        # the server.
        start = time.monotonic()
        r = subprocess.run(["fusermount3", "-u", m.mountpoint], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(harness.is_mounted(m.mountpoint))
        print("unmounted after %.2f s" % (time.monotonic() - start))
        m.proc.wait(self.STALL_MS / 1000 + 60)


if __name__ == "__main__":
    harness.main()
