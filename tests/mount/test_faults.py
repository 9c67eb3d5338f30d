"""Faults through a real mount: every byte right, zero EIO, retries counted.

docs/SEMANTICS.md "Faults and recovery". The object server injects, on GETs and LISTs:
10% 503 ServiceUnavailable/SlowDown (half of them with Retry-After: 1), 2% connection
resets (before the headers or mid-body), 1% truncated bodies and 1% stalls of 8 s, longer
than the daemon's stall deadline (--stall-timeout 1s; libcurl averages the transfer speed
over about 5 s, so a stall is detected some 1-6 s after the last byte, and shorter stalls
just finish late). A full torchvision ImageFolder pass
(DataLoader, 4 workers, shuffled) and a full tree comparison (every path, size and byte, find,
ls -R, random preads of the large files) must match the source with no error at all. The
daemon runs with --retries 10: at a 14% fault rate per request, 5 attempts would fail about
one request in 20,000; 11 attempts one in 10^9.

Retry counts: the server counts the faults it injected; the daemon logs what its retry loop
absorbed at exit ("retries: N (throttled ..., network ..., timeouts ..., integrity ...);
Retry-After waits R; gave up G"). Both are printed and checked: retries happened for every
cause, none gave up, Retry-After was honoured, and no retry happened without a fault.
"""
import os
import re
import subprocess
import unittest

import harness
from test_imagefolder import epoch
from test_tree import source_entries

FAULTS = ["--error-rate", "0.10", "--error-kinds", "503,SlowDown", "--retry-after", "1",
          "--retry-after-rate", "0.5", "--reset-rate", "0.02", "--truncate-rate", "0.01",
          "--stall-rate", "0.01", "--stall-ms", "8000", "--fault-ops", "get,list",
          "--seed", "7"]
DAEMON = ["--metadata-ttl", "indefinite", "--retries", "10", "--stall-timeout", "1s"]

RETRY_LINE = re.compile(
    r"retries: (\d+) \(throttled (\d+), server errors (\d+), network (\d+), timeouts (\d+), "
    r"integrity (\d+), other (\d+)\); Retry-After waits (\d+); gave up (\d+)")


def retry_stats(log):
    m = RETRY_LINE.search(log)
    if not m:
        raise AssertionError("no retry counters in the daemon log:\n" + log[-3000:])
    keys = ["retries", "throttled", "server_errors", "network", "timeouts", "integrity", "other",
            "retry_after", "gave_up"]
    return dict(zip(keys, map(int, m.groups())))


def failed_fuse_ops(log):
    return [l for l in log.splitlines() if re.search(r"fuse \w+ ino \d+: ", l)]


class FaultsMixin:
    def check_counts(self, mount, server_stats, what):
        self.assertEqual(mount.unmount(), 0, mount.output()[-3000:])
        log = mount.output()
        self.assertEqual(failed_fuse_ops(log), [], "a FUSE operation failed")
        r = retry_stats(log)
        f = server_stats["faults"]
        injected = f.get("error", 0) + f.get("reset", 0) + f.get("truncate", 0) + f.get("stall", 0)
        print("\n%s: server injected %s (total %d) over %d requests; daemon retries %s" %
              (what, {k: f.get(k, 0) for k in ("error", "reset", "truncate", "stall")}, injected,
               server_stats["requests"], r))
        self.assertEqual(r["gave_up"], 0)
        self.assertGreater(f.get("error", 0), 0)
        self.assertGreater(f.get("reset", 0) + f.get("truncate", 0), 0)
        self.assertGreater(f.get("stall", 0), 0)
        # No retry without a fault; every injected error response was retried (a request
        # can carry two faults, a cancelled readahead GET is not retried: hence <=, >=).
        self.assertLessEqual(r["retries"], injected)
        self.assertGreaterEqual(r["throttled"] + r["server_errors"], f["error"] * 9 // 10)
        self.assertGreater(r["network"] + r["integrity"], 0)
        self.assertGreater(r["timeouts"], 0, "stalls must hit the stall deadline")
        self.assertGreater(r["retry_after"], 0, "Retry-After: 1 must lengthen some waits")
        return r


class ImageFolderUnderFaults(unittest.TestCase, FaultsMixin):
    def test_epoch_every_byte_zero_errors(self):
        src = harness.ensure_dataset("imagefolder", "images", "--classes", "10",
                                     "--per-class", "50")
        server = harness.TestServer(os.path.dirname(src), bucket="images", args=FAULTS)
        try:
            mount = harness.Mount(server, args=DAEMON)
            try:
                classes, seen = epoch(mount.path("train"))
                src_classes, src_seen = epoch(os.path.join(src, "train"))
                self.assertEqual(classes, src_classes)
                self.assertEqual(len(seen), 500)
                self.assertEqual(seen, src_seen)
                self.check_counts(mount, server.stats(), "ImageFolder epoch")
            finally:
                mount.close()
        finally:
            server.stop()


class TreeUnderFaults(unittest.TestCase, FaultsMixin):
    def test_tree_every_byte_zero_errors(self):
        src = harness.ensure_dataset("mixed", "mixed")
        server = harness.TestServer(os.path.dirname(src), bucket="mixed", args=FAULTS)
        try:
            mount = harness.Mount(server, args=DAEMON)
            try:
                mnt = mount.mountpoint
                self.assertEqual(source_entries(mnt), source_entries(src))
                manifest = harness.read_manifest(src)
                for rel, (size, digest) in manifest.items():
                    self.assertEqual(harness.sha256_file(os.path.join(mnt, rel)), digest, rel)
                run = lambda cmd, cwd: subprocess.run(cmd, cwd=cwd, shell=True, check=True,
                                                      capture_output=True, timeout=600).stdout
                self.assertEqual(run("find . | sort", mnt), run("find . | sort", src))
                self.assertEqual(run("ls -R", mnt), run("ls -R", src))
                self.check_counts(mount, server.stats(), "tree comparison")
            finally:
                mount.close()
        finally:
            server.stop()


if __name__ == "__main__":
    harness.main()
