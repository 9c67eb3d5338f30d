"""Shared pieces of the mount tests: the object servers, the daemon, mounts.

Every test starts its own servers on free loopback ports and mounts under a fresh temporary
directory, with an unconditional unmount in cleanup, so a failing test never leaves a mount
behind. Paths to the binaries come from the environment ctest sets (see CMakeLists.txt).
"""
import contextlib
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

OSSMOUNT = os.environ.get("OSSMOUNT_BIN", "ossmount")
TESTSERVER = os.environ.get("TESTSERVER_BIN", "ossmount-testserver")
CLIENT = os.environ.get("CLIENT_BIN", "ossmount-client")
S3RVER_JS = os.environ.get("S3RVER_JS", "")
DATA_DIR = os.environ.get("TESTDATA_DIR", "")
SOURCE_DIR = os.environ.get("SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(__file__))))

AK = "test-access-key-id"
SK = "test-access-key-secret-0123456789"
REGION = "cn-test-1"


# Exit status ctest reads as "skipped" (SKIP_RETURN_CODE in tests/mount/CMakeLists.txt).
SKIP_EXIT = 77

# Every temporary file and directory of a test script (data trees, mount points, logs,
# caches: whatever goes through `tempfile`) lands in this one directory. main() removes it
# when the script passes and keeps it, naming it, when it fails, so that repeated runs do not
# pile up in /tmp (a soak run alone writes 200 MB) and a failure keeps its logs. A script
# that re-executes itself (test_fstab, in a private mount namespace) keeps the same one.
RUN_DIR = os.environ.get("OSSMOUNT_TEST_RUN_DIR") or \
    os.path.realpath(tempfile.mkdtemp(prefix="ossmount-test-"))
os.environ["OSSMOUNT_TEST_RUN_DIR"] = RUN_DIR
tempfile.tempdir = RUN_DIR


def remove_run_dir():
    """Removes RUN_DIR after unmounting anything still mounted in it; keeps it (False) when a
    mount refuses to go, so that nothing is deleted through a mount."""
    inside = RUN_DIR + os.sep
    for mnt in mounts_under(inside):
        force_unmount(mnt)
    if mounts_under(inside):
        return False
    shutil.rmtree(RUN_DIR, ignore_errors=True)
    return True


def mounts_under(prefix):
    return [p for p in mount_points() if p.startswith(prefix)]


def main():
    """unittest.main for the test scripts: a run in which no test failed but some were skipped
    (no root, no /dev/fuse, ...) lists them and exits SKIP_EXIT, so ctest reports the test as
    skipped instead of passed. RUN_DIR goes when the run passed or skipped."""
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        print("temporary files of this run kept in %s" % RUN_DIR)
        sys.exit(1)
    if not remove_run_dir():
        print("%s kept: a mount inside it did not go" % RUN_DIR)
    if result.skipped:
        for test, why in result.skipped:
            print("SKIPPED %s: %s" % (test.id(), why))
        sys.exit(SKIP_EXIT)
    sys.exit(0)


def check_waiting_notes(test, stderr, endpoint, what, bucket="bucket"):
    """Asserts that `stderr`, of a background start that waited for a slow endpoint, holds
    the start's waiting notes and nothing else: at least one line "ossmount: waiting for
    bucket 'B' at endpoint E to answer WHAT: N s so far, at most 150 s", N at least 5 (the
    first note) and 150 s the default retry budget (120 s) plus the check's 30 s. `what` is
    a regular expression."""
    note = re.compile(r"ossmount: waiting for bucket '%s' at endpoint %s to answer %s: (\d+) s "
                      r"so far, at most (\d+) s$" % (re.escape(bucket), re.escape(endpoint), what))
    lines = stderr.splitlines()
    test.assertGreaterEqual(len(lines), 1, stderr)
    for line in lines:
        m = note.match(line)
        test.assertTrue(m, "unexpected line %r in %r" % (line, stderr))
        test.assertGreaterEqual(int(m.group(1)), 5, line)
        test.assertEqual(int(m.group(2)), 150, line)


def wait_for(predicate, timeout, what, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))


def read_text(path):
    """The whole file as text (undecodable bytes replaced), closed again at once."""
    with open(path, errors="replace") as f:
        return f.read()


