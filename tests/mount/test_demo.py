"""The README's main job: scripts/demo.sh with no bucket (the embedded default).

The script installs what it needs (a no-op by now), builds the daemon, the object server and
the client (up to date: BUILD_DIR is the tree ctest runs from), generates the sample dataset
(20 classes x 50 JPEGs), serves it at 35 ms, mounts it, reads it with torchvision
ImageFolder twice and once more decoding every image with PIL, and unmounts. Checked: exit
status 0, what it prints of each step, and that it leaves nothing mounted or running.
"""
import os
import re
import subprocess
import unittest

import harness


def processes_mentioning(text):
    """PIDs of processes whose command line contains `text`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and int(pid) != os.getpid():
            found.append(int(pid))
    return found


class DemoTest(unittest.TestCase):
    def test_demo_runs_the_main_job_end_to_end(self):
        if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
            self.skipTest("the demo mounts: it needs root and /dev/fuse")
        work = os.path.join(harness.RUN_DIR, "demo")
        build_dir = os.path.dirname(os.path.dirname(os.path.realpath(harness.OSSMOUNT)))
        env = dict(os.environ, DEMO_DIR=work, BUILD_DIR=build_dir)
        r = subprocess.run(["bash", os.path.join(harness.SOURCE_DIR, "scripts", "demo.sh")],
                           env=env, capture_output=True, text=True, timeout=600)
        out = r.stdout + r.stderr
        print("\n" + "\n".join(l for l in out.splitlines() if "Built target" not in l))
        self.assertEqual(r.returncode, 0, "demo.sh failed")
        # The object client lists and heads an object of the bundled server.
        self.assertRegex(out, r"(?m)^DIR\ttrain/n\d+/$")
        self.assertRegex(out, r"(?m)^etag\t\"[0-9A-F]{32}\"$")
        self.assertIn("demo: mounted; 1000 files under train/", out)
        listed = "ImageFolder %s/mnt/train: 20 classes, 1000 images" % work
        self.assertEqual(out.count(listed), 2, "two ImageFolder runs over the mount")
        self.assertEqual(re.findall(r"(?m)^epoch (\d): 1000 files, ", out), ["1", "2"])
        self.assertRegex(out, r"(?m)^epoch 1: 1000 images decoded in ")
        self.assertRegex(out, r"(?m)^demo: saved checkpoints/resnet18\.pt \(\d+ bytes\) to the "
                              r"bucket and loaded it back into a resnet18$")
        self.assertIn("demo: the object in the bucket is byte for byte what was saved", out)
        self.assertIn("demo: done; unmounting", out)
        # Its exit trap unmounted and stopped the server; the daemon exits with the unmount.
        self.assertFalse(harness.is_mounted(os.path.join(work, "mnt")))
        harness.wait_for(lambda: not processes_mentioning(work), 30,
                         "the demo's server and daemon to exit")


if __name__ == "__main__":
    harness.main()
