"""Metadata within a budget: listings nobody waits for stop, and huge directories stream.

docs/SEMANTICS.md "Limits and hostile input", the rows on --max-metadata-memory. The bundled
server generates the directories (--synthetic-listing PREFIX=COUNT): COUNT names listed under
PREFIX, or a listing that never ends for COUNT 0, at no cost in disk.
- A listing that no reader waits for any more (ls killed) stops within a page, whether the
  directory was being listed whole or read page by page.
- A flat directory of 5,000,000 names is listed (ls -f) and walked (find) with the right
  counts, while the daemon's peak RSS stays within --max-memory plus --max-metadata-memory
  plus 64 MiB.
"""
import os
import signal
import subprocess
import tempfile
import time
import unittest

import harness

MiB = 1 << 20


def peak_rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM for pid %d" % pid)


class MetadataBudgetCase(unittest.TestCase):
    def start(self, synthetic, server_args=(), mount_args=()):
        """A server whose directory `synthetic` ("big=5000000") is generated, and a mount."""
        name, count = synthetic.split("=")
        root = tempfile.mkdtemp(prefix="budget-data-")
        # A real key under the directory, so that the root's listing shows it.
        os.makedirs(os.path.join(root, "bucket", name))
        open(os.path.join(root, "bucket", name, ".keep"), "w").close()
        self.server = harness.TestServer(
            root, args=["--synthetic-listing", "%s/=%s" % (name, count)] + list(server_args))
        self.addCleanup(self.server.stop)
        self.mnt = harness.Mount(self.server, args=list(mount_args))
        self.addCleanup(self.mnt.close)
        return self.mnt

    def lists(self):
        return self.server.stats()["LIST"]

    def assert_listing_stops(self, reader):
        """`reader` (a Popen) is killed: within a moment no more pages are asked for."""
        reader.send_signal(signal.SIGKILL)
        reader.wait()
        time.sleep(1)  # the page in flight, and the kernel's release of the directory
        before = self.lists()
        time.sleep(3)
        self.assertLessEqual(self.lists() - before, 1, "the listing went on without a reader")


class ListingWithoutReaderTest(MetadataBudgetCase):
    def test_a_never_ending_listing_stops_when_its_reader_is_killed(self):
        """Issue item 8: `ls` of a directory whose listing never ends, killed after 2 s. The
        daemon stops listing within a page, and its memory stays within the budgets."""
        mnt = self.start("infinite=0", mount_args=["--max-memory", "64MiB",
                                                   "--max-metadata-memory", "64MiB"])
        reader = subprocess.Popen(["ls", mnt.path("infinite")], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        time.sleep(2)
        self.assertIsNone(reader.poll())
        self.assertGreater(self.lists(), 10)
        self.assert_listing_stops(reader)
        self.assertLessEqual(peak_rss(mnt.daemon_pid()), (64 + 64 + 64) * MiB)

    def test_a_directory_listed_whole_stops_when_its_reader_is_killed(self):
        """A directory small enough to be held whole, listed slowly (20 ms a page): the
        listing stops within a page once the only reader is gone, and is not cached."""
        mnt = self.start("slow=200000", server_args=["--ttfb-ms", "20"])
        reader = subprocess.Popen(["ls", mnt.path("slow")], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        time.sleep(1.5)
        self.assertIsNone(reader.poll())
        self.assert_listing_stops(reader)
        # A new reader lists it again, whole.
        out = subprocess.run(["ls", "-f", mnt.path("slow")], capture_output=True, text=True,
                             timeout=300)
        self.assertEqual(len(out.stdout.split()), 200002)


class LargeDirectoryTest(MetadataBudgetCase):
    COUNT = 5_000_000

    def test_five_million_names_are_listed_and_walked_within_the_budgets(self):
        """Issue item 9: a flat directory of 5,000,000 names under --max-memory 64MiB and
        --max-metadata-memory 64MiB: `ls -f | wc -l` and `find | wc -l` count every name, and
        the daemon's peak RSS stays within the two budgets plus 64 MiB."""
        mnt = self.start("big=%d" % self.COUNT,
                         mount_args=["--max-memory", "64MiB", "--max-metadata-memory", "64MiB",
                                     "--metadata-ttl", "indefinite"])
        ls = subprocess.run("ls -f %s | wc -l" % mnt.path("big"), shell=True,
                            capture_output=True, text=True, timeout=600)
        self.assertEqual(ls.stderr, "")
        self.assertEqual(int(ls.stdout), self.COUNT + 2)  # with . and ..
        find = subprocess.run("find %s | wc -l" % mnt.path("big"), shell=True,
                              capture_output=True, text=True, timeout=600)
        self.assertEqual(find.stderr, "")
        self.assertEqual(int(find.stdout), self.COUNT + 1)  # with the directory itself
        # A name in it is found (a probe of the one name), and so is its neighbour's absence.
        self.assertEqual(os.stat(mnt.path("big", "f%010d" % 4_321_987)).st_size, 1)
        self.assertFalse(os.path.exists(mnt.path("big", "f%010dx" % 4_321_987)))
        self.assertLessEqual(peak_rss(mnt.daemon_pid()), (64 + 64 + 64) * MiB)
        self.assertIn("read page by page", mnt.output())


if __name__ == "__main__":
    harness.main()