def mount_points():
    """Every mount point this process sees (the fifth field of /proc/self/mountinfo)."""
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f]


def is_mounted(path):
    return os.path.realpath(path) in mount_points()


def force_unmount(path):
    if is_mounted(path):
        subprocess.run(["fusermount3", "-u", "-z", path], stderr=subprocess.DEVNULL)
    if is_mounted(path):
        subprocess.run(["umount", "-l", path], stderr=subprocess.DEVNULL)


class TestServer:
    """The project's own OSS/S3 server (ossmount-testserver) over a directory of buckets."""

    def __init__(self, root, bucket="bucket", args=(), auth=True, port=0, secret=SK):
        self.root = root
        self.bucket = bucket
        cmd = [TESTSERVER, "--root", root, "--bucket", bucket, "--port", str(port),
               "--region", REGION]
        if auth:
            cmd += ["--access-key-id", AK, "--access-key-secret", secret]
        else:
            cmd += ["--auth", "off"]
        cmd += list(args)
        self.log = tempfile.NamedTemporaryFile(prefix="testserver-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            self.proc.kill()
            raise AssertionError("test server did not start: %r; log %s" % (line, self.log.name))
        self.port = int(line.strip().rsplit(":", 1)[1])
        self.endpoint = "http://127.0.0.1:%d" % self.port

    def stats(self):
        with urllib.request.urlopen(self.endpoint + "/_ossmount/stats", timeout=10) as r:
            return json.loads(r.read())

    def reset_stats(self):
        req = urllib.request.Request(self.endpoint + "/_ossmount/reset", method="POST")
        urllib.request.urlopen(req, timeout=10).read()

    def stop(self):
        stop_process(self.proc)
        self.proc.stdout.close()
        self.log.close()  # the file stays (delete=False) for a failing test's reader

    def client_args(self):
        return ["--endpoint", self.endpoint, "--bucket", self.bucket, "--region", REGION,
                "--path-style"]

    def env(self):
        e = dict(os.environ)
        e["OSS_ACCESS_KEY_ID"] = AK
        e["OSS_ACCESS_KEY_SECRET"] = SK
        return e


def stop_process(proc, timeout=10):
    """SIGTERM, then SIGKILL if `proc` has not exited within `timeout` s; waits for it."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class S3rver:
    """s3rver, the third-party S3 server (npm), on a free port with its own directory."""

    KEY = "S3RVER"

    def __init__(self, bucket="bucket"):
        if not S3RVER_JS or not os.path.exists(S3RVER_JS):
            raise AssertionError("s3rver is not installed (run scripts/install-deps.sh)")
        self.dir = tempfile.mkdtemp(prefix="s3rver-")
        self.bucket = bucket
        self.port = free_port()
        self.log = open(os.path.join(self.dir, "s3rver.log"), "w")
        self.proc = subprocess.Popen(
            ["node", "--openssl-legacy-provider", S3RVER_JS, "--directory", self.dir + "/data",
             "--address", "127.0.0.1", "--port", str(self.port), "--no-vhost-buckets", "--silent",
             "--configure-bucket", bucket],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.endpoint = "http://127.0.0.1:%d" % self.port
        import socket

        def up():
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.2):
                return True
            return False
        wait_for(up, 30, "s3rver to listen")

    def client_args(self):
        return ["--endpoint", self.endpoint, "--bucket", self.bucket, "--region", "us-east-1",
                "--protocol", "s3", "--path-style"]

    def env(self):
        e = dict(os.environ)
        e["AWS_ACCESS_KEY_ID"] = self.KEY
        e["AWS_SECRET_ACCESS_KEY"] = self.KEY
        for k in ("OSS_ACCESS_KEY_ID", "OSS_ACCESS_KEY_SECRET"):
            e.pop(k, None)
        return e

    def stop(self):
        stop_process(self.proc)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class S3MountCase(unittest.TestCase):
    """One s3rver for the class's tests; each test mounts under a prefix of its own
    (self.prefix), so that tests never see each other's objects."""

    @classmethod
    def setUpClass(cls):
        cls.server = S3rver(bucket="bucket")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def setUp(self):
        self.prefix = "t%d/" % (int(time.time() * 1000) % 10**9)

    def mount(self, *args):
        m = Mount(self.server, args=list(args), bucket_spec="bucket:/" + self.prefix)
        self.addCleanup(m.close)
        return m


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client(server, *args, check=True, input_bytes=None):
    """Runs ossmount-client against a server; returns the CompletedProcess."""
    cmd = [CLIENT] + server.client_args() + list(args)
    r = subprocess.run(cmd, env=server.env(), capture_output=True, input=input_bytes, timeout=600)
    if check and r.returncode != 0:
        raise AssertionError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr.decode()))
    return r


