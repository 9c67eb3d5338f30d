"""fstab: `mount -T FSTAB MOUNTPOINT` and `mount -a -T FSTAB` with type fuse.ossmount.

The chain is the installed one: mount(8) -> /sbin/mount.fuse (the fuse3 package's
mount.fuse3; libmount falls back to it for fuse.* types) -> `sh -c 'ossmount SOURCE MOUNTPOINT
-o OPTIONS'` -> the daemon forks and returns once the mount answers.

The freshly built binary must be where an installed one is found: mount(8) drops PATH from
the helper's environment (util-linux sanitizes it), so `sh` searches its built-in
/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin. To change nothing on the
machine, the test re-runs itself in a private mount namespace (`unshare --mount
--propagation private`) and bind-mounts a temporary directory holding an `ossmount` symlink
over /usr/local/sbin there; the FUSE mounts it makes live and die in that namespace.
Needs root (mount(8) of a FUSE type, unshare); skipped otherwise.

docs/CONFIGURATION.md "fstab", docs/SEMANTICS.md "Mounting from fstab".
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import harness


INSTALL_DIR = "/usr/local/sbin"  # first in sh's default PATH
NAMESPACE_MARK = "OSSMOUNT_TEST_PRIVATE_MOUNT_NS"


def needs_root():
    if os.geteuid() != 0:
        raise unittest.SkipTest("mount(8) of fuse.ossmount needs root")
    if os.environ.get(NAMESPACE_MARK) != "1":
        raise unittest.SkipTest("run this file as a program: it re-runs itself in a private "
                                "mount namespace")
    if not os.path.exists("/sbin/mount.fuse") and not os.path.exists("/sbin/mount.fuse3"):
        raise unittest.SkipTest("fuse3's mount helper is not installed")


def reexec_in_private_mount_namespace():
    if os.geteuid() != 0 or os.environ.get(NAMESPACE_MARK) == "1":
        return
    env = dict(os.environ)
    env[NAMESPACE_MARK] = "1"
    os.execvpe("unshare", ["unshare", "--mount", "--propagation", "private", sys.executable,
                           os.path.abspath(__file__)] + sys.argv[1:], env)


class FstabTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        needs_root()
        cls.root = tempfile.mkdtemp(prefix="fstab-data-")
        cls.files = {}
        for rel in ("imagenet/train/cat/1.jpg", "imagenet/train/dog/2.jpg", "other/x.bin"):
            path = os.path.join(cls.root, "bucket", rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            data = os.urandom(50000)
            with open(path, "wb") as f:
                f.write(data)
            cls.files[rel] = data
        cls.server = harness.TestServer(cls.root, bucket="bucket")
        cls.work = tempfile.mkdtemp(prefix="fstab-work-")
        # Credentials from an ossfs passwd file named in the fstab line: mount(8) at boot has no
        # credentials in its environment.
        cls.passwd = os.path.join(cls.work, "passwd-ossfs")
        with open(cls.passwd, "w") as f:
            f.write("bucket:%s:%s\n" % (harness.AK, harness.SK))
        os.chmod(cls.passwd, 0o600)
        # The "installed" binary: visible only inside this process's mount namespace.
        cls.bindir = os.path.join(cls.work, "bin")
        os.mkdir(cls.bindir)
        os.symlink(os.path.realpath(harness.OSSMOUNT), os.path.join(cls.bindir, "ossmount"))
        subprocess.run(["mount", "--bind", cls.bindir, INSTALL_DIR], check=True)
        cls.env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("OSS_", "ALIBABA_CLOUD_", "AWS_", "OSSMOUNT_"))}

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        subprocess.run(["umount", INSTALL_DIR], check=False)
        shutil.rmtree(cls.work, ignore_errors=True)
        shutil.rmtree(cls.root, ignore_errors=True)

    def setUp(self):
        self.mnt = tempfile.mkdtemp(prefix="ossmount-fstab-")

    def tearDown(self):
        harness.force_unmount(self.mnt)
        harness.wait_for(lambda: not harness.is_mounted(self.mnt), 30, "the unmount")
        os.rmdir(self.mnt)

    def fstab(self, source, options, mnt=None):
        path = os.path.join(self.work, "fstab")
        with open(path, "w") as f:
            f.write("# temporary fstab of test_fstab.py\n")
            f.write("%s %s fuse.ossmount %s 0 0\n" % (source, mnt or self.mnt, options))
        return path

    def base_options(self):
        return ("endpoint=%s,region=%s,path_style,passwd_file=%s"
                % (self.server.endpoint, harness.REGION, self.passwd))

    def mount(self, *args):
        return subprocess.run(["mount"] + list(args), env=self.env, capture_output=True,
                              text=True, timeout=120)

    def check_tree(self, prefix):
        for rel, data in self.files.items():
            if not rel.startswith(prefix):
                continue
            with open(os.path.join(self.mnt, rel[len(prefix):]), "rb") as f:
                self.assertEqual(f.read(), data, rel)

    def umount_and_wait(self):
        r = subprocess.run(["umount", self.mnt], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(harness.is_mounted(self.mnt))

    def test_mount_by_mountpoint_with_generic_options(self):
        cache = os.path.join(self.work, "cache-1")
        opts = ("_netdev,nofail,noauto,x-systemd.automount,x-systemd.requires=network-online.target,"
                "allow_other,defaults,%s,metadata_ttl=indefinite,cache=%s"
                % (self.base_options(), cache))
        fstab = self.fstab("bucket:/imagenet", opts)
        r = self.mount("-T", fstab, self.mnt)
        self.assertEqual(r.returncode, 0, "mount failed: %s %s" % (r.stdout, r.stderr))
        # mount(8) returned: the mount answers already.
        self.assertTrue(harness.is_mounted(self.mnt))
        self.assertEqual(sorted(os.listdir(self.mnt)), ["train"])
        self.check_tree("imagenet/")
        with open("/proc/self/mountinfo") as f:
            line = [l for l in f if l.split()[4] == os.path.realpath(self.mnt)][0]
        self.assertIn("fuse.ossmount", line)  # the type fstab named
        self.assertIn("allow_other", line)
        self.assertTrue(os.path.isdir(cache))  # cache=... reached the daemon
        self.umount_and_wait()

    def test_mount_all(self):
        fstab = self.fstab("bucket", "nofail,_netdev,%s" % self.base_options())
        r = self.mount("-a", "-T", fstab)
        self.assertEqual(r.returncode, 0, "mount -a failed: %s %s" % (r.stdout, r.stderr))
        self.assertTrue(harness.is_mounted(self.mnt))
        self.check_tree("")
        self.umount_and_wait()

    def test_noauto_line_is_skipped_by_mount_all(self):
        fstab = self.fstab("bucket", "noauto,%s" % self.base_options())
        r = self.mount("-a", "-T", fstab)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(harness.is_mounted(self.mnt))

    def test_config_option_points_at_a_config_file(self):
        config = os.path.join(self.work, "dataset.json")
        with open(config, "w") as f:
            json.dump({"endpoint": self.server.endpoint, "region": harness.REGION,
                       "path_style": True, "passwd_file": self.passwd,
                       "metadata_ttl": "indefinite"}, f)
        fstab = self.fstab("bucket:/imagenet/train", "_netdev,config=%s" % config)
        r = self.mount("-T", fstab, self.mnt)
        self.assertEqual(r.returncode, 0, "mount failed: %s %s" % (r.stdout, r.stderr))
        self.assertEqual(sorted(os.listdir(self.mnt)), ["cat", "dog"])
        self.check_tree("imagenet/train/")
        self.umount_and_wait()

    def test_bad_option_fails_the_mount_with_its_name(self):
        fstab = self.fstab("bucket", "%s,metadata_ttl=soon" % self.base_options())
        r = self.mount("-T", fstab, self.mnt)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--metadata-ttl", r.stderr + r.stdout)
        self.assertFalse(harness.is_mounted(self.mnt))

    def test_bad_key_in_config_file_names_key_and_file(self):
        config = os.path.join(self.work, "bad.json")
        with open(config, "w") as f:
            json.dump({"endpoint": self.server.endpoint, "metadata_tl": "60"}, f)
        fstab = self.fstab("bucket", "config=%s" % config)
        r = self.mount("-T", fstab, self.mnt)
        self.assertNotEqual(r.returncode, 0)
        out = r.stderr + r.stdout
        self.assertIn('"metadata_tl"', out)
        self.assertIn(config, out)


if __name__ == "__main__":
    reexec_in_private_mount_namespace()
    harness.main()
