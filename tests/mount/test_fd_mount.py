"""A mount on a descriptor passed in: /dev/fd/N as the mount point.

docs/SEMANTICS.md "Starting and stopping". A privileged launcher opens /dev/fuse, mounts it
(mount -t fuse.ossmount -o fd=N,...) and starts ossmount with /dev/fd/N as its mount point,
as Mountpoint and ossfs 2.0 allow: the daemon then needs no CAP_SYS_ADMIN. Here the launcher
is this test (root), and the daemon runs under setpriv without CAP_SYS_ADMIN in any set.
"""
import ctypes
import ctypes.util
import os
import subprocess
import tempfile

import harness
from test_writes import WriteMountCase

LIBC = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
MS_NOSUID, MS_NODEV = 2, 4
CAP_SYS_ADMIN = 21
NO_SYS_ADMIN = ["setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin", "--"]


def mount_fuse_fd(mountpoint, read_only=True):
    """What a launcher does: /dev/fuse opened and mounted on `mountpoint`; the descriptor."""
    fd = os.open("/dev/fuse", os.O_RDWR)
    options = "fd=%d,rootmode=40000,user_id=0,group_id=0,default_permissions" % fd
    flags = MS_NOSUID | MS_NODEV | (1 if read_only else 0)  # MS_RDONLY = 1
    if LIBC.mount(b"ossmount:bucket", mountpoint.encode(), b"fuse.ossmount", flags,
                  options.encode()) != 0:
        err = ctypes.get_errno()
        os.close(fd)
        raise OSError(err, "mount: " + os.strerror(err))
    return fd


def effective_caps(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    raise AssertionError("no CapEff for pid %d" % pid)


class FdMountTest(WriteMountCase):
    def start(self, fd, *args):
        notify_dir = tempfile.mkdtemp(prefix="fd-notify-")
        listener = harness.NotifyListener(notify_dir)
        self.addCleanup(listener.close)
        env = dict(self.server.env(), NOTIFY_SOCKET=listener.path)
        cmd = NO_SYS_ADMIN + harness.mount_command(self.server, "/dev/fd/%d" % fd,
                                                   ["--metadata-ttl", "indefinite"] + list(args))
        log = tempfile.NamedTemporaryFile(prefix="fd-mount-", suffix=".log", delete=False)
        self.addCleanup(log.close)
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                pass_fds=(fd,))
        self.addCleanup(harness.stop_process, proc)
        ready = {"seen": False}

        def started():
            message = listener.receive(0.05)
            ready["seen"] = ready["seen"] or (message is not None and "READY=1" in message)
            return ready["seen"] or proc.poll() is not None
        harness.wait_for(started, 60, "the daemon on /dev/fd/%d" % fd)
        return proc, log.name

    def test_a_launcher_mounts_and_the_daemon_serves_without_cap_sys_admin(self):
        data = os.urandom(300000)
        with open(self.on_server("weights.bin"), "wb") as f:
            f.write(data)
        os.makedirs(self.on_server("train", "cat"))
        with open(self.on_server("train", "cat", "0001.jpg"), "wb") as f:
            f.write(b"jpeg bytes")
        self.server_rescan()
        mountpoint = tempfile.mkdtemp(prefix="fd-mnt-")
        fd = mount_fuse_fd(mountpoint)
        self.addCleanup(harness.force_unmount, mountpoint)
        proc, log = self.start(fd)
        os.close(fd)  # the launcher's copy: the daemon holds its own
        self.assertIsNone(proc.poll(), harness.read_text(log))
        self.assertEqual(effective_caps(proc.pid) & (1 << CAP_SYS_ADMIN), 0)
        self.assertEqual(sorted(os.listdir(mountpoint)), ["train", "weights.bin"])
        with open(os.path.join(mountpoint, "weights.bin"), "rb") as f:
            self.assertTrue(f.read() == data)
        with open(os.path.join(mountpoint, "train", "cat", "0001.jpg"), "rb") as f:
            self.assertEqual(f.read(), b"jpeg bytes")
        self.assertIn("serving the FUSE connection of /dev/fd/%d" % fd, harness.read_text(log))
        # The launcher unmounts: the daemon sees its connection end and exits 0.
        subprocess.run(["umount", mountpoint], check=True)
        self.assertEqual(proc.wait(30), 0, harness.read_text(log))

    def test_a_descriptor_that_is_not_dev_fuse_fails_at_start_with_what_to_pass(self):
        with open(os.path.join(self.root, "plain"), "w") as f:
            f.write("x")
        for fd in (os.open(os.path.join(self.root, "plain"), os.O_RDONLY), 987):
            cmd = harness.mount_command(self.server, "/dev/fd/%d" % fd)
            r = subprocess.run(cmd, env=self.server.env(), capture_output=True, text=True,
                               pass_fds=(fd,) if fd != 987 else (), timeout=60)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("descriptor %d is not an open /dev/fuse" % fd, r.stderr)
            self.assertIn("mount -t fuse.ossmount -o fd=N", r.stderr)

    def test_without_cap_sys_admin_a_path_mount_point_fails_clearly(self):
        # The contrast: the same daemon, given a path, cannot mount.
        mountpoint = tempfile.mkdtemp(prefix="fd-mnt-")
        r = subprocess.run(NO_SYS_ADMIN + harness.mount_command(self.server, mountpoint),
                           env=self.server.env(), capture_output=True, text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertFalse(harness.is_mounted(mountpoint))
        self.assertIn("mounting on '%s' failed" % mountpoint, r.stderr + r.stdout)


if __name__ == "__main__":
    harness.main()
