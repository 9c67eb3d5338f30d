"""Observability through a real mount: the control socket and `ossmount stats`, the
Prometheus listener (--metrics-address), the audit log (--audit-log), the log file with
rotation (--log-file, --log-max-size), the run-time signals (SIGHUP reopens the log files,
SIGUSR2 toggles debug) and the journald format of stderr.

Every figure is checked against what the test server counted or what the test read, and no
secret may appear in any of these outputs.
"""
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest
import urllib.error
import urllib.request

import harness

SMALL = {"train/a/%02d.bin" % i: bytes([i]) * (1000 + 137 * i) for i in range(12)}
LARGE = {"big/large.bin": os.urandom(3 << 20) * 4}  # 12 MiB: above the small-file threshold
FILES = dict(SMALL, **LARGE)


stats_json = harness.stats_json
metric = harness.metric


def wait_for_control(mountpoint):
    harness.wait_for(lambda: stats_json(mountpoint, check=False).returncode == 0, 30,
                     "the control socket of " + mountpoint)


def read_all(m, names):
    total = 0
    for rel in names:
        with open(m.path(rel), "rb") as f:
            data = f.read()
        assert data == FILES[rel], rel
        total += len(data)
    return total


class ObserveTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="ossmount-observe-data-")
        for rel, data in FILES.items():
            path = os.path.join(cls.root, "obs", rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        cls.server = harness.TestServer(cls.root, bucket="obs")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.root, ignore_errors=True)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ossmount-observe-")
        self.mounts = []

    def tearDown(self):
        for m in self.mounts:
            m.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def mount(self, args=(), env=None):
        m = harness.Mount(self.server, args=list(args), env=env)
        self.mounts.append(m)
        wait_for_control(m.mountpoint)
        return m

    def assertNoSecret(self, text, where):
        self.assertNotIn(harness.SK, text, where)

    # ---- control socket and `ossmount stats` ---------------------------------------------

    def test_stats_counts_match_the_server(self):
        m = self.mount()
        self.server.reset_stats()
        before = json.loads(stats_json(m.mountpoint).stdout)
        read = read_all(m, sorted(FILES))
        server = self.server.stats()
        doc = json.loads(stats_json(m.mountpoint).stdout)
        self.assertTrue(doc["ok"])
        self.assertEqual(doc["mountpoint"], m.mountpoint)
        self.assertEqual(doc["pid"], m.daemon_pid())

        def delta(kind, name, **labels):
            return metric(doc, kind, name, **labels) - metric(before, kind, name, **labels)

        gets = delta("counters", "ossmount_requests_total", type="GET", outcome="ok")
        ranged = delta("counters", "ossmount_requests_total", type="GET-range", outcome="ok")
        self.assertEqual(gets, len(SMALL), doc)  # one whole-object GET per small file
        self.assertGreater(ranged, 0)
        self.assertEqual(gets + ranged, server.get("GET", 0), server)
        self.assertEqual(delta("counters", "ossmount_read_bytes_total"), read)
        self.assertEqual(delta("counters", "ossmount_opens_total"), len(FILES))
        self.assertEqual(delta("counters", "ossmount_memory_cache_lookups_total", result="miss"),
                         len(SMALL))
        self.assertEqual(delta("counters", "ossmount_received_bytes_total", type="GET"),
                         sum(len(v) for v in SMALL.values()))
        self.assertGreaterEqual(delta("counters", "ossmount_received_bytes_total",
                                      type="GET-range"), len(LARGE["big/large.bin"]))
        self.assertEqual(metric(doc, "gauges", "ossmount_open_handles"), 0)
        self.assertGreater(metric(doc, "gauges", "ossmount_memory_limit_bytes"), 0)
        # The heap as glibc sees it: the daemon holds at least its caches and buffers.
        self.assertGreater(metric(doc, "gauges", "ossmount_heap_allocated_bytes"), 1 << 20)
        self.assertGreaterEqual(metric(doc, "gauges", "ossmount_heap_free_bytes"), 0)
        hist = [h for h in doc["metrics"]["histograms"]
                if h["name"] == "ossmount_request_duration_seconds" and h["labels"]["type"] == "GET"]
        self.assertEqual(len(hist), 1)
        self.assertGreaterEqual(hist[0]["count"], len(SMALL))
        self.assertGreater(hist[0]["p50"], 0)
        self.assertLessEqual(hist[0]["p50"], hist[0]["p90"])
        self.assertLessEqual(hist[0]["p90"], hist[0]["p99"])

        # While a file is open it counts as an open handle.
        with open(m.path("train/a/00.bin"), "rb"):
            doc = json.loads(stats_json(m.mountpoint).stdout)
            self.assertEqual(metric(doc, "gauges", "ossmount_open_handles"), 1)

        # The human view (stdout is not a terminal: printed once).
        r = subprocess.run([harness.OSSMOUNT, "stats", m.mountpoint], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        for needle in ("Requests", "GET-range", "p99 ms", "Cache hit ratios", "page-cache opens",
                       "Readahead", "Memory in use", "Heap", "Open files"):
            self.assertIn(needle, r.stdout)
        self.assertNoSecret(r.stdout, "stats view")
        self.assertNoSecret(json.dumps(doc), "stats json")

        self.assertEqual(m.unmount(), 0, m.output())
        r = stats_json(m.mountpoint, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no ossmount daemon answers for " + m.mountpoint, r.stderr)

    def test_stats_of_a_directory_nobody_mounted(self):
        r = stats_json(self.tmp, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no ossmount daemon answers for " + self.tmp, r.stderr)

    def test_page_cache_opens_with_indefinite_metadata(self):
        m = self.mount(["--metadata-ttl", "indefinite"])
        before = json.loads(stats_json(m.mountpoint).stdout)
        read_all(m, sorted(SMALL))
        doc = json.loads(stats_json(m.mountpoint).stdout)
        opens = (metric(doc, "counters", "ossmount_page_cache_opens_total") -
                 metric(before, "counters", "ossmount_page_cache_opens_total"))
        self.assertEqual(opens, len(SMALL))

    # ---- Prometheus ------------------------------------------------------------------------

    def test_prometheus_exposition(self):
        port = harness.free_port()
        m = self.mount(["--metrics-address", "127.0.0.1:%d" % port])
        self.server.reset_stats()
        read_all(m, sorted(SMALL))
        server_gets = self.server.stats().get("GET", 0)
        url = "http://127.0.0.1:%d" % port
        with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
            self.assertEqual(r.status, 200)
            self.assertTrue(r.headers["Content-Type"].startswith("text/plain; version=0.0.4"))
            text = r.read().decode()
        self.assertNoSecret(text, "/metrics")

        helps, types, samples = set(), {}, {}
        sample_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')
        for line in text.splitlines():
            if line.startswith("# HELP "):
                helps.add(line.split()[2])
            elif line.startswith("# TYPE "):
                _, _, name, kind = line.split()
                self.assertIn(kind, ("counter", "gauge", "histogram"), line)
                types[name] = kind
            else:
                mo = sample_re.match(line)
                self.assertIsNotNone(mo, "not a sample line: %r" % line)
                float(mo.group(3))  # every value is a number
                samples[mo.group(1) + (mo.group(2) or "")] = float(mo.group(3))
        for key in samples:
            family = re.sub(r"(_bucket|_sum|_count)$", "", key.split("{")[0])
            if family not in types:
                family = key.split("{")[0]
            self.assertIn(family, types, key)
            self.assertIn(family, helps, key)
        self.assertEqual(types["ossmount_requests_total"], "counter")
        self.assertEqual(types["ossmount_request_duration_seconds"], "histogram")
        # The first scrape came after the reads: every GET the server saw was counted.
        self.assertGreaterEqual(server_gets, len(SMALL))
        self.assertEqual(samples['ossmount_requests_total{type="GET",outcome="ok"}'], server_gets)
        # Histogram buckets are cumulative and end at the count.
        buckets = [(k, v) for k, v in samples.items()
                   if k.startswith('ossmount_request_duration_seconds_bucket{type="GET",')]
        inf = samples['ossmount_request_duration_seconds_bucket{type="GET",le="+Inf"}']
        self.assertEqual(inf, samples['ossmount_request_duration_seconds_count{type="GET"}'])
        self.assertTrue(all(v <= inf for _, v in buckets))
        self.assertGreater(len(buckets), 20)

        with self.assertRaises(urllib.error.HTTPError) as ctx:
            urllib.request.urlopen(url + "/other", timeout=10)
        self.assertEqual(ctx.exception.code, 404)

    def test_metrics_address_in_use_fails_the_start(self):
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            port = s.getsockname()[1]
            with self.assertRaises(AssertionError) as ctx:
                self.mount(["--metrics-address", "127.0.0.1:%d" % port])
        self.assertIn("--metrics-address", str(ctx.exception))

    # ---- audit log -------------------------------------------------------------------------

    def audit_lines(self, path):
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def test_audit_log_lines_and_reopen_on_sighup(self):
        audit = os.path.join(self.tmp, "audit.log")
        m = self.mount(["--audit-log", audit])
        first = sorted(SMALL)[:4]
        child = subprocess.Popen(["/usr/bin/python3", "-c",
                                  "import sys\nfor p in sys.argv[1:]:\n    open(p,'rb').read()\n"]
                                 + [m.path(n) for n in first])
        child.wait(60)
        harness.wait_for(lambda: len(self.audit_lines(audit)) >= len(first), 30,
                         "audit lines for the first reads")
        lines = self.audit_lines(audit)
        self.assertEqual(sorted(l["path"] for l in lines), first)
        for l in lines:
            self.assertEqual(l["event"], "close")
            self.assertEqual(l["pid"], child.pid)
            self.assertEqual(l["uid"], os.getuid())
            self.assertEqual(l["bytes_read"], len(FILES[l["path"]]))
            self.assertEqual(l["size"], len(FILES[l["path"]]))
            self.assertGreaterEqual(l["duration_ms"], 0)
            self.assertRegex(l["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
            self.assertLessEqual(l["opened"], l["time"])
        self.assertEqual(oct(os.stat(audit).st_mode & 0o777), "0o600")

        # logrotate: move the file away, SIGHUP, and the next lines go to a new file.
        os.rename(audit, audit + ".1")
        m.proc.send_signal(signal.SIGHUP)
        harness.wait_for(lambda: os.path.exists(audit), 30, "the audit log to be reopened")
        self.assertTrue(harness.is_mounted(m.mountpoint), "SIGHUP must not unmount")
        second = sorted(SMALL)[4:6]
        read_all(m, second)
        harness.wait_for(lambda: len(self.audit_lines(audit)) >= len(second), 30,
                         "audit lines in the reopened file")
        self.assertEqual(sorted(l["path"] for l in self.audit_lines(audit)), second)
        self.assertEqual(len(self.audit_lines(audit + ".1")), len(first))

        # A partial read records the bytes actually read; unmount writes what is queued.
        # The kernel hands a close to the daemon (RELEASE) after close() has returned, and
        # drops a RELEASE still queued when the file system is unmounted (seen once in CI):
        # wait for the daemon to have it, as a user's unmount after the job ended would.
        with open(m.path("big/large.bin"), "rb") as f:
            f.read(1 << 20)
        harness.wait_for(
            lambda: harness.mount_metric(m.mountpoint, "gauges", "ossmount_open_handles") == 0,
            30, "the daemon to get the close")
        self.assertEqual(m.unmount(), 0, m.output())
        last = [l for l in self.audit_lines(audit) if l["path"] == "big/large.bin"]
        self.assertEqual(len(last), 1)
        self.assertGreaterEqual(last[0]["bytes_read"], 1 << 20)
        self.assertLess(last[0]["bytes_read"], len(FILES["big/large.bin"]))
        with open(audit) as f:
            self.assertNoSecret(f.read(), "audit log")

    def test_a_file_open_when_the_mount_ends_gets_an_unmount_line(self):
        # A job still holding a file when the daemon is stopped (SIGTERM, as systemd sends):
        # no release ever comes for it, and its line is written as the mount ends.
        audit = os.path.join(self.tmp, "audit-held.log")
        m = self.mount(["--audit-log", audit])
        name = sorted(SMALL)[1]
        f = open(m.path(name), "rb")
        try:
            self.assertEqual(f.read(), FILES[name])
            m.proc.terminate()
            self.assertEqual(m.proc.wait(60), 0, m.output())
        finally:
            with contextlib.suppress(OSError):
                f.close()
        lines = self.audit_lines(audit)
        self.assertEqual([l["path"] for l in lines], [name], lines)
        self.assertEqual(lines[0]["event"], "unmount")
        self.assertEqual(lines[0]["bytes_read"], len(FILES[name]))
        self.assertEqual(lines[0]["size"], len(FILES[name]))
        self.assertEqual(lines[0]["pid"], os.getpid())

    # ---- logs ------------------------------------------------------------------------------

    def test_log_file_rotation_and_signals(self):
        log = os.path.join(self.tmp, "ossmount.log")
        m = self.mount(["--log-file", log, "--log-level", "debug", "--log-max-size", "4KiB",
                        "--log-max-files", "2"])
        # A debug line per request fills 4 KiB quickly.
        for _ in range(5):
            for rel in sorted(SMALL):
                os.stat(m.path(rel))
            read_all(m, sorted(SMALL))
            subprocess.run(["ls", "-lR", m.mountpoint], capture_output=True)
        # spdlog keeps the extension: ossmount.log -> ossmount.1.log -> ossmount.2.log.
        rotated = os.path.join(self.tmp, "ossmount.1.log")
        harness.wait_for(lambda: os.path.exists(rotated), 30, "a rotated log file")
        self.assertLessEqual(os.path.getsize(rotated), 4096)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "ossmount.3.log")),
                         "more than --log-max-files kept")

        # logrotate: move the file away and SIGHUP; the daemon writes to a new file.
        os.rename(log, log + ".moved")
        m.proc.send_signal(signal.SIGHUP)
        harness.wait_for(lambda: os.path.exists(log) and "reopened" in harness.read_text(log), 30,
                         "the log file to be reopened")
        self.assertTrue(harness.is_mounted(m.mountpoint), "SIGHUP must not unmount")
        self.assertEqual(m.unmount(), 0, m.output())
        text = ""
        for name in os.listdir(self.tmp):
            if name.startswith("ossmount."):
                with open(os.path.join(self.tmp, name), errors="replace") as f:
                    text += f.read()
        self.assertIn("mounted on", text)
        self.assertNoSecret(text, "log files")
        self.assertNoSecret(m.output(), "stderr")

    def test_sigusr2_toggles_debug(self):
        log = os.path.join(self.tmp, "ossmount.log")
        m = self.mount(["--log-file", log])

        def log_text():
            with open(log, errors="replace") as f:
                return f.read()

        m.proc.send_signal(signal.SIGUSR2)
        harness.wait_for(lambda: "log level now debug" in log_text(), 30, "debug on")
        self.assertTrue(harness.is_mounted(m.mountpoint))
        m.proc.send_signal(signal.SIGUSR2)
        harness.wait_for(lambda: "log level now info" in log_text(), 30, "debug off")
        self.assertTrue(harness.is_mounted(m.mountpoint))

    def test_journald_format_on_stderr(self):
        # JOURNAL_STREAM naming our stderr (the harness's log file) switches to "<N>level msg".
        env = self.server.env()
        log = tempfile.NamedTemporaryFile(prefix="ossmount-journal-", suffix=".log", delete=False)
        st = os.fstat(log.fileno())
        env["JOURNAL_STREAM"] = "%d:%d" % (st.st_dev, st.st_ino)
        mnt = tempfile.mkdtemp(prefix="ossmount-mnt-")
        cmd = [harness.OSSMOUNT, self.server.bucket, mnt] + self.server.client_args()[4:] + \
            ["--endpoint", self.server.endpoint, "-f"]
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=log)
        try:
            harness.wait_for(lambda: harness.is_mounted(mnt), 60, "the mount")
            wait_for_control(mnt)
        finally:
            harness.force_unmount(mnt)
            proc.wait(30)
            os.rmdir(mnt)
        with open(log.name) as f:
            lines = [l for l in f.read().splitlines() if l]
        os.unlink(log.name)
        self.assertTrue(lines)
        mounted = [l for l in lines if "mounted on" in l]
        self.assertEqual(len(mounted), 1, lines)
        self.assertTrue(mounted[0].startswith("<6>info mounted on"), mounted[0])
        for l in lines:
            self.assertRegex(l, r"^<\d>(trace|debug|info|warning|error|critical) ")
            self.assertNotRegex(l, r"\d\d:\d\d:\d\d")  # journald stamps the time itself
            self.assertNotIn("\x1b[", l)  # no colour


if __name__ == "__main__":
    harness.main()
