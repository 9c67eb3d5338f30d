"""Control requests through the mount itself (include/ossmount/control_ioctl.h): ioctls on a
directory of the mount carry what `ossmount stats`, `ossmount warmup` and
python/ossmount_hints.py ask the daemon, where its control socket cannot be reached.

- Container-like: the control socket is gone and the mount is seen only through a bind
  mount of its directory train. `ossmount stats BIND --json` answers (the daemon's own pid
  and mount point); `ossmount warmup BIND/CLASS` fetches exactly that class's files (one GET
  each; reading them afterwards costs none); send_hints of another class's files through
  BIND (named relative to BIND: the daemon takes them from the directory the request came
  through), from a second thread, is taken, listed under this process's pid (not the
  thread's), and reading them costs exactly one GET per file, every byte right. Paths that
  would leave the bind mount ('..', absolute) are refused.
- Another user (uid 65534) with --allow-other, who cannot reach the socket: stats answers,
  hints are taken and listed under that process's pid, warmup-cancel is refused as the
  owner's command; root's `ossmount warmup --cancel` works.
- ENOTTY: the control ioctls on a regular file of the mount and on a directory outside any
  ossmount mount fail with ENOTTY (and isatty() is False on a mount's file); a client whose
  ioctl gets ENOTTY falls back to the control socket, and one whose ioctl fails otherwise
  reports the error without trying the socket.
- Senders the daemon cannot see (the daemon in a pid namespace of its own, so the FUSE
  requests carry pid 0): two processes' hint lists are both followed, told apart by the
  names their clients give (host:pid).
- A hint list over one request's limit goes in pieces (the first replaces the list, the
  others extend it, in order): one list of every file, one GET per file.
- A request over 64 MiB is refused with EFBIG at the chunk that crosses the limit, its bytes
  dropped (three refused requests held open at once never hit the all-handles bound), and
  the daemon answers a normal request afterwards.
"""
import errno
import fcntl
import json
import os
import random
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import unittest
from unittest import mock

import harness

sys.path.insert(0, os.path.join(harness.SOURCE_DIR, "python"))
import ossmount_hints  # noqa: E402

NOBODY = 65534

# The other user's process: argv = directory of ossmount_hints.py, mount point, the root's
# control socket, then the files to hint. Prints one JSON line of what it saw, then stays
# alive until its stdin closes, so that the test sees its hint list while it runs.
OTHER_USER_SCRIPT = r"""
import json, os, socket, sys
sys.path.insert(0, sys.argv[1])
import ossmount_hints
mount, root_socket, paths = sys.argv[2], sys.argv[3], sys.argv[4:]
out = {"pid": os.getpid(), "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups()}
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(root_socket)
    out["socket"] = "connected"
except OSError as e:
    out["socket"] = e.errno
finally:
    s.close()
out["stats"] = ossmount_hints._call(mount, {"command": "stats"})
out["sent"] = ossmount_hints.send_hints(paths, mount)
try:
    ossmount_hints._call(mount, {"command": "warmup-cancel"})
    out["cancel"] = None
except RuntimeError as e:
    out["cancel"] = str(e)
print(json.dumps(out), flush=True)
sys.stdin.read()
"""


