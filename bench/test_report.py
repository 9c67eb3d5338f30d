#!/usr/bin/python3
"""Checks that the report marks each issue-4 target met / not met from the figures, shows
failed peers instead of dropping them, and computes ratios. Run: /usr/bin/python3 bench/test_report.py
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ossbench import report  # noqa: E402


def epoch_case(peer, files_per_s, get=1.0, head=0.0, workers=16, ttfb=35, epoch2=None):
    epochs = [{"epoch": 1, "files": 5000, "files_per_s": files_per_s, "MB_per_s": 1.0,
               "requests": {"GET": 5000 * get, "HEAD": 5000 * head, "LIST": 0},
               "per_file": {"GET": get, "HEAD": head, "LIST": 0}}]
    if epoch2:
        epochs.append({"epoch": 2, "files": 5000, "files_per_s": epoch2, "MB_per_s": 1.0,
                       "requests": {"GET": 0, "HEAD": 0, "LIST": 0}})
    return {"workload": "imagefolder", "peer": peer, "ttfb": ttfb, "workers": workers,
            "epochs": 2, "limit": 0,
            "result": {"ok": True, "list": {"seconds": 1, "requests": {"LIST": 21}},
                       "epochs": epochs}}


def doc(cases):
    return {"meta": {"timestamp": "T", "mode": "quick", "commit": "c", "cpu": "cpu", "cores": 2,
                     "mem_gib": 1, "kernel": "k", "loadavg_start": ["1", "1", "1"],
                     "server": "s"}, "cases": cases}


def remount(after_fps, gets):
    ep = {"epoch": 1, "files": 5000, "files_per_s": after_fps, "MB_per_s": 1,
          "requests": {"GET": gets, "HEAD": 0, "LIST": 21}}
    return {"workload": "remount", "peer": "ossmount", "ttfb": 35, "workers": 16,
            "result": {"ok": True, "before": {"epochs": [dict(ep, requests={"GET": 5000})]},
                       "after_remount": {"epochs": [ep]}, "cache_mib": 600}}


class TargetTest(unittest.TestCase):
    def line(self, text, prefix):
        for line in text.splitlines():
            if line.startswith("| " + prefix):
                return line
        self.fail("no row starting with %r in\n%s" % (prefix, text))

    def test_epoch1_targets_met(self):
        t = report.targets(doc([epoch_case("ossmount", 400), epoch_case("s3fs", 40),
                                epoch_case("rclone-off", 250)]))
        self.assertIn("**met**", self.line(t, "Epoch 1"))
        self.assertIn("10.00x", self.line(t, "... >= 8x s3fs"))
        self.assertIn("**met**", self.line(t, "... >= 8x s3fs"))
        self.assertIn("**met**", self.line(t, "... >= 1.4x"))
        self.assertIn("**met**", self.line(t, "... 1 GET"))

    def test_epoch1_targets_not_met(self):
        t = report.targets(doc([epoch_case("ossmount", 300, head=1.0), epoch_case("s3fs", 40),
                                epoch_case("rclone-off", 250)]))
        self.assertIn("**not met**", self.line(t, "Epoch 1"))
        self.assertIn("**not met**", self.line(t, "... >= 8x s3fs"))
        self.assertIn("**not met**", self.line(t, "... >= 1.4x"))
        self.assertIn("**not met**", self.line(t, "... 1 GET"))

    def test_failed_peer_is_not_met_and_shown(self):
        s3fs = {"workload": "imagefolder", "peer": "s3fs", "ttfb": 35, "workers": 16,
                "result": {"ok": False, "error": "timed out after 300 s"}}
        d = doc([epoch_case("ossmount", 400), s3fs])
        self.assertIn("**not met**", self.line(report.targets(d), "... >= 8x s3fs"))
        self.assertIn("FAILED (timed out after 300 s)", report.markdown(d))

    def test_remount_needs_zero_gets_and_local_ratio(self):
        local = epoch_case("local", 3000, epoch2=3000)
        t = report.targets(doc([remount(2500, 0), local]))
        self.assertIn("**met**", self.line(t, "Epoch 2 after remount"))
        t = report.targets(doc([remount(2500, 3), local]))
        self.assertIn("**not met**", self.line(t, "Epoch 2 after remount"))
        t = report.targets(doc([remount(2000, 0), local]))
        self.assertIn("**not met**", self.line(t, "Epoch 2 after remount"))

    def test_remount_compares_with_the_local_median_of_its_rounds(self):
        # The imagefolder local case (3000) would make 2500 a pass; the rounds' median
        # local (4000) must be used instead, and it is shown.
        local = epoch_case("local", 3000, epoch2=3000)
        rm = remount(2500, 0)
        rm["result"]["local_median"] = 4000
        rm["result"]["rounds"] = [{"ossmount": 2500, "local": 4000, "ossmount_gets": 0}]
        t = report.targets(doc([rm, local]))
        self.assertIn("**not met**", self.line(t, "Epoch 2 after remount"))
        self.assertIn("0.62x", self.line(t, "Epoch 2 after remount"))
        self.assertIn("2,500 vs 4,000 files/s", report.remount_table(doc([rm, local])))

    def test_remount_ratio_is_the_median_of_the_rounds_ratios(self):
        # Medians taken side by side would give 3000 / 3000 = 1.0x (met); the rounds' own
        # ratios are 0.75x, 1.5x and 0.5x, and their median, 0.75x, is not met.
        local = epoch_case("local", 3000, epoch2=3000)
        rm = remount(3000, 0)
        rm["result"]["local_median"] = 3000
        rm["result"]["rounds"] = [{"ossmount": 3000, "local": 4000, "ossmount_gets": 0},
                                  {"ossmount": 3000, "local": 2000, "ossmount_gets": 0},
                                  {"ossmount": 1500, "local": 3000, "ossmount_gets": 0}]
        line = self.line(report.targets(doc([rm, local])), "Epoch 2 after remount")
        self.assertIn("**not met**", line)
        self.assertIn("0.75x", line)
        table = report.remount_table(doc([rm, local]))
        self.assertIn("0.75x (local median 3,000)", table)
        self.assertIn("3,000 vs 2,000 files/s = 1.50x", table)
        self.assertNotIn("/dev/fuse", table)

    def test_remount_rounds_over_dev_fuse_are_shown_beside(self):
        rm = remount(2000, 0)
        rm["result"]["rounds"] = [
            {"ossmount": 2000, "local": 2500, "ossmount_gets": 0, "dev_fuse": 1600,
             "ossmount_cpu_s": 0.6, "dev_fuse_cpu_s": 0.8},
            {"ossmount": 2200, "local": 2500, "ossmount_gets": 0, "dev_fuse": 2000,
             "ossmount_cpu_s": 0.6, "dev_fuse_cpu_s": 0.8}]
        table = report.remount_table(doc([rm]))
        self.assertIn("The same rounds over /dev/fuse", table)
        self.assertIn("1,600 files/s = 0.64x of local, 0.80x of io_uring (daemon CPU 0.8 s "
                      "against 0.6 s)", table)
        self.assertIn("median io_uring / /dev/fuse 1.18x", table)  # 1.25x and 1.10x

    def test_cold_find_bound(self):
        def find_case(secs, head):
            return {"workload": "metadata", "peer": "ossmount", "ttfb": 35, "tool": "find",
                    "result": {"ok": True, "cold": {"seconds": secs, "lines": 100000,
                               "requests": {"GET": 0, "HEAD": head, "LIST": 101}},
                               "warm": {"seconds": 0.1, "lines": 100000,
                                        "requests": {"GET": 0, "HEAD": 0, "LIST": 0}}}}
        # bound = 1.5 x 101 x 35 ms = 5.30 s
        self.assertIn("**met**", self.line(report.targets(doc([find_case(5.2, 0)])), "Cold find"))
        self.assertIn("**not met**", self.line(report.targets(doc([find_case(5.4, 0)])), "Cold find"))
        self.assertIn("**not met**", self.line(report.targets(doc([find_case(1.0, 5)])), "Cold find"))

    def test_memory_bound(self):
        def mem(rss):
            return {"workload": "memory", "peer": "ossmount", "ttfb": 35, "threads": 64,
                    "max_memory_mib": 256, "daemon": {"peak_rss_mib": rss, "cpu_s": 1},
                    "result": {"ok": True, "MB_per_s": 1, "seconds": 1, "requests": {}}}
        self.assertIn("**met**", self.line(report.targets(doc([mem(320)])), "Peak RSS"))
        self.assertIn("**not met**", self.line(report.targets(doc([mem(321)])), "Peak RSS"))


def prefetch_case(mode, files_per_s, ttfb=35, ok=True):
    c = epoch_case("local" if mode == "local" else "ossmount", files_per_s, ttfb=ttfb)
    c.update(workload="prefetch", mode=mode, epochs=1)
    c["result"]["epochs"] = c["result"]["epochs"][:1]
    if not ok:
        c["result"] = {"ok": False, "error": "boom"}
    return c


class PrefetchTargetTest(unittest.TestCase):
    def test_targets_met_and_not_met(self):
        d = doc([prefetch_case("local", 4000), prefetch_case("plain", 450),
                 prefetch_case("hints", 2000), prefetch_case("warmup", 1000),
                 prefetch_case("hints", 3000, ttfb=12)])
        text = report.prefetch_table(d)
        self.assertIn("| Epoch 1 at 35 ms, 16 workers: hints >= 4x without | 4.44x | **met** |",
                      text)
        self.assertIn("| ... and >= 0.5x the local-disk reader | 0.50x | **met** |", text)
        self.assertIn("warm-up at mount time >= 3x without | 2.22x | **not met** |", text)
        self.assertIn("(OSS Accelerator guide: 2.44x) | 1.50x |", text)

    def test_hints_over_dev_fuse_are_shown_beside_but_judge_nothing(self):
        dev = prefetch_case("hints", 1000)
        dev["transport"] = "dev_fuse"
        d = doc([prefetch_case("local", 4000), prefetch_case("plain", 450), dev,
                 prefetch_case("hints", 2000)])
        text = report.prefetch_table(d)
        self.assertIn("| ... and >= 0.5x the local-disk reader | 0.50x | **met** |", text)
        self.assertIn("| hints (/dev/fuse) | 35 ms | 5,000 | 1,000.0 |", text)

    def test_failed_case_is_shown(self):
        d = doc([prefetch_case("plain", 450), prefetch_case("hints", 0, ok=False)])
        text = report.prefetch_table(d)
        self.assertIn("FAILED (boom)", text)
        self.assertIn("hints >= 4x without | - | **not met** |", text)


if __name__ == "__main__":
    unittest.main()
