"""What control requests may make the daemon hold and do (docs/SEMANTICS.md, the control
channel's memory, --control-memory).

- Another user (uid 65534) of an --allow-other mount with --control-memory 1MiB: a hint list
  of 200,000 paths is refused by each of 8 processes with the message naming the other users'
  quarter of --control-memory, a small list of each is taken, a 9th process's list is refused
  naming the rule of 8 lists; its warm-up of a directory of 8,000 files stops listing at its
  share and says so in warmup-status, and a second warm-up meanwhile is refused at once
  naming the limit; the daemon's RSS grows by less than the budget plus what the requests'
  own text and parse leave in malloc's arenas (16 times one request; read from
  /proc/PID/status, not timed), where keeping the 8 lists would take about 450 MB.
- The owner's hint list past --control-memory is refused naming the limit; nothing of it is
  kept; one that fits is taken, and `ossmount stats` shows the gauges of use and limit.
- `ossmount warmup --cancel` during a warm-up's listing of 30 pages (100 ms each): the server
  sees at most the page in flight afterwards, the job says cancelled, not failed.
"""
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import harness

sys.path.insert(0, os.path.join(harness.SOURCE_DIR, "python"))
import ossmount_hints  # noqa: E402

NOBODY = 65534
MiB = 1 << 20
FLAT_FILES = 8000  # 10 bytes each: 8 pages to list
MANY_FILES = 30000  # empty: 30 pages to list, no GET