def mount_command(server, mountpoint, args=(), bucket_spec=None, foreground=True):
    """The ossmount command line that mounts `server`'s bucket (or `bucket_spec`) on
    `mountpoint`, in the foreground (-f) unless told otherwise, with `args` last."""
    # client_args()[4:] drops --endpoint/--bucket and keeps region/protocol/path-style.
    return [OSSMOUNT, bucket_spec or server.bucket, mountpoint] + server.client_args()[4:] + \
        ["--endpoint", server.endpoint] + (["-f"] if foreground else []) + list(args)


class NotifyListener:
    """A datagram socket for the systemd notify protocol (what NOTIFY_SOCKET names)."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)

    def receive(self, timeout):
        """The next notification's text, or None when none came within `timeout` s. A
        descriptor attached is closed: one held here would keep a FUSE connection alive."""
        message = self.receive_with_fds(timeout)
        if message is None:
            return None
        for fd in message[1]:
            os.close(fd)
        return message[0]

    def receive_with_fds(self, timeout):
        """The next notification's text and the descriptors attached to it (FDSTORE=1), or
        None when none came within `timeout` s. The caller closes the descriptors."""
        self.sock.settimeout(timeout)
        try:
            data, fds, _, _ = socket.recv_fds(self.sock, 4096, 4)
        except socket.timeout:
            return None
        return data.decode(), fds

    def close(self):
        self.sock.close()


class Mount:
    """ossmount in the foreground (-f) as a child process, mounted on a fresh directory.

    Returns once the daemon reported itself started (READY=1 on NOTIFY_SOCKET, as systemd
    and the background parent see it: the mount answers and its control socket listens),
    not merely once the kernel shows the mount. A caller that sets NOTIFY_SOCKET itself
    gets the latter."""

    def __init__(self, server, args=(), bucket_spec=None, env=None, mountpoint=None,
                 prefix=()):
        """`prefix`: a command the daemon's command line is handed to (a wrapper)."""
        self.mountpoint = mountpoint or tempfile.mkdtemp(prefix="ossmount-mnt-")
        self.cmd = list(prefix) + mount_command(server, self.mountpoint, args, bucket_spec)
        self.log = tempfile.NamedTemporaryFile(prefix="ossmount-", suffix=".log", delete=False)
        env = dict(env or server.env())
        self.notify_dir = None
        self.notify = None
        if "NOTIFY_SOCKET" not in env:
            self.notify_dir = tempfile.mkdtemp(prefix="ossmount-notify-")
            self.notify = NotifyListener(self.notify_dir)
            env["NOTIFY_SOCKET"] = self.notify.path
        self.proc = subprocess.Popen(self.cmd, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: self._started() or self.proc.poll() is not None, 60, "the mount")
        except AssertionError:
            self.close()
            raise
        if self.proc.poll() is not None:
            self.close()  # removes the unused mount point
            raise AssertionError("ossmount exited %s before mounting: %s" %
                                 (self.proc.returncode, self.output()))

    def _started(self):
        if self.notify is None:
            return is_mounted(self.mountpoint)
        message = self.notify.receive(0.05)
        return message is not None and "READY=1" in message.split("\n")

    def output(self):
        return read_text(self.log.name)

    def daemon_pid(self, timeout=30):
        """The pid of the process serving the mount: the supervisor's child (supervised, the
        default), or the process started (--no-supervise). Waits up to `timeout` s for a child
        the supervisor is starting."""
        return serving_pid(self.proc.pid, timeout)

    def path(self, *parts):
        return os.path.join(self.mountpoint, *parts)

    def unmount(self, timeout=30):
        """fusermount3 -u, then wait for the daemon; returns its exit code."""
        subprocess.run(["fusermount3", "-u", self.mountpoint], check=False)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("ossmount did not exit within %ss of unmount" % timeout)

    def close(self):
        force_unmount(self.mountpoint)
        stop_process(self.proc)
        if self.notify is not None:
            self.notify.close()
            shutil.rmtree(self.notify_dir, ignore_errors=True)
            self.notify = None
        self.log.close()  # output() reads the file by name, so it still works after close()
        with contextlib.suppress(OSError):
            os.rmdir(self.mountpoint)


