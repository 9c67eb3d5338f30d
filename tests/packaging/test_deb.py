"""The Debian package: `cpack -G DEB` from the build tree, its contents and control fields;
then, as root in CI (CI=true), `dpkg -i`, a mount from a temporary fstab through the installed
files (mount(8) -> /sbin/mount.fuse -> /usr/bin/ossmount), the installed hints module imported
by /usr/bin/python3 and asking that mount for its statistics, `systemd-analyze verify` of the
installed unit, and `dpkg -P` so the machine is left as it was (the module's bytecode too).

docs/CONFIGURATION.md "Installing".
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mount"))
import harness  # noqa: E402

BUILD_DIR = os.environ.get("BUILD_DIR", "")
PYTHON_DIR = "/usr/lib/python3/dist-packages"


def run(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 600)
    return subprocess.run(cmd, **kw)


class DebTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not BUILD_DIR or not os.path.exists(os.path.join(BUILD_DIR, "CPackConfig.cmake")):
            raise AssertionError("BUILD_DIR with CPackConfig.cmake is not set")
        cls.out = tempfile.mkdtemp(prefix="ossmount-deb-")
        r = run(["cpack", "--config", os.path.join(BUILD_DIR, "CPackConfig.cmake"), "-G", "DEB",
                 "-B", cls.out])
        if r.returncode != 0:
            raise AssertionError("cpack failed: %s %s" % (r.stdout, r.stderr))
        debs = [f for f in os.listdir(cls.out) if f.endswith(".deb")]
        if len(debs) != 1:
            raise AssertionError("expected one .deb in %s: %s" % (cls.out, os.listdir(cls.out)))
        cls.deb = os.path.join(cls.out, debs[0])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out, ignore_errors=True)

    def field(self, name):
        r = run(["dpkg-deb", "-f", self.deb, name])
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.strip()

    def member(self, path):
        r = subprocess.run("dpkg-deb --fsys-tarfile '%s' | tar -xOf - '.%s'" % (self.deb, path),
                           shell=True, capture_output=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_contents(self):
        r = run(["dpkg-deb", "-c", self.deb])
        self.assertEqual(r.returncode, 0, r.stderr)
        paths = {line.split()[-1].lstrip(".") for line in r.stdout.splitlines()}
        for p in ("/usr/bin/ossmount", "/usr/lib/systemd/system/ossmount@.service",
                  "/etc/ossmount/config.example.json", "/usr/share/doc/ossmount/README.md",
                  PYTHON_DIR + "/ossmount_hints.py",
                  "/usr/share/doc/ossmount/examples/train_imagefolder.py"):
            self.assertIn(p, paths)
        self.assertEqual(self.member(PYTHON_DIR + "/ossmount_hints.py"),
                         open(os.path.join(harness.SOURCE_DIR, "python", "ossmount_hints.py"),
                              "rb").read())
        # Nothing but the daemon among the programs (no test server, no unit tests).
        programs = [p for p in paths if "/bin/" in p and not p.endswith("/")]
        self.assertEqual(programs, ["/usr/bin/ossmount"])
        unit = self.member("/usr/lib/systemd/system/ossmount@.service").decode()
        self.assertIn("ExecStart=/usr/bin/ossmount --config /etc/ossmount/%i.json", unit)
        self.assertNotIn("@OSSMOUNT", unit)
        self.assertEqual(self.member("/etc/ossmount/config.example.json"),
                         open(os.path.join(harness.SOURCE_DIR, "systemd",
                                           "config.example.json"), "rb").read())

    def test_control_fields(self):
        self.assertEqual(self.field("Package"), "ossmount")
        depends = self.field("Depends")
        # The libraries the binary links (from dpkg-shlibdeps) and the FUSE mount helper.
        for dep in ("libfuse3-3", "libcurl4", "libssl3", "libstdc++6", "libc6", "fuse3"):
            self.assertIn(dep, depends)

    def test_install_mount_remove(self):
        if os.geteuid() != 0 or os.environ.get("CI") != "true":
            self.skipTest("installs a package: only as root with CI=true")
        if run(["dpkg-query", "-W", "-f=${Status}", "ossmount"]).stdout.startswith("install ok"):
            self.skipTest("an ossmount package is already installed; not touching it")
        r = run(["dpkg", "-i", self.deb])
        try:
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertTrue(os.access("/usr/bin/ossmount", os.X_OK))
            r = run(["systemd-analyze", "verify", "/usr/lib/systemd/system/ossmount@.service"])
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.mount_from_fstab()
        finally:
            r = run(["dpkg", "-P", "ossmount"])
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertFalse(os.path.exists("/usr/bin/ossmount"))
        self.assertFalse(os.path.exists("/etc/ossmount/config.example.json"))
        self.assertFalse(os.path.exists("/usr/lib/systemd/system/ossmount@.service"))
        self.assertFalse(os.path.exists(PYTHON_DIR + "/ossmount_hints.py"))
        cache = os.path.join(PYTHON_DIR, "__pycache__")
        left = [f for f in os.listdir(cache)] if os.path.isdir(cache) else []
        self.assertEqual([f for f in left if f.startswith("ossmount_hints.")], [])

    def mount_from_fstab(self):
        root = tempfile.mkdtemp(prefix="deb-data-")
        work = tempfile.mkdtemp(prefix="deb-work-")
        mnt = tempfile.mkdtemp(prefix="ossmount-deb-")
        os.makedirs(os.path.join(root, "bucket", "train"))
        data = os.urandom(30000)
        with open(os.path.join(root, "bucket", "train", "a.jpg"), "wb") as f:
            f.write(data)
        server = harness.TestServer(root, bucket="bucket")
        try:
            passwd = os.path.join(work, "passwd")
            with open(passwd, "w") as f:
                f.write("%s:%s\n" % (harness.AK, harness.SK))
            os.chmod(passwd, 0o600)
            fstab = os.path.join(work, "fstab")
            with open(fstab, "w") as f:
                f.write("bucket %s fuse.ossmount _netdev,nofail,allow_other,endpoint=%s,region=%s,"
                        "path_style,metadata_ttl=indefinite,passwd_file=%s 0 0\n"
                        % (mnt, server.endpoint, harness.REGION, passwd))
            # The plain system PATH: the installed /usr/bin/ossmount, not the build tree's.
            env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}
            r = run(["mount", "-a", "-T", fstab], env=env)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertTrue(harness.is_mounted(mnt))
            with open(os.path.join(mnt, "train", "a.jpg"), "rb") as f:
                self.assertEqual(f.read(), data)
            exes = set()
            for pid in run(["pgrep", "-f", mnt]).stdout.split():
                try:
                    exes.add(os.readlink("/proc/%s/exe" % pid))
                except OSError:
                    pass
            self.assertIn("/usr/bin/ossmount", exes)  # the installed daemon serves it
            # The installed module, found by Debian's python3 on its own path (not the
            # source tree: run from /, no PYTHONPATH), reaches that daemon through the mount.
            r = run(["/usr/bin/python3", "-c",
                     "import json, sys, ossmount_hints as h\n"
                     "print(h.__file__)\n"
                     "print(json.dumps(h._call(sys.argv[1], {'command': 'stats'})['ok']))",
                     mnt], env=env, cwd="/")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(r.stdout.split(), [PYTHON_DIR + "/ossmount_hints.py", "true"])
            r = run(["umount", mnt])
            self.assertEqual(r.returncode, 0, r.stderr)
        finally:
            harness.force_unmount(mnt)
            server.stop()
            os.rmdir(mnt)
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    harness.main()