# A process of uid 65534: argv = directory of ossmount_hints.py, mount point, then one list
# size after another. Sends each as its hint list (ImageNet-like paths, relative to the mount)
# and prints one JSON line per list: {"sent": n} or {"error": message}; then stays alive
# until its stdin closes, so that the daemon keeps its list.
SENDER_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import ossmount_hints
mount = sys.argv[2]
for n in map(int, sys.argv[3:]):
    paths = ["train/n%08d/n%08d_%05d.JPEG" % (1440764 + i // 1300, 1440764 + i // 1300, i % 1300)
             for i in range(n)]
    try:
        out = {"sent": ossmount_hints.send_hints(paths, mount)}
    except RuntimeError as e:
        out = {"error": str(e)}
    print(json.dumps(out), flush=True)
sys.stdin.read()
"""


def rss_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS for pid %d" % pid)


def ensure_tree():
    """The bucket 'limits': flat/ (FLAT_FILES small files), many/ (MANY_FILES empty ones);
    made once per build tree."""
    root = os.path.join(harness.DATA_DIR, "control-limits")
    done = os.path.join(root, ".complete")
    if not os.path.exists(done):
        shutil.rmtree(root, ignore_errors=True)
        for d, n, data in (("flat", FLAT_FILES, b"0123456789"), ("many", MANY_FILES, b"")):
            os.makedirs(os.path.join(root, "limits", d))
            for i in range(n):
                with open(os.path.join(root, "limits", d, "f%05d.bin" % i), "wb") as f:
                    f.write(data)
        open(done, "w").close()
    return root


def warmup(*args, user=(), binary=harness.OSSMOUNT, timeout=120):
    """`ossmount warmup ARGS`, run through `user` (a setpriv prefix) when given."""
    cmd = list(user) + [binary, "warmup"] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd="/")


def status(mountpoint):
    return ossmount_hints._call(mountpoint, {"command": "warmup-status"})


class OtherUserLimitsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = ensure_tree()
        # GETs of 20 ms at concurrency 1 are far slower than listing pages of 1,000: a
        # warm-up's queue of listed files grows until the control memory stops it.
        cls.server = harness.TestServer(cls.root, bucket="limits", args=["--ttfb-ms", "20"])

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("running a process as another user needs root")
        if shutil.which("setpriv") is None:
            self.skipTest("setpriv (util-linux) is not installed")
        # RUN_DIR (a 0700 mkdtemp) holds the mount point: uid 65534 must traverse it.
        os.chmod(harness.RUN_DIR, 0o711)
        self.addCleanup(os.chmod, harness.RUN_DIR, 0o700)
        # ossmount_hints.py and the ossmount binary where uid 65534 surely reads them.
        self.tools = tempfile.mkdtemp(prefix="ossmount-tools-")
        os.chmod(self.tools, 0o755)
        for src, mode in ((os.path.join(harness.SOURCE_DIR, "python", "ossmount_hints.py"), 0o644),
                          (harness.OSSMOUNT, 0o755)):
            dst = os.path.join(self.tools, os.path.basename(src))
            shutil.copy(src, dst)
            os.chmod(dst, mode)
        self.nobody = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"]
        self.as_nobody = {"user": self.nobody, "binary": os.path.join(self.tools, "ossmount")}

    def sender(self, mountpoint, *sizes):
        """A process of uid 65534 sending lists of `sizes` paths; returns it and its answers."""
        child = subprocess.Popen(
            self.nobody + ["/usr/bin/python3", "-c", SENDER_SCRIPT, self.tools, mountpoint] +
            [str(n) for n in sizes],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd="/", env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))

        def stop():
            if child.poll() is None:
                child.kill()
                child.communicate()
        self.addCleanup(stop)
        answers = []
        for _ in sizes:
            ready, _, _ = select.select([child.stdout], [], [], 120)
            if not ready:
                child.kill()
                _, err = child.communicate()
                self.fail("the sender said nothing within 120 s: %s" % err)
            line = child.stdout.readline()
            if not line:
                child.wait(30)
                self.fail("the sender failed (%s): %s" % (child.returncode, child.stderr.read()))
            answers.append(json.loads(line))
        return child, answers

    def test_hostile_requests_of_another_user_are_refused_and_the_daemon_serves_on(self):
        # A million '[' overflowed the stack of the recursive JSON parse and killed the daemon;
        # "[0,0,...]" within the size limit cost 1.1 GB of parsed values.
        m = harness.Mount(self.server, args=["--metadata-ttl", "indefinite", "--allow-other"])
        self.addCleanup(m.close)
        script = (
            "import sys\nsys.path.insert(0, sys.argv[1])\nimport ossmount_hints\n"
            "for data in (b'[' * 1000000, b'[' + b'0,' * 5000000 + b'0]'):\n"
            "    print(ossmount_hints._call_through_mount(sys.argv[2], data).decode().strip(),"
            " flush=True)\n")
        r = subprocess.run(self.nobody + ["/usr/bin/python3", "-c", script, self.tools,
                                          m.mountpoint],
                           capture_output=True, text=True, timeout=300, cwd="/",
                           env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        self.assertEqual(r.returncode, 0, r.stderr)
        deep, many = [json.loads(line) for line in r.stdout.splitlines()]
        self.assertFalse(deep["ok"])
        self.assertIn("nested deeper than 32 levels", deep["error"])
        self.assertFalse(many["ok"])
        self.assertIn("more than 4194304 values", many["error"])
        # The daemon is alive and serves reads and requests as before.
        self.assertIsNone(m.proc.poll(), m.output()[-2000:])
        with open(m.path("flat", "f00001.bin"), "rb") as f:
            self.assertEqual(f.read(), b"0123456789")
        self.assertTrue(ossmount_hints._call(m.mountpoint, {"command": "stats"})["ok"])

    def test_hints_and_warmup_of_another_user_stay_within_its_share(self):
        budget = 1 * MiB
        m = harness.Mount(self.server, args=[
            "--metadata-ttl", "indefinite", "--allow-other", "--control-memory", "1MiB",
            "--hint-ahead-files", "16", "--warmup-concurrency", "1"])
        self.addCleanup(m.close)
        rss_before = rss_bytes(m.daemon_pid())
        share = ("users other than the mount's owner and root share a quarter of the control "
                 "channel's memory (256KiB of --control-memory 1MiB), which has ")

        # 8 processes: each one's list of 200,000 paths is refused (about 10 MiB), each
        # one's list of 100 is taken. One after another: one request's own bytes at a time.
        senders = []
        for i in range(8):
            child, (big, small) = self.sender(m.mountpoint, 200000, 100)
            senders.append(child)
            self.assertIn("error", big, big)
            self.assertRegex(big["error"], r"hint list of 200000 path\(s\) needs [0-9.]+ MiB; ")
            self.assertIn(share, big["error"])
            self.assertEqual(small, {"sent": 100})
        # A 9th list of the same user is refused by the rule of 8 lists.
        _, (ninth,) = self.sender(m.mountpoint, 100)
        self.assertEqual(ninth.get("error"), (
            "ossmount daemon on %s: uid 65534 has 8 hint lists already: a user other than the "
            "mount's owner and root may have at most 8 (and 4 running warm-ups) at once; a list "
            "goes when its sender exits or sends an empty list") % m.mountpoint)
        st = status(m.mountpoint)
        lists = st["hints"]["senders"]
        self.assertEqual(sorted(l["pid"] for l in lists), sorted(c.pid for c in senders))
        self.assertEqual({l["uid"] for l in lists}, {NOBODY})
        cm = st["control_memory"]
        self.assertEqual((cm["limit"], cm["other_users_limit"]), (budget, budget // 4), cm)
        self.assertEqual(cm["other_users_used"], sum(l["memory_bytes"] for l in lists), cm)
        self.assertLessEqual(cm["used"], budget // 4, cm)

        # Its warm-up of flat/ (8,000 files) stops listing at what is left of its share.
        self.server.reset_stats()
        r = warmup("--detach", m.path("flat"), **self.as_nobody)
        self.assertEqual(r.returncode, 0, r.stderr)
        job_id = int(r.stdout.split()[1])

        def job():
            return next(j for j in status(m.mountpoint)["jobs"] if j["id"] == job_id)
        harness.wait_for(lambda: "--control-memory" in job()["message"], 60,
                         "the warm-up to stop listing at the control memory")
        j = job()
        self.assertEqual(j["uid"], NOBODY)
        self.assertTrue(j["listing_done"], j)
        self.assertIn(j["state"], ("running", "budget-full"), j)
        self.assertLess(j["files_total"], FLAT_FILES, j)
        self.assertRegex(j["message"], r"^stopped listing after \d+ file\(s\): the next 1000 would "
                                       r"take its queue of listed files from ")
        self.assertIn("; " + share, j["message"])
        self.assertIn(". The files listed are warmed, the rest is not: raise --control-memory, "
                      "or warm up fewer paths at once", j["message"])
        cm = status(m.mountpoint)["control_memory"]
        self.assertLessEqual(cm["other_users_used"], budget // 4, cm)
        lists_done = self.server.stats().get("LIST", 0)
        self.assertLess(lists_done, FLAT_FILES // 1000)

        # Its second warm-up meanwhile has no room: refused at once, naming the limit.
        r = warmup(m.path("flat"), **self.as_nobody)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertRegex(r.stderr, r"^ossmount warmup: a warm-up needs 6[45]\.[0-9] KiB to queue "
                                   r"the files it lists; " + re.escape(share))

        # The daemon keeps no more than the budget. Beside it, what the requests' own bytes
        # took (their text, and its parsed form: 2 to 3 times the text) is freed but stays
        # resident in the malloc arenas of the threads that handled them: at most 16 times
        # one request of 200,000 paths (8.4 MB). Keeping the 8 lists would take 450 MB.
        rss_after = rss_bytes(m.daemon_pid())
        request = len(json.dumps({"command": "hints", "paths": [
            "train/n%08d/n%08d_%05d.JPEG" % (0, 0, 0)] * 200000}))
        self.assertLess(rss_after - rss_before, budget + 16 * request,
                        "RSS %d -> %d bytes" % (rss_before, rss_after))

        # The owner cancels: the queue goes with it, and no further page is listed.
        r = warmup("--cancel", m.mountpoint)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(job()["state"], "cancelled")
        self.assertEqual(status(m.mountpoint)["control_memory"]["warmup_bytes"], 0)
        self.assertEqual(self.server.stats().get("LIST", 0), lists_done)
        for child in senders:
            child.communicate("", timeout=60)
            self.assertEqual(child.returncode, 0)


class OwnerAndCancelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = ensure_tree()
        # Pages of 100 ms: a listing of many/ (30 pages) is still going when cancel comes.
        cls.server = harness.TestServer(cls.root, bucket="limits", args=["--ttfb-ms", "100"])

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_the_owners_hint_list_past_the_budget_is_refused(self):
        m = harness.Mount(self.server, args=["--metadata-ttl", "indefinite",
                                             "--control-memory", "1MiB"])
        self.addCleanup(m.close)
        paths = ["train/n%08d/x_%05d.JPEG" % (i // 1000, i % 1000) for i in range(50000)]
        with self.assertRaises(RuntimeError) as refused:
            ossmount_hints.send_hints(paths, m.mountpoint)
        self.assertRegex(str(refused.exception), (
            r"^ossmount daemon on %s: hint list of 50000 path\(s\) needs [0-9.]+ MiB; the "
            r"control channel's memory \(--control-memory 1MiB\) has 1\.0 MiB free$")
            % m.mountpoint)
        st = status(m.mountpoint)
        self.assertEqual(st["hints"]["senders"], [])
        self.assertEqual(st["control_memory"]["used"], 0)
        # A list that fits is taken; `ossmount stats` (and Prometheus) show the use and limit.
        self.assertEqual(ossmount_hints.send_hints(paths[:1000], m.mountpoint), 1000)
        used = status(m.mountpoint)["control_memory"]["used"]
        self.assertGreater(used, 0)
        self.assertEqual(harness.mount_metric(m.mountpoint, "gauges",
                                              "ossmount_control_memory_bytes"), used)
        self.assertEqual(harness.mount_metric(m.mountpoint, "gauges",
                                              "ossmount_control_memory_limit_bytes"), MiB)

    def test_cancel_stops_the_listing_at_its_next_page(self):
        m = harness.Mount(self.server, args=["--metadata-ttl", "indefinite"])
        self.addCleanup(m.close)
        self.server.reset_stats()
        r = warmup("--detach", m.path("many"))
        self.assertEqual(r.returncode, 0, r.stderr)
        job_id = int(r.stdout.split()[1])
        harness.wait_for(lambda: self.server.stats().get("LIST", 0) >= 3, 60,
                         "the warm-up's listing to be under way")
        r = warmup("--cancel", m.mountpoint)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("cancelled 1 warm-up(s)", r.stdout)
        at_cancel = self.server.stats().get("LIST", 0)
        # The page in flight may still come back; none is asked for after it. 1 s is ten
        # pages' time.
        time.sleep(1.0)
        after = self.server.stats().get("LIST", 0)
        self.assertLessEqual(after, at_cancel + 1)
        time.sleep(1.0)
        self.assertEqual(self.server.stats().get("LIST", 0), after)
        self.assertLess(after, MANY_FILES // 1000)
        j = next(j for j in status(m.mountpoint)["jobs"] if j["id"] == job_id)
        self.assertEqual((j["state"], j["message"]), ("cancelled", "cancelled"), j)
        self.assertEqual(j["queued_files"], 0, j)
        self.assertEqual(status(m.mountpoint)["control_memory"]["used"], 0)


if __name__ == "__main__":
    harness.main()