def child_pids(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def serving_pid(pid, timeout=30):
    """The daemon proper behind ossmount process `pid`: its one child when `pid` supervises
    (it was started without --no-supervise on a mount point path), else `pid`."""
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        argv = f.read().split(b"\0")
    if b"--no-supervise" in argv or any(a.startswith(b"/dev/fd/") for a in argv):
        return pid
    deadline = time.monotonic() + timeout
    while True:
        children = child_pids(pid)
        if len(children) == 1:
            return children[0]
        if time.monotonic() > deadline:
            raise AssertionError("ossmount %d has %d children, expected its daemon" %
                                 (pid, len(children)))
        time.sleep(0.02)


def stats_json(mountpoint, check=True):
    """`ossmount stats MOUNTPOINT --json` (the control socket): the CompletedProcess."""
    r = subprocess.run([OSSMOUNT, "stats", mountpoint, "--json"], capture_output=True,
                       text=True, timeout=60)
    if check and r.returncode != 0:
        raise AssertionError("ossmount stats failed (%d): %s" % (r.returncode, r.stderr))
    return r


def metric(doc, kind, name, **labels):
    """A counter's or gauge's value from the stats JSON (0 when absent)."""
    for m in doc["metrics"][kind]:
        if m["name"] == name and m["labels"] == labels:
            return m["value"]
    return 0


def mount_metric(mountpoint, kind, name, **labels):
    """A counter's or gauge's value now, asked of the mount's control socket."""
    return metric(json.loads(stats_json(mountpoint).stdout), kind, name, **labels)


class ImageCacheTestCase(unittest.TestCase):
    """A generated ImageFolder tree served by the bundled server (one per class), and a fresh
    directory per test with `self.cache` inside it (not created). Subclasses set DATASET
    to (name, classes, per_class, seed)."""
    DATASET = None

    @classmethod
    def setUpClass(cls):
        name, classes, per_class, seed = cls.DATASET
        cls.src = ensure_dataset("imagefolder", name, "--classes", str(classes),
                                 "--per-class", str(per_class), "--seed", str(seed))
        cls.manifest = read_manifest(cls.src)
        cls.server = TestServer(os.path.dirname(cls.src), bucket=name)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ossmount-%s-test-" % self.DATASET[0])
        self.cache = os.path.join(self.tmp, "cache")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def block_files(self):
        """The disk cache's block files, as sorted paths "3f/3fa9...e1.blk" relative to
        self.cache (each lives in the subdirectory of its name's first two hex digits)."""
        return cache_block_files(self.cache)


def cache_block_files(cache):
    if not os.path.isdir(cache):
        return []
    found = []
    for sub in sorted(os.listdir(cache)):
        if os.path.isdir(os.path.join(cache, sub)):
            found += [sub + "/" + n for n in os.listdir(os.path.join(cache, sub))
                      if n.endswith(".blk")]
    return sorted(found)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def read_manifest(root):
    out = {}
    with open(os.path.join(root, "MANIFEST.tsv")) as f:
        for line in f:
            rel, size, digest = line.rstrip("\n").split("\t")
            out[rel] = (int(size), digest)
    return out


def ensure_dataset(kind, name, *args):
    """Generates a dataset once per build tree (scripts/gen_dataset.py) and returns its path."""
    root = os.path.join(DATA_DIR, name)
    if not os.path.exists(os.path.join(root, "MANIFEST.tsv")):
        tmp = root + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(["/usr/bin/python3", os.path.join(SOURCE_DIR, "scripts", "gen_dataset.py"),
                        kind, tmp] + list(args), check=True)
        shutil.rmtree(root, ignore_errors=True)
        os.rename(tmp, root)
    return root
