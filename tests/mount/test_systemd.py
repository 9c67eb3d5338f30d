"""systemd: the notify protocol as ossmount@.service (Type=notify) sees it, and the unit file.

The daemon runs as the unit runs it (--config FILE --foreground) with NOTIFY_SOCKET naming a
datagram socket this test owns: READY=1 must arrive only once the mount answers, nothing
that says ready when the mount fails, and STOPPING=1 when SIGTERM (systemctl stop) starts
the unmount. `systemd-analyze verify` checks the unit offline, with ExecStart pointing at the
freshly built binary.

docs/CONFIGURATION.md "systemd", docs/SEMANTICS.md "Lifecycle".
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import unittest

import harness


class NotifyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="systemd-data-")
        os.makedirs(os.path.join(cls.root, "bucket", "d"))
        with open(os.path.join(cls.root, "bucket", "d", "f"), "wb") as f:
            f.write(b"x" * 1000)
        # Slow listings make the window between "process started" and "mount answers" wide,
        # so a READY=1 sent too early would be seen before the mount exists.
        cls.server = harness.TestServer(cls.root, bucket="bucket", args=["--ttfb-ms", "300"])

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.root, ignore_errors=True)

    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="systemd-work-")
        self.mnt = tempfile.mkdtemp(prefix="ossmount-notify-")
        self.listener = harness.NotifyListener(self.work)
        self.proc = None

    def tearDown(self):
        harness.force_unmount(self.mnt)
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc:
            self.log.close()
        self.listener.close()
        shutil.rmtree(self.work, ignore_errors=True)
        os.rmdir(self.mnt)

    def start(self, bucket="bucket"):
        config = os.path.join(self.work, "dataset.json")
        with open(config, "w") as f:
            json.dump({"source": bucket, "mountpoint": self.mnt, "endpoint": self.server.endpoint,
                       "region": harness.REGION, "path_style": True}, f)
        env = self.server.env()
        env["NOTIFY_SOCKET"] = self.listener.path
        self.log = open(os.path.join(self.work, "ossmount.log"), "w+")
        self.proc = subprocess.Popen([harness.OSSMOUNT, "--config", config, "--foreground"],
                                     env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def output(self):
        self.log.seek(0)
        return self.log.read()

    def test_ready_after_the_mount_answers_and_stopping_at_stop(self):
        self.start()
        # First the mount's /dev/fuse descriptor for systemd's store (so that `systemctl
        # restart` keeps the mount), then READY=1.
        stored = self.listener.receive_with_fds(60)
        self.assertIsNotNone(stored, "no notification: %s" % self.output())
        self.assertEqual(stored[0].split("\n"), ["FDSTORE=1", "FDNAME=ossmount-fuse"])
        self.assertEqual(len(stored[1]), 1)
        self.assertEqual(os.readlink("/proc/self/fd/%d" % stored[1][0]), "/dev/fuse")
        os.close(stored[1][0])
        msg = self.listener.receive(60)
        self.assertIsNotNone(msg, "no READY=1: %s" % self.output())
        self.assertIn("READY=1", msg.split("\n"))
        # At the moment READY=1 arrives the mount must already answer.
        self.assertTrue(harness.is_mounted(self.mnt))
        self.assertEqual(os.listdir(self.mnt), ["d"])
        # ... and its control socket already answers (`ossmount warmup` right after start).
        self.assertEqual(harness.stats_json(self.mnt, check=False).returncode, 0)
        self.assertIsNone(self.listener.receive(0.5))  # nothing else while serving
        self.proc.send_signal(signal.SIGTERM)  # what `systemctl stop` sends
        msg = self.listener.receive(30)
        self.assertIsNotNone(msg, "no STOPPING=1: %s" % self.output())
        self.assertIn("STOPPING=1", msg.split("\n"))
        # Not a restart (no systemd job says so): the descriptor leaves the store, then the
        # mount goes.
        msg = self.listener.receive(30)
        self.assertEqual(msg, "FDSTOREREMOVE=1\nFDNAME=ossmount-fuse", self.output())
        self.assertEqual(self.proc.wait(30), 0, self.output())
        self.assertFalse(harness.is_mounted(self.mnt))  # clean unmount on stop

    def test_no_ready_when_the_mount_fails(self):
        self.start(bucket="no-such-bucket")
        self.assertEqual(self.proc.wait(120), 1, self.output())
        messages = []
        while True:
            m = self.listener.receive(0.2)
            if m is None:
                break
            messages.append(m)
        self.assertFalse(any("READY=1" in m.split("\n") for m in messages), messages)
        self.assertTrue(any(m.startswith("STATUS=failed") for m in messages), messages)


class UnitFileTest(unittest.TestCase):
    def unit_text(self):
        with open(os.path.join(harness.SOURCE_DIR, "systemd", "ossmount@.service.in")) as f:
            return f.read()

    def test_systemd_analyze_verify(self):
        analyze = shutil.which("systemd-analyze")
        if analyze is None:
            self.fail("systemd-analyze is missing (scripts/install-deps.sh installs systemd)")
        work = tempfile.mkdtemp(prefix="unit-")
        try:
            bindir = os.path.dirname(os.path.realpath(harness.OSSMOUNT))
            unit = os.path.join(work, "ossmount@.service")
            with open(unit, "w") as f:
                f.write(self.unit_text().replace("@OSSMOUNT_INSTALL_FULL_BINDIR@", bindir))
            r = subprocess.run([analyze, "verify", unit], capture_output=True, text=True,
                               timeout=120)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            # verify prints problems it tolerates (unknown keys, bad values) without failing.
            self.assertNotIn("ossmount@.service:", r.stdout + r.stderr)
        finally:
            shutil.rmtree(work)

    def test_unit_settings(self):
        text = self.unit_text()
        settings = {}
        for line in text.splitlines():
            if "=" in line and not line.startswith("#"):
                k, v = line.split("=", 1)
                settings.setdefault(k.strip(), []).append(v.strip())
        self.assertEqual(settings["Type"], ["notify"])
        self.assertEqual(settings["Restart"], ["on-failure"])
        # An OOM kill of the supervised daemon is survived; systemd must not stop the unit.
        self.assertEqual(settings["OOMPolicy"], ["continue"])
        # systemd keeps the mount's descriptor across `systemctl restart` and a kill of the
        # whole unit (scripts/test-systemd.sh tries both under a real systemd).
        self.assertEqual(settings["FileDescriptorStoreMax"], ["1"])
        self.assertIn("network-online.target", settings["After"])
        self.assertIn("network-online.target", settings["Wants"])
        self.assertIn("--config /etc/ossmount/%i.json", settings["ExecStart"][0])
        self.assertIn("--foreground", settings["ExecStart"][0])
        self.assertIn("/dev/fuse rw", settings["DeviceAllow"])
        # Options that give the service its own mount namespace would hide the mount from
        # everyone else.
        for hidden in ("ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices",
                       "PrivateMounts", "ProtectKernelTunables", "ProtectKernelModules",
                       "ProtectKernelLogs", "ProtectControlGroups", "ProtectProc",
                       "ReadOnlyPaths", "ReadWritePaths", "InaccessiblePaths", "ProtectHostname",
                       "DynamicUser", "TemporaryFileSystem", "BindPaths"):
            self.assertNotIn(hidden, settings, hidden)


if __name__ == "__main__":
    harness.main()