# A rank: argv = directory of ossmount_hints.py, mount point, its files. Sends them as its
# hint list, prints how many the daemon took, and stays alive until its stdin closes.
SENDER_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import ossmount_hints
print(ossmount_hints.send_hints(sys.argv[3:], sys.argv[2]), flush=True)
sys.stdin.read()
"""


def warmup(*args, timeout=300):
    return subprocess.run([harness.OSSMOUNT, "warmup"] + list(args), capture_output=True,
                          text=True, timeout=timeout)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def chunk_of(data):
    """A ControlChunk (control_ioctl.h) carrying `data`."""
    chunk = bytearray(ossmount_hints._CHUNK_SIZE)
    struct.pack_into("=II", chunk, 0, len(data), 0)
    chunk[8:8 + len(data)] = data
    return chunk


class ControlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.src = harness.ensure_dataset("imagefolder", "control-images", "--classes", "3",
                                         "--per-class", "10", "--seed", "17")
        cls.manifest = harness.read_manifest(cls.src)
        cls.classes = sorted({os.path.dirname(rel) for rel in cls.manifest})
        assert len(cls.classes) == 3 and all(c.startswith("train/") for c in cls.classes)
        cls.server = harness.TestServer(os.path.dirname(cls.src), bucket="control-images",
                                        args=["--ttfb-ms", "10"])

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def mount(self, *extra):
        m = harness.Mount(self.server, args=["--metadata-ttl", "indefinite"] + list(extra))
        self.addCleanup(m.close)
        return m

    def files_of(self, cls):
        return sorted(rel for rel in self.manifest if os.path.dirname(rel) == cls)

    def gets(self):
        return self.server.stats().get("GET", 0)

    def senders_list(self, directory):
        status = ossmount_hints._call(directory, {"command": "warmup-status"})
        return status["hints"]["senders"]

    def senders(self, directory):
        return {s["pid"]: s for s in self.senders_list(directory)}

    # -- 1 ------------------------------------------------------------------------------------
    def test_container_like_bind_mount_without_the_socket(self):
        # A container given MOUNT/train as a volume: no /run/ossmount, the mount's root
        # out of sight. Everything goes through ioctls on the bind mount's directories.
        m = self.mount()
        sock = ossmount_hints.socket_path_for_mountpoint(m.mountpoint)
        self.assertTrue(os.path.exists(sock), sock)  # created at mount start
        os.unlink(sock)
        bind = tempfile.mkdtemp(prefix="ossmount-bind-")
        subprocess.run(["mount", "--bind", m.path("train"), bind], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", bind], check=False)
        self.assertEqual(ossmount_hints.find_mount(os.path.join(bind, "x")), bind)

        # a. stats, answered by this very daemon.
        r = harness.stats_json(bind)
        doc = json.loads(r.stdout)
        self.assertIs(doc["ok"], True, r.stdout)
        self.assertEqual(doc["mountpoint"], m.mountpoint, r.stdout)
        self.assertEqual(doc["pid"], m.daemon_pid(), r.stdout)

        # b. warm-up of one class: one GET per file of it, none for the others.
        warmed_class, hinted_class, _ = self.classes
        warmed = self.files_of(warmed_class)
        self.server.reset_stats()
        r = warmup(os.path.join(bind, os.path.relpath(warmed_class, "train")))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("%d file(s) fetched" % len(warmed), r.stderr)
        self.assertEqual(self.gets(), len(warmed))
        for rel in warmed:  # the GETs were these files': reading them costs none
            got = read_bytes(os.path.join(bind, os.path.relpath(rel, "train")))
            self.assertEqual(got, read_bytes(os.path.join(self.src, rel)), rel)
        self.assertEqual(self.gets(), len(warmed))

        # c. hints through the bind mount, sent from a thread other than the main one (as a
        # framework's loader thread may): listed under this process's pid, not the thread's.
        hinted = self.files_of(hinted_class)
        random.Random(7).shuffle(hinted)
        self.server.reset_stats()
        result = {}

        def send():
            result["tid"] = threading.get_native_id()
            result["sent"] = ossmount_hints.send_hints(
                [os.path.join(bind, os.path.relpath(rel, "train")) for rel in hinted])

        sender = threading.Thread(target=send)
        sender.start()
        sender.join()
        self.assertNotEqual(result["tid"], os.getpid())
        self.assertEqual(result["sent"], len(hinted))
        harness.wait_for(lambda: os.getpid() in self.senders(bind), 30,
                         "the hint list of pid %d" % os.getpid())
        mine = self.senders(bind)[os.getpid()]
        self.assertEqual(mine["files"], len(hinted), mine)
        for rel in hinted:
            got = read_bytes(os.path.join(bind, os.path.relpath(rel, "train")))
            self.assertEqual(got, read_bytes(os.path.join(self.src, rel)), rel)
        self.assertEqual(self.gets(), len(hinted))
        # The list was followed to its end (releases reach the daemon after close()).
        harness.wait_for(lambda: self.senders(bind)[os.getpid()]["read"] == len(hinted), 30,
                         "the daemon to count the hinted reads")

        # d. Paths are taken from the directory the request came through and cannot leave
        # it: the classes beside train are out of reach of this view.
        for escape in ("../val", "/train", "a/../../x"):
            with self.assertRaises(RuntimeError) as refused:
                ossmount_hints._call(bind, {"command": "warmup", "paths": [escape]})
            self.assertRegex(str(refused.exception), "contains '..'|is absolute", escape)
        self.assertFalse(os.path.exists(sock))

    # -- 2 ------------------------------------------------------------------------------------
    def test_another_user_with_allow_other(self):
        if os.geteuid() != 0:
            self.skipTest("running a process as another user needs root")
        if shutil.which("setpriv") is None:
            self.skipTest("setpriv (util-linux) is not installed")
        # RUN_DIR (a 0700 mkdtemp) holds the mount point: uid 65534 must traverse it.
        os.chmod(harness.RUN_DIR, 0o711)
        self.addCleanup(os.chmod, harness.RUN_DIR, 0o700)
        m = self.mount("--allow-other")
        # ossmount_hints.py where uid 65534 surely reads it.
        pydir = tempfile.mkdtemp(prefix="ossmount-python-")
        os.chmod(pydir, 0o755)
        shutil.copy(os.path.join(harness.SOURCE_DIR, "python", "ossmount_hints.py"), pydir)
        os.chmod(os.path.join(pydir, "ossmount_hints.py"), 0o644)
        hinted = self.files_of(self.classes[2])
        root_socket = ossmount_hints.socket_path_for_mountpoint(m.mountpoint)
        self.assertTrue(os.path.exists(root_socket), root_socket)

        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        child = subprocess.Popen(
            ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups",
             "/usr/bin/python3", "-c", OTHER_USER_SCRIPT, pydir, m.mountpoint, root_socket] +
            [m.path(rel) for rel in hinted],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd="/", env=env)

        def stop_child():
            if child.poll() is None:
                child.kill()
                child.communicate()
        self.addCleanup(stop_child)
        ready, _, _ = select.select([child.stdout], [], [], 120)
        self.assertTrue(ready, "the other user's process said nothing within 120 s")
        line = child.stdout.readline()
        if not line:
            child.wait(30)
            self.fail("the other user's process failed (%s): %s"
                      % (child.returncode, child.stderr.read()))
        out = json.loads(line)
        self.assertEqual((out["uid"], out["gid"], out["groups"]), (NOBODY, NOBODY, []), out)
        self.assertEqual(out["pid"], child.pid, out)  # setpriv execs python
        # The socket is out of its reach: what it got came through the mount.
        self.assertEqual(out["socket"], errno.EACCES, out)
        self.assertIs(out["stats"]["ok"], True, out)
        self.assertEqual(out["stats"]["pid"], m.daemon_pid(), out)
        self.assertEqual(out["sent"], len(hinted), out)
        self.assertIsNotNone(out["cancel"], "warmup-cancel was accepted from uid %d" % NOBODY)
        self.assertIn("command 'warmup-cancel' is for the mount's owner (uid 0) and root "
                      "only; this request came from uid %d" % NOBODY, out["cancel"])

        # The daemon keeps the list under the child's pid (it is still running).
        harness.wait_for(lambda: child.pid in self.senders(m.mountpoint), 30,
                         "the hint list of pid %d" % child.pid)
        theirs = self.senders(m.mountpoint)[child.pid]
        self.assertEqual(theirs["files"], len(hinted), theirs)
        self.assertIsNone(child.poll(), "the other user's process exited early")
        _, err = child.communicate("", timeout=60)
        self.assertEqual(child.returncode, 0, err)

        # The owner may cancel.
        r = warmup("--cancel", m.mountpoint, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("cancelled 0 warm-up(s) on %s" % m.mountpoint, r.stdout)

    # -- 3 ------------------------------------------------------------------------------------
    def test_enotty_on_files_and_outside_the_mount_and_the_socket_fallback(self):
        m = self.mount()
        rel = self.files_of(self.classes[0])[0]
        fd = os.open(m.path(rel), os.O_RDONLY)
        try:
            for command in (ossmount_hints._CONTROL_SEND, ossmount_hints._CONTROL_RECEIVE):
                with self.assertRaises(OSError) as e:
                    fcntl.ioctl(fd, command, bytearray(ossmount_hints._CHUNK_SIZE), True)
                self.assertEqual(e.exception.errno, errno.ENOTTY, hex(command))
        finally:
            os.close(fd)
        with open(m.path(rel), "rb") as f:
            self.assertFalse(f.isatty())

        plain = tempfile.mkdtemp(prefix="ossmount-plain-")
        fd = os.open(plain, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with self.assertRaises(OSError) as e:
                fcntl.ioctl(fd, ossmount_hints._CONTROL_SEND, chunk_of(b"{}\n"), True)
            self.assertEqual(e.exception.errno, errno.ENOTTY)
        finally:
            os.close(fd)
            os.rmdir(plain)

        # A daemon without the channel answers ENOTTY: the client asks the socket instead.
        sock = ossmount_hints.socket_path_for_mountpoint(m.mountpoint)
        self.assertTrue(os.path.exists(sock), sock)
        tried = []

        def no_channel(directory, data):
            tried.append(directory)
            raise OSError(errno.ENOTTY, os.strerror(errno.ENOTTY))
        with mock.patch.object(ossmount_hints, "_call_through_mount", no_channel), \
                mock.patch.object(ossmount_hints, "_call_socket",
                                  wraps=ossmount_hints._call_socket) as over_socket:
            reply = ossmount_hints._call(m.mountpoint, {"command": "stats"})
        self.assertEqual(tried, [m.mountpoint])
        self.assertEqual(over_socket.call_count, 1)
        self.assertIs(reply["ok"], True, reply)
        self.assertEqual(reply["pid"], m.daemon_pid(), reply)
        self.assertEqual(reply["mountpoint"], m.mountpoint, reply)

        # Any other failure is reported as it is; the socket is not tried.
        def broken(directory, data):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        with mock.patch.object(ossmount_hints, "_call_through_mount", broken), \
                mock.patch.object(ossmount_hints, "_call_socket") as over_socket:
            with self.assertRaisesRegex(RuntimeError, os.strerror(errno.EIO)):
                ossmount_hints._call(m.mountpoint, {"command": "stats"})
        self.assertEqual(over_socket.call_count, 0)

    # -- 5 ------------------------------------------------------------------------------------
    def test_senders_the_daemon_cannot_see_are_told_apart_by_name(self):
        # The daemon in a pid namespace of its own (as in a container of its own): the FUSE
        # requests of this test's processes carry pid 0. Two ranks' hint lists must both be
        # followed, told apart by the names their clients give.
        if os.geteuid() != 0 or shutil.which("unshare") is None:
            self.skipTest("a pid namespace for the daemon needs root and unshare")
        command = harness.mount_command

        def in_own_pid_namespace(*a, **kw):
            return ["unshare", "--pid", "--fork", "--kill-child=SIGTERM"] + command(*a, **kw)
        with mock.patch.object(harness, "mount_command", in_own_pid_namespace):
            m = self.mount()
        ranks = []
        for cls in self.classes[:2]:
            rank = subprocess.Popen(
                ["/usr/bin/python3", "-c", SENDER_SCRIPT,
                 os.path.join(harness.SOURCE_DIR, "python"), m.mountpoint] +
                [m.path(rel) for rel in self.files_of(cls)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            self.addCleanup(rank.kill)
            self.assertEqual(rank.stdout.readline().strip(), str(len(self.files_of(cls))))
            ranks.append(rank)
        names = {"%s:%d" % (socket.gethostname(), r.pid) for r in ranks}
        harness.wait_for(lambda: len(self.senders_list(m.mountpoint)) == 2, 30,
                         "two hint lists")
        lists = self.senders_list(m.mountpoint)
        self.assertEqual([l["pid"] for l in lists], [0, 0], lists)
        self.assertEqual({l["name"] for l in lists}, names, lists)
        self.assertEqual(sorted(l["files"] for l in lists),
                         sorted(len(self.files_of(c)) for c in self.classes[:2]))
        shown = warmup("--status", m.mountpoint, timeout=60)
        self.assertEqual(shown.returncode, 0, shown.stderr)
        for name in names:
            self.assertIn("from '%s': " % name, shown.stdout)
        for rank in ranks:
            rank.communicate("", timeout=60)
            self.assertEqual(rank.returncode, 0)

    # -- 6 ------------------------------------------------------------------------------------
    def test_a_list_over_one_request_arrives_in_pieces(self):
        # A list too long for one request (64 MiB: about 1.6 million ImageNet paths) goes in
        # pieces that extend it; here the pieces are made small to have several.
        m = self.mount()
        order = sorted(self.manifest)
        random.Random(11).shuffle(order)
        calls = []
        real_call = ossmount_hints._call

        def counting(directory, request):
            calls.append(bool(request.get("append")))
            return real_call(directory, request)
        self.server.reset_stats()
        with mock.patch.object(ossmount_hints, "_REQUEST_PATH_BYTES", 300), \
                mock.patch.object(ossmount_hints, "_call", counting):
            taken = ossmount_hints.send_hints([m.path(rel) for rel in order])
        self.assertEqual(taken, len(order))
        self.assertGreater(len(calls), 3)
        self.assertEqual(calls, [False] + [True] * (len(calls) - 1))
        harness.wait_for(lambda: os.getpid() in self.senders(m.mountpoint) and
                         self.senders(m.mountpoint)[os.getpid()]["files"] == len(order), 30,
                         "one list of every piece")
        self.assertEqual(len(self.senders_list(m.mountpoint)), 1)
        for rel in order:
            self.assertEqual(read_bytes(m.path(rel)), read_bytes(os.path.join(self.src, rel)))
        self.assertEqual(self.gets(), len(order))
        harness.wait_for(
            lambda: self.senders(m.mountpoint)[os.getpid()]["read"] == len(order), 30,
            "the daemon to count every read of the list")

    # -- 4 ------------------------------------------------------------------------------------
    def test_request_over_64_mib_is_refused_with_efbig(self):
        m = self.mount()
        limit = 64 << 20
        data = ossmount_hints._CHUNK_DATA
        self.assertNotEqual(limit % data, 0)
        crossing = limit // data  # 0-based: the chunk that takes the request past the limit
        full = chunk_of(b"x" * data)
        # Three refused requests held open at once: if the refused bytes were kept, the
        # third would meet the 128 MiB bound of all handles (ENOBUFS) before 64 MiB.
        handles = []
        try:
            for attempt in range(3):
                fd = os.open(m.path("train"), os.O_RDONLY | os.O_DIRECTORY)
                handles.append(fd)
                failed_at, error = None, None
                for i in range(crossing + 1):
                    try:
                        self.assertEqual(fcntl.ioctl(fd, ossmount_hints._CONTROL_SEND, full,
                                                     True), 0)
                    except OSError as e:
                        failed_at, error = i, e.errno
                        break
                self.assertEqual((failed_at, error), (crossing, errno.EFBIG),
                                 "attempt %d: %s" % (attempt, errno.errorcode.get(error)))
                # The request stays refused: more of it, or asking for its answer, is EFBIG.
                with self.assertRaises(OSError) as e:
                    fcntl.ioctl(fd, ossmount_hints._CONTROL_SEND, chunk_of(b"}\n"), True)
                self.assertEqual(e.exception.errno, errno.EFBIG)
                with self.assertRaises(OSError) as e:
                    fcntl.ioctl(fd, ossmount_hints._CONTROL_RECEIVE,
                                bytearray(ossmount_hints._CHUNK_SIZE), True)
                self.assertEqual(e.exception.errno, errno.EFBIG)
        finally:
            for fd in handles:
                os.close(fd)
        # A normal request on a new handle is answered.
        raw = ossmount_hints._call_through_mount(m.path("train"), b'{"command":"stats"}\n')
        reply = json.loads(raw)
        self.assertIs(reply["ok"], True, raw[:200])
        self.assertEqual(reply["pid"], m.daemon_pid())
        self.assertEqual(json.loads(harness.stats_json(m.mountpoint).stdout)["pid"], m.daemon_pid())
        self.assertIsNone(m.proc.poll(), m.output())


if __name__ == "__main__":
    harness.main()
