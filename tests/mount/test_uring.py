"""FUSE over io_uring: the transport, its fallbacks and its shutdown, on real mounts.

Where the kernel has the rings (Linux 6.14+ with CONFIG_FUSE_IO_URING), the daemon takes
its requests through them when the fuse module's switch enable_uring is on
(--fuse-io-uring auto, the default), turns the switch on itself for --fuse-io-uring on (as
root), and keeps to /dev/fuse for off, for a switch that is off, and without the feature,
saying why in its log. Every case reads every byte it checks. The switch is global: the
cases that need it off or on set it, and the class puts back what it found.

Needs root (mounts, the switch) and a kernel with the feature; otherwise skipped.
"""
import errno
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

import harness

SWITCH = "/sys/module/fuse/parameters/enable_uring"


def read_switch():
    with open(SWITCH) as f:
        return f.read().strip()


def write_switch(value):
    with open(SWITCH, "w") as f:
        f.write(value)


def ring_requests(mountpoint):
    return harness.mount_metric(mountpoint, "counters", "ossmount_fuse_ring_requests_total")


def stats_text(mountpoint):
    r = subprocess.run([harness.OSSMOUNT, "stats", mountpoint, "--once"], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError("ossmount stats failed: %s" % r.stderr)
    return r.stdout


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def available():
    """Why the cases cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (mounts and the kernel's switch)"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    with open("/dev/fuse", "rb"):  # loads the fuse module, whose parameters then exist
        pass
    if not os.path.exists(SWITCH):
        return "this kernel has no FUSE over io_uring (%s missing)" % SWITCH
    return None


@unittest.skipIf(available() is not None, available() or "")
class UringTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.switch_before = read_switch()
        cls.src = harness.ensure_dataset("imagefolder", "uring", "--classes", "4",
                                         "--per-class", "30", "--seed", "41")
        cls.manifest = harness.read_manifest(cls.src)
        cls.server = harness.TestServer(os.path.dirname(cls.src), bucket="uring")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        write_switch(cls.switch_before)

    def setUp(self):
        write_switch("Y")
        self.server.reset_stats()

    def mount(self, *args, server=None, supervise=False):
        """A mount of the dataset; unsupervised unless asked, since a supervised mount keeps to
        /dev/fuse (test_restart.py)."""
        a = ["--metadata-ttl", "indefinite"] + ([] if supervise else ["--no-supervise"])
        m = harness.Mount(server or self.server, args=a + list(args))
        self.addCleanup(m.close)
        return m

    def test_a_supervised_mount_keeps_to_dev_fuse(self):
        # A request a dead daemon's ring entry held would be neither answered nor resent, so
        # a connection that outlives its daemon takes none through rings.
        m = self.mount(supervise=True)
        self.check_every_byte(m)
        self.assertIn("FUSE over io_uring off: not used on a connection that outlives the "
                      "daemon process", m.output())
        self.assertEqual(ring_requests(m.mountpoint), 0)

    def check_every_byte(self, m):
        for rel, (size, digest) in self.manifest.items():
            path = m.path(rel)
            self.assertEqual(os.path.getsize(path), size, rel)
            self.assertEqual(sha256_of(path), digest, rel)

    def test_the_rings_carry_the_requests_by_default(self):
        m = self.mount()
        harness.wait_for(lambda: "FUSE over io_uring on" in m.output(), 30, "the rings")
        before = ring_requests(m.mountpoint)
        self.check_every_byte(m)
        files = len(self.manifest)
        # Each file: at least its OPEN and READ, and its RELEASE, through a ring.
        self.assertGreaterEqual(ring_requests(m.mountpoint) - before, 2 * files)
        self.assertEqual(self.server.stats().get("GET", 0), files)
        text = stats_text(m.mountpoint)
        self.assertRegex(text, r"FUSE requests  through io_uring, \d+ queue\(s\) of \d+ entries")
        self.assertEqual(m.unmount(), 0)

    def test_torchvision_imagefolder_over_the_rings(self):
        m = self.mount()
        script = r"""
import hashlib, os, sys, torch, torchvision
def load(p):
    with open(p, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()
root = sys.argv[1]
ds = torchvision.datasets.ImageFolder(root, loader=load)
seen = {}
for digests, labels in torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True, num_workers=4):
    seen.update(zip(digests, labels.tolist()))
print(len(ds.classes), len(ds), len(seen))
for path, label in ds.samples:
    print(os.path.relpath(path, os.path.dirname(root)), load(path))
"""
        r = subprocess.run(["/usr/bin/python3", "-c", script, m.path("train")],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "4 120 120")
        for line in lines[1:]:
            rel, digest = line.split()
            self.assertEqual(digest, self.manifest[rel][1], rel)
        self.assertGreater(ring_requests(m.mountpoint), 0)

    def test_off_keeps_to_dev_fuse(self):
        m = self.mount("--fuse-io-uring", "off")
        self.check_every_byte(m)
        self.assertIn("FUSE over io_uring off: turned off (--fuse-io-uring off)", m.output())
        self.assertEqual(ring_requests(m.mountpoint), 0)
        self.assertIn("FUSE requests  through /dev/fuse", stats_text(m.mountpoint))

    def test_a_switch_that_is_off_leaves_dev_fuse_and_the_log_says_how_to_turn_it_on(self):
        write_switch("N")
        m = self.mount()
        self.check_every_byte(m)
        out = m.output()
        self.assertIn("FUSE over io_uring off: the kernel's FUSE io_uring switch is off", out)
        self.assertIn("echo Y > %s" % SWITCH, out)
        self.assertEqual(ring_requests(m.mountpoint), 0)
        self.assertEqual(read_switch(), "N")  # auto never touches it

    # Runs its arguments with io_uring_setup refused (ENOSYS), as a container runtime's
    # default seccomp profile (podman's, Docker's) refuses it.
    NO_RINGS = (r"import errno, os, sys, seccomp; "
                r"f = seccomp.SyscallFilter(defaction=seccomp.ALLOW); "
                r"f.add_rule(seccomp.ERRNO(errno.ENOSYS), 'io_uring_setup'); "
                r"f.load(); os.execv(sys.argv[1], sys.argv[1:])")

    def test_a_daemon_that_may_not_create_rings_keeps_to_dev_fuse(self):
        # The kernel offers the rings, but the daemon cannot make one: it must not ask for
        # them in INIT, since the kernel then holds every request until they exist.
        m = harness.Mount(self.server, args=["--metadata-ttl", "indefinite", "--no-supervise"],
                          prefix=["/usr/bin/python3", "-c", self.NO_RINGS])
        self.addCleanup(m.close)
        r = subprocess.run(["timeout", "20", "stat", m.path(next(iter(self.manifest)))],
                           capture_output=True)
        self.assertEqual(r.returncode, 0, "the mount does not answer: %s" % m.output())
        self.check_every_byte(m)
        self.assertIn("FUSE over io_uring off: this process may not create an io_uring "
                      "(Function not implemented", m.output())
        self.assertEqual(ring_requests(m.mountpoint), 0)
        self.assertEqual(m.unmount(), 0)

    def test_on_turns_the_switch_on(self):
        write_switch("N")
        m = self.mount("--fuse-io-uring", "on")
        self.assertEqual(read_switch(), "Y")
        self.assertIn("turned on the kernel's FUSE io_uring switch", m.output())
        harness.wait_for(lambda: "FUSE over io_uring on" in m.output(), 30, "the rings")
        self.check_every_byte(m)
        self.assertGreater(ring_requests(m.mountpoint), 0)

    def test_on_fails_the_start_when_the_switch_cannot_be_turned_on(self):
        # Not root (uid 65534), the switch off: the start fails before mounting, saying why.
        write_switch("N")
        # Outside the run's directory, which only root may enter.
        mnt = tempfile.mkdtemp(prefix="ossmount-uring-mnt-", dir="/tmp")
        self.addCleanup(shutil.rmtree, mnt, True)
        os.chown(mnt, 65534, 65534)
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + \
            harness.mount_command(self.server, mnt, ["--fuse-io-uring", "on", "--no-supervise"])
        env = self.server.env()
        env["HOME"] = mnt
        env.pop("NOTIFY_SOCKET", None)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("--fuse-io-uring on: cannot turn on the kernel's FUSE io_uring switch",
                      r.stderr)
        self.assertIn("it takes root", r.stderr)
        self.assertFalse(harness.is_mounted(mnt))
        self.assertEqual(read_switch(), "N")

    def test_more_readers_than_ring_entries_all_get_their_bytes(self):
        # Each GET waits 150 ms at the server: 120 readers at once hold more requests than the
        # rings have entries on these CPUs (the kernel keeps the rest until an entry is free).
        slow = harness.TestServer(os.path.dirname(self.src), bucket="uring",
                                  args=["--ttfb-ms", "150"])
        self.addCleanup(slow.stop)
        m = self.mount(server=slow)
        rels = sorted(self.manifest)
        results = {}

        def read(rel):
            results[rel] = sha256_of(m.path(rel))

        threads = [threading.Thread(target=read, args=(rel,)) for rel in rels]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        self.assertEqual(len(results), len(rels))
        for rel in rels:
            self.assertEqual(results[rel], self.manifest[rel][1], rel)

    def readers_until_stopped(self, m):
        """16 threads reading every file over and over until the mount goes; returns the
        threads and the errors they ended with."""
        stop = threading.Event()
        errors = []
        rels = sorted(self.manifest)

        def loop(i):
            while not stop.is_set():
                try:
                    with open(m.path(rels[i % len(rels)]), "rb") as f:
                        f.read()
                except OSError as e:
                    errors.append(e.errno)
                    return
                i += 16

        threads = [threading.Thread(target=loop, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        return threads, errors, stop

    def stop_with_readers_in_flight(self, sig):
        slow = harness.TestServer(os.path.dirname(self.src), bucket="uring",
                                  args=["--ttfb-ms", "100"])
        self.addCleanup(slow.stop)
        m = self.mount(server=slow)
        threads, errors, stop = self.readers_until_stopped(m)
        time.sleep(1.0)  # requests in every state: in the rings, at the server, answered
        m.proc.send_signal(sig)
        code = m.proc.wait(60)
        stop.set()
        for t in threads:
            t.join(60)
            self.assertFalse(t.is_alive(), "a reader still hangs after the daemon went")
        # What the readers saw: their bytes, or the end of the connection; never a hang.
        for e in errors:
            self.assertIn(e, (errno.ENOTCONN, errno.ECONNABORTED, errno.EIO, errno.ENOENT), errors)
        return code

    def test_sigterm_with_readers_in_flight_exits_cleanly(self):
        self.assertEqual(self.stop_with_readers_in_flight(signal.SIGTERM), 0)

    def test_sigkill_with_readers_in_flight_leaves_no_reader_hanging(self):
        self.assertEqual(self.stop_with_readers_in_flight(signal.SIGKILL), -signal.SIGKILL)


if __name__ == "__main__":
    harness.main()
