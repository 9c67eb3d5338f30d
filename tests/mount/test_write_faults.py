"""Write faults through a real mount: a save that close() reports as done is in the bucket byte
for byte, and one it reports as failed left nothing under its key.

docs/ARCHITECTURE.md "The write path"; tests/server/README.md "Write faults". Every file is
written with random bytes (hashed as they are written) and checked on the server's own disk
(ROOT/BUCKET/KEY), in the mount's view and in the daemon's log:
- A fault run (OSS): 20 files of 0 B to 300 MiB (about 620 MiB, 1 MiB parts, 4 writer
  threads) while the server answers 10% of the write requests with 503, resets 2% mid-body,
  cuts 1% short (400 IncompleteBody) and loses 1% of the Complete answers (--seed fixed). The
  daemon retries up to 10 times, which absorbs every one of these faults (see the fault run
  tests for the odds), so every close must return 0; still, every close is checked for the
  truth (success: exact; failure: nothing at the key), the server must have injected faults,
  and after unmount no multipart upload is left open.
- The same run in the S3 dialect of the same server (SigV4, Content-MD5, the multipart ETag
  checked after a lost Complete): 5 files up to 40 MiB, 5 MiB parts.
- Every Complete's answer lost (--lost-complete-rate 1 on one prefix), both dialects: the
  retried Complete gets NoSuchUpload, the daemon HEADs the key and close() returns 0.
- The server unreachable at close (killed: connections refused; SIGSTOPped: connections
  accepted and never answered), --retry-budget 5s: close() fails with EIO or ETIMEDOUT and
  returns (a hang guard of 4x the budget, not a speed threshold), the log says "saving 'NAME'
  failed", nothing is at the key, and once the server is back on the same port the same
  daemon writes a new file. Every upload it left open is aborted by the next mount with the
  same --upload-journal.
- One file failing (--write-fault-prefix NAME --write-error-rate 1) while five others are
  written at the same time: its close fails with EIO, the others are exact. And a failing
  file closed by another thread than the one that opened it (one process): close() fails too.
- Staged files under the same faults (new files whose header is patched after the body, objects
  changed in the middle, objects appended to with "ab"): a close that returns 0 left exactly
  the new bytes, any other left the old object; and staged files whose every upload fails
  close with EIO and keep the old object, while the others are exact.
"""
import concurrent.futures
import errno
import hashlib
import json
import os
import random
import re
import signal
import tempfile
import threading
import time
import urllib.request

import harness
from test_writes import MiB, WriteMountCase

KiB = 1 << 10

# The write faults of the fault runs (tests/server/README.md "Write faults"). The server draws
# request N's faults from (--seed, N), so the faults of a run are the same every time; which
# request gets which still depends on the order in which the writers' requests arrive. Seed 5
# puts 503s, resets and a cut-short body within the first 30 requests (the small S3 run sends
# about 25 write requests) and about the nominal rates over the OSS run's ~700: 88 errors, 20
# resets, 5 cut-short bodies per 800 requests.
WRITE_FAULTS = ["--write-error-rate", "0.10", "--write-reset-rate", "0.02",
                "--write-truncate-rate", "0.01", "--lost-complete-rate", "0.01",
                "--seed", "5"]

# 20 sizes from 0 B to 300 MiB, about 620 MiB in all: empty, single-PUT sizes, the 1 MiB part
# boundary on both sides, and multipart files up to 300 parts.
OSS_SIZES = [0, 1, 100 * KiB, MiB - 1, MiB, MiB + 1, 2 * MiB, 3 * MiB + 12345, 5 * MiB,
             8 * MiB - 1, 8 * MiB + 1, 10 * MiB, 16 * MiB, 20 * MiB + 7, 24 * MiB, 32 * MiB,
             40 * MiB + 3, 48 * MiB, 64 * MiB, 300 * MiB]
S3_SIZES = [0, 100 * KiB + 3, 5 * MiB + 1, 17 * MiB + 5, 40 * MiB]

WRITE_FAULT_COUNTERS = ("write_error", "body_reset", "body_truncate", "lost_complete")


def write_file(path, size, chunk):
    """Creates `path` and writes `size` random bytes in writes of `chunk` bytes, then closes
    it. Returns (sha256 of the bytes, the OSError of a write or None, that of close or None)."""
    h = hashlib.sha256()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    write_error = None
    try:
        left = size
        while left:
            block = os.urandom(min(chunk, left))
            view = memoryview(block)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            h.update(block)
            left -= len(block)
    except OSError as e:
        write_error = e
    close_error = None
    try:
        os.close(fd)
    except OSError as e:
        close_error = e
    return h.hexdigest(), write_error, close_error


def s3_env():
    """The environment of an S3-mode mount of the bundled server (same key pair, SigV4)."""
    e = dict(os.environ)
    for k in ("OSS_ACCESS_KEY_ID", "OSS_ACCESS_KEY_SECRET", "OSS_SESSION_TOKEN"):
        e.pop(k, None)
    e["AWS_ACCESS_KEY_ID"] = harness.AK
    e["AWS_SECRET_ACCESS_KEY"] = harness.SK
    return e


class WriteFaultCase(WriteMountCase):
    """WriteMountCase whose server starts with SERVER_ARGS (and can be replaced)."""
    SERVER_ARGS = ()

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="write-faults-data-")
        self.bucket_dir = os.path.join(self.root, "bucket")
        os.makedirs(self.bucket_dir)
        self.server = self.start_server(self.SERVER_ARGS)
        self.mounts = []

    def start_server(self, args=(), port=0):
        server = harness.TestServer(self.root, bucket="bucket", args=list(args), port=port)
        self.addCleanup(server.stop)
        return server

    def mount_with(self, *args, protocol="oss", journal=None):
        a = ["--metadata-ttl", "indefinite", "--allow-writes",
             "--upload-journal", journal or tempfile.mkdtemp(prefix="upload-journal-")]
        env = None
        if protocol == "s3":
            a += ["--protocol", "s3"]
            env = s3_env()
        m = harness.Mount(self.server, args=a + list(args), env=env)
        self.addCleanup(m.close)
        self.mounts.append(m)
        return m

    def open_uploads(self, server=None):
        with urllib.request.urlopen((server or self.server).endpoint + "/_ossmount/uploads",
                                    timeout=10) as r:
            return json.loads(r.read())

    def write_all(self, mnt, files, threads=4, guard=600):
        """Writes {name: size} through `mnt` with `threads` writers, largest first; returns
        {name: (sha256, write error, close error)}."""
        order = sorted(files, key=lambda n: -files[n])
        pool = concurrent.futures.ThreadPoolExecutor(threads)
        try:
            futures = {n: pool.submit(write_file, mnt.path(n), files[n],
                                      MiB if i % 2 == 0 else 333333)
                       for i, n in enumerate(order)}
            # A hang guard only: ~620 MiB take seconds here.
            _, pending = concurrent.futures.wait(futures.values(), timeout=guard)
            self.assertEqual(len(pending), 0, "writers still busy after %d s" % guard)
            return {n: f.result() for n, f in futures.items()}
        finally:
            pool.shutdown(wait=False)

    def check_outcomes(self, mnt, files, results, errnos=None):
        """The close() of every file told the truth: when it returned 0, the server's object
        and the mount's size are exact and the log has no failure for it; when it failed,
        nothing is at the key or in the mount, the log says "saving 'NAME' failed" and (when
        `errnos` is given) the errno is one of them. Returns (failed names, problems), every
        problem found rather than the first."""
        log = mnt.output()
        failed, problems = [], []
        for name, size in sorted(files.items(), key=lambda kv: kv[1]):
            digest, write_error, close_error = results[name]
            what = "%s (%d B)" % (name, size)
            saving_failed = "saving '%s' failed" % name in log
            on_server = self.on_server(name)
            if write_error is not None and close_error is None:
                # The sticky error: once a write failed, the close reports it too.
                problems.append("%s: write failed (%s), close returned 0" % (what, write_error))
            if close_error is None:
                if not os.path.exists(on_server):
                    problems.append("%s: close returned 0, no object at the key" % what)
                elif harness.sha256_file(on_server) != digest:
                    problems.append("%s: close returned 0, the object (%d B) differs" %
                                    (what, os.path.getsize(on_server)))
                if not os.path.exists(mnt.path(name)) or os.stat(mnt.path(name)).st_size != size:
                    problems.append("%s: close returned 0, the mount shows no file of its size"
                                    % what)
                if saving_failed:
                    problems.append("%s: close returned 0, the log says saving failed" % what)
            else:
                failed.append(name)
                if os.path.exists(on_server):
                    exact = harness.sha256_file(on_server) == digest
                    problems.append("%s: close failed (%s), yet %s object is at its key" %
                                    (what, close_error, "the complete, byte-exact" if exact
                                     else "an object of %d B" % os.path.getsize(on_server)))
                if os.path.exists(mnt.path(name)):
                    problems.append("%s: close failed, the mount shows the file" % what)
                if not saving_failed:
                    problems.append("%s: close failed, no \"saving '%s' failed\" in the log" %
                                    (what, name))
                if errnos is not None and close_error.errno not in errnos:
                    problems.append("%s: close failed with %s, not %s" %
                                    (what, close_error, "/".join(errno.errorcode[e]
                                                                 for e in errnos)))
        return failed, problems

    def assert_no_problems(self, problems, mnt):
        self.assertEqual(problems, [], "\n".join(["%d problem(s):" % len(problems)] + problems +
                                                 ["daemon log:"] +
                                                 saving_failed_lines(mnt.output())))

    def assert_no_open_uploads(self, server=None):
        stats = (server or self.server).stats()
        self.assertEqual(stats["open_multipart_uploads"], 0,
                         "left open: %s" % self.open_uploads(server))


def saving_failed_lines(log):
    return [l for l in log.splitlines() if "saving '" in l and "' failed" in l]


def settle_line(log, name):
    """The daemon's line saying what a failed close's unanswered Complete left, or None."""
    for line in log.splitlines():
        if ("'%s': the upload is aborted" % name in line or
                "'%s': the server applied" % name in line or
                "could not abort the failed upload of '%s'" % name in line):
            return line
    return None


class FaultRunTest(WriteFaultCase):
    SERVER_ARGS = WRITE_FAULTS

    def fault_run(self, sizes, part_size, protocol, min_ok):
        mnt = self.mount_with("--upload-part-size", part_size, "--retries", "10",
                              protocol=protocol)
        files = {"f%02d-%d.bin" % (i, size): size for i, size in enumerate(sizes)}
        results = self.write_all(mnt, files)
        failed, problems = self.check_outcomes(mnt, files, results)
        stats = self.server.stats()
        faults = {k: stats["faults"].get(k, 0) for k in WRITE_FAULT_COUNTERS}
        print("\n%s: %d of %d closes returned 0 (failed: %s); server faults %s; requests: "
              "PUT %d, INITIATE %d, UPLOAD_PART %d, COMPLETE %d, ABORT %d, HEAD %d" %
              (protocol, len(files) - len(failed), len(files),
               ["%s: %s" % (n, results[n][2]) for n in failed], faults, stats["PUT"],
               stats["INITIATE_MULTIPART"], stats["UPLOAD_PART"], stats["COMPLETE_MULTIPART"],
               stats["ABORT_MULTIPART"], stats["HEAD"]))
        if len(files) - len(failed) < min_ok:
            problems.append("only %d of %d closes returned 0 (%d expected: retries absorb "
                            "these faults)" % (len(files) - len(failed), len(files), min_ok))
        if faults["write_error"] == 0 or sum(faults.values()) == faults["write_error"]:
            problems.append("the server did not inject both errors and body faults: %s" % faults)
        code = mnt.unmount()
        if code != 0:
            problems.append("ossmount exited %s" % code)
        retries = re.search(r"retries: \d+ .*gave up \d+", mnt.output())
        print("  daemon: " + (retries.group(0) if retries else "no retry counters"))
        open_uploads = self.open_uploads()
        if open_uploads["open"]:
            problems.append("multipart uploads left open after unmount: %s" % open_uploads)
        self.assert_no_problems(problems, mnt)

    # Every fault here is one a retry absorbs: a 503, a reset or a cut-short body was not
    # executed, and a lost Complete answer is settled by a HEAD, which these faults never
    # touch. At a ~13% fault rate per write request, 11 attempts (--retries 10) all fail for
    # about one request in 10^9, so over the ~720 requests of the OSS run every close returns
    # 0 but once in ~10^6 runs. Fewer than all of them is a fault the daemon does not absorb,
    # not bad luck.
    def test_oss_fault_run_every_close_tells_the_truth(self):
        self.fault_run(OSS_SIZES, "1MiB", "oss", min_ok=len(OSS_SIZES))

    def test_s3_fault_run_every_close_tells_the_truth(self):
        self.fault_run(S3_SIZES, "5MiB", "s3", min_ok=len(S3_SIZES))


class LostCompleteTest(WriteFaultCase):
    # Every Complete of a key under "lost/" succeeds on the server and its answer is lost.
    SERVER_ARGS = ["--lost-complete-rate", "1", "--write-fault-prefix", "lost/", "--seed", "3"]

    def check(self, protocol, part_size, size):
        mnt = self.mount_with("--upload-part-size", part_size, protocol=protocol)
        os.mkdir(mnt.path("lost"))
        files = {"lost/a.bin": size, "lost/b.bin": size + 12345, "lost/small.bin": 1000,
                 "kept.bin": size}
        results = self.write_all(mnt, files, threads=2, guard=300)
        failed, problems = self.check_outcomes(mnt, files, results)
        self.assert_no_problems(problems, mnt)
        self.assertEqual(failed, [])
        stats = self.server.stats()
        # Two multipart files under the prefix (small.bin goes up with one PUT): two lost
        # answers, each settled by a HEAD.
        self.assertEqual(stats["faults"]["lost_complete"], 2)
        self.assertGreaterEqual(stats["HEAD"], 2)
        self.assertEqual(mnt.unmount(), 0)
        self.assert_no_open_uploads()

    def test_oss_lost_complete_answers(self):
        self.check("oss", "1MiB", 3 * MiB + 5)

    def test_s3_lost_complete_answers(self):
        self.check("s3", "5MiB", 11 * MiB + 5)


class UnreachableTest(WriteFaultCase):
    BUDGET = 5  # seconds of --retry-budget

    def write_then_close(self, mnt, name, parts, between):
        """In one thread (the opener's: a close from another thread is another FUSE caller):
        opens `name`, writes parts + 1/2 parts of 1 MiB, waits while the main thread runs
        `between` (once the server holds the whole parts), then closes. Returns (close's
        OSError or None, seconds close took, the SHA-256 of the bytes written); (None, None,
        digest) when the thread had not finished within 4x the retry budget of `between`'s
        end (a hang guard, not a speed threshold)."""
        written, go, out = threading.Event(), threading.Event(), {}
        data = os.urandom(parts * MiB + MiB // 2)

        def run():
            fd = os.open(mnt.path(name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, data)
            finally:
                written.set()
                go.wait(120)
                t0 = time.monotonic()
                try:
                    os.close(fd)
                    out["error"] = None
                except OSError as e:
                    out["error"] = e
                out["took"] = time.monotonic() - t0
        t = threading.Thread(target=run, daemon=True)
        t.start()
        try:
            self.assertTrue(written.wait(60), "writing %s did not return" % name)
            harness.wait_for(
                lambda: [u["parts"] for u in self.open_uploads()["uploads"]] == [parts],
                60, "%d parts stored on the server" % parts)
            between()
        finally:
            go.set()
        t.join(4 * self.BUDGET)
        digest = hashlib.sha256(data).hexdigest()
        if t.is_alive():
            return None, None, digest
        return out["error"], out["took"], digest

    def check_unreachable(self, make_unreachable, bring_back, same_server, extra=()):
        journal = tempfile.mkdtemp(prefix="upload-journal-")
        # Retries enough that the budget, not their number, ends them.
        mnt = self.mount_with("--upload-part-size", "1MiB", "--retries", "100",
                              "--retry-budget", "%ds" % self.BUDGET, *extra, journal=journal)
        # The daemon works before the fault.
        digest, _, err = write_file(mnt.path("before.bin"), 2 * MiB + 3, MiB)
        self.assertIsNone(err)
        try:
            error, took, lost_digest = self.write_then_close(mnt, "lost.bin", 3,
                                                             make_unreachable)
            self.assertIsNotNone(took, "close() did not return within %d s (4x the retry "
                                 "budget)\n%s" % (4 * self.BUDGET, mnt.output()[-3000:]))
        finally:
            bring_back()
        print("\nclose() failed after %.1f s: %s" % (took, error))
        self.assertIsNotNone(error, "close() returned 0 with the server unreachable")
        self.assertIn(error.errno, (errno.EIO, errno.ETIMEDOUT), error)
        self.assertIsNone(mnt.proc.poll(), "the daemon exited")
        log = mnt.output()
        self.assertIn("saving 'lost.bin' failed", log)
        self.assertRegex(log, r"saving 'lost.bin' failed: .*the retry budget of %d ms is spent"
                         % (self.BUDGET * 1000))
        print("  daemon: " + "\n  daemon: ".join(saving_failed_lines(log)))
        applied = False
        if "failed: timeout: CompleteMultipartUpload" in log or \
                "failed: network: CompleteMultipartUpload" in log:
            # The close failed on its Complete, which the server may have received (it was
            # stopped with the request in its socket): the error says so, and the abort that
            # follows settles it (or, when the abort fails too, the next mount's). Either way
            # the key holds nothing or exactly the bytes written, and this mount shows what
            # the bucket holds.
            self.assertRegex(log, r"saving 'lost.bin' failed: .*may still apply it")
            harness.wait_for(lambda: settle_line(mnt.output(), "lost.bin"), 3 * self.BUDGET,
                             "the abort of lost.bin to settle its outcome")
            settled = settle_line(mnt.output(), "lost.bin")
            print("  daemon: " + settled)
            applied = "the server applied" in settled
            if applied:
                self.assertEqual(harness.sha256_file(self.on_server("lost.bin")), lost_digest)
            elif "nothing was written" in settled:
                self.assertFalse(os.path.exists(self.on_server("lost.bin")))
            elif os.path.exists(self.on_server("lost.bin")):
                self.assertEqual(harness.sha256_file(self.on_server("lost.bin")), lost_digest)
        else:
            # A part failed: no Complete was sent, so nothing can appear at the key.
            self.assertIn("nothing was written under its key", log)
            self.assertFalse(os.path.exists(self.on_server("lost.bin")))
        lost = ["lost.bin"] if applied else []
        # Same daemon, server back on the same port: it serves and saves again.
        self.assertEqual(os.path.exists(mnt.path("lost.bin")), applied)
        self.assertEqual(sorted(os.listdir(mnt.mountpoint)), sorted(["before.bin"] + lost))
        digest2, _, err = write_file(mnt.path("after.bin"), 3 * MiB + 7, MiB)
        self.assertIsNone(err, mnt.output()[-3000:])
        self.assertEqual(harness.sha256_file(self.on_server("after.bin")), digest2)
        self.assertEqual(harness.sha256_file(self.on_server("before.bin")), digest)
        with open(mnt.path("after.bin"), "rb") as f:
            self.assertEqual(hashlib.sha256(f.read()).hexdigest(), digest2)
        if same_server:
            # (A restarted server gives before.bin another ETag, which the mount, trusting
            # its metadata indefinitely, reads as a replaced object: ESTALE, as documented.)
            with open(mnt.path("before.bin"), "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), digest)
        if not os.path.exists(self.on_server("lost.bin")):
            self.assertFalse(applied)
        else:
            self.assertEqual(harness.sha256_file(self.on_server("lost.bin")), lost_digest)
        self.assertEqual(sorted(os.listdir(mnt.mountpoint)),
                         sorted(["after.bin", "before.bin"] + lost))
        self.assertEqual(mnt.unmount(), 0, mnt.output()[-3000:])
        left = self.open_uploads()
        print("  uploads open on the server after unmount: %s" % left)
        # Whatever the failed save could not abort, the next mount with its journal does.
        again = self.mount_with(journal=journal)
        self.assertEqual(again.unmount(), 0)
        self.assert_no_open_uploads()
        if os.path.exists(self.on_server("lost.bin")):
            self.assertEqual(harness.sha256_file(self.on_server("lost.bin")), lost_digest)

    def test_server_killed_connections_refused(self):
        # A killed server refuses connections at once; its open uploads were in its memory
        # only, so they go with it. It comes back on the same port over the same root.
        port = self.server.port

        def kill():
            self.server.proc.kill()
            self.server.proc.wait(10)

        def restart():
            self.server = self.start_server(port=port)
        self.check_unreachable(kill, restart, same_server=False)

    def test_server_stopped_connections_hang(self):
        # A stopped server's kernel still accepts connections and buffers requests; nothing
        # answers. The stall deadline ends each attempt, the retry budget the retries.
        def stop():
            os.kill(self.server.proc.pid, signal.SIGSTOP)

        def resume():
            os.kill(self.server.proc.pid, signal.SIGCONT)
        self.addCleanup(lambda: self.server.proc.poll() is None and
                        os.kill(self.server.proc.pid, signal.SIGCONT))
        self.check_unreachable(stop, resume, same_server=True, extra=("--stall-timeout", "2s"))


class UnansweredCompleteTest(WriteFaultCase):
    """The server never answers CompleteMultipartUpload (--unanswered-complete): it applied it
    or not, and the daemon cannot tell from the connection. The close fails, saying the
    server may still apply it; the abort that follows, then a HEAD of the key, settle which,
    and the log and this mount's view say so."""

    def check(self, mode):
        urllib.request.urlopen(urllib.request.Request(
            self.server.endpoint + "/_ossmount/faults?unanswered-complete=" + mode,
            method="POST"), timeout=10).read()
        mnt = self.mount_with("--upload-part-size", "1MiB", "--retries", "3",
                              "--retry-budget", "5s", "--stall-timeout", "2s")
        digest, write_error, close_error = write_file(mnt.path("ckpt.pt"), 3 * MiB + 5, MiB)
        self.assertIsNone(write_error)
        self.assertIsNotNone(close_error, "close() returned 0 though no Complete was answered")
        self.assertIn(close_error.errno, (errno.EIO, errno.ETIMEDOUT), close_error)
        log = mnt.output()
        self.assertRegex(log, r"saving 'ckpt.pt' failed: timeout: CompleteMultipartUpload .*"
                              r"may still apply it: a later line says whether it did")
        harness.wait_for(lambda: settle_line(mnt.output(), "ckpt.pt"), 30,
                         "the abort of ckpt.pt to settle its outcome")
        settled = settle_line(mnt.output(), "ckpt.pt")
        print("\n  daemon: " + settled)
        self.assertGreaterEqual(self.server.stats()["faults"]["unanswered_complete"], 1)
        if mode == "applied":
            self.assertIn("the server applied the CompleteMultipartUpload", settled)
            self.assertEqual(harness.sha256_file(self.on_server("ckpt.pt")), digest)
            # This mount shows what the bucket holds, and reads it back.
            self.assertEqual(os.listdir(mnt.mountpoint), ["ckpt.pt"])
            self.assertEqual(os.stat(mnt.path("ckpt.pt")).st_size, 3 * MiB + 5)
            self.assertEqual(harness.sha256_file(mnt.path("ckpt.pt")), digest)
        else:
            self.assertIn("nothing was written under its key", settled)
            self.assertFalse(os.path.exists(self.on_server("ckpt.pt")))
            self.assertEqual(os.listdir(mnt.mountpoint), [])
            self.assertFalse(os.path.exists(mnt.path("ckpt.pt")))
        self.assert_no_open_uploads()
        self.assertEqual(mnt.unmount(), 0, mnt.output()[-3000:])

    def test_a_complete_applied_but_never_answered(self):
        self.check("applied")

    def test_a_complete_never_applied_nor_answered(self):
        self.check("ignored")


class OneFileFailsTest(WriteFaultCase):
    # Every write request for a key that starts with "doomed" gets a 503.
    SERVER_ARGS = ["--write-fault-prefix", "doomed", "--write-error-rate", "1", "--seed", "5"]

    def test_one_failing_file_does_not_affect_the_others(self):
        mnt = self.mount_with("--upload-part-size", "1MiB")
        files = {"doomed.bin": 6 * MiB + 3, "good-0.bin": 0, "good-1.bin": 4 * KiB + 1,
                 "good-2.bin": MiB + 1, "good-3.bin": 6 * MiB + 3, "good-4.bin": 12 * MiB}
        results = self.write_all(mnt, files, threads=len(files), guard=300)
        failed, problems = self.check_outcomes(mnt, files, results,
                                               errnos=(errno.EIO, errno.ETIMEDOUT))
        self.assert_no_problems(problems, mnt)
        self.assertEqual(failed, ["doomed.bin"])
        print("\ndoomed.bin: %s" % results["doomed.bin"][2])
        stats = self.server.stats()
        self.assertGreater(stats["faults"]["write_error"], 0)
        self.assertEqual(stats["faults"]["write_error"], stats["status"].get("503", 0))
        self.assertEqual(saving_failed_lines(mnt.output()),
                         [l for l in saving_failed_lines(mnt.output()) if "'doomed.bin'" in l])
        self.assertEqual(mnt.unmount(), 0)
        self.assert_no_open_uploads()


    def test_a_close_in_another_thread_of_the_opener_reports_the_failure(self):
        # Threads of one process are one process: a program that opens a file in one thread
        # and closes it in another (an executor, a writer pool) must get the save's failure
        # from close() too. FUSE names the calling thread (its TID) as the caller of a flush.
        mnt = self.mount_with("--upload-part-size", "1MiB")
        for name, size in (("doomed-small.bin", 1000), ("doomed-parts.bin", 3 * MiB + 1)):
            fd = os.open(mnt.path(name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, os.urandom(size))
            out = {}

            def close():
                try:
                    os.close(fd)
                    out["error"] = None
                except OSError as e:
                    out["error"] = e
            t = threading.Thread(target=close)
            t.start()
            t.join(120)  # a hang guard
            self.assertFalse(t.is_alive(), "close() of %s did not return" % name)
            harness.wait_for(lambda: "saving '%s' failed" % name in mnt.output(), 60,
                             "the daemon to give up on %s" % name)
            self.assertFalse(os.path.exists(self.on_server(name)))
            self.assertIsNotNone(out["error"], "%s: close() in another thread of the opener "
                                 "returned 0, but the save failed:\n%s" %
                                 (name, "\n".join(saving_failed_lines(mnt.output()))))
            self.assertIn(out["error"].errno, (errno.EIO, errno.ETIMEDOUT), out["error"])
        self.assertEqual(mnt.unmount(), 0)
        self.assert_no_open_uploads()


def staged_case(kind, size, seed):
    """(old object or None, the function that changes it through a descriptor, the bytes the
    file must hold after a close that returned 0) for one staged pattern of `size` bytes."""
    rng = random.Random(seed)
    body = rng.randbytes(size)
    patch = rng.randbytes(min(4 * KiB, size))
    if kind == "new-patched":  # written in order, then its header patched: HDF5, zipfile
        def change(path):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                for off in range(0, size, MiB):
                    os.write(fd, body[off:off + MiB])
                os.pwrite(fd, patch, 0)
            finally:
                os.close(fd)
        return None, change, patch + body[len(patch):]
    if kind == "middle":  # dd conv=notrunc into an existing object
        at = size // 2

        def change(path):
            fd = os.open(path, os.O_WRONLY)
            try:
                os.pwrite(fd, patch, at)
            finally:
                os.close(fd)
        return body, change, body[:at] + patch + body[at + len(patch):]
    # "appended": open(path, "ab") onto an existing object that is not appendable
    def change(path):
        with open(path, "ab") as f:
            f.write(patch)
    return body, change, body + patch


class StagedFaultRunTest(WriteFaultCase):
    """The fault run over staged files: new files whose header is patched after the body
    streamed (the file moves to its local copy), existing objects changed in the middle (their
    bytes loaded first) and existing objects appended to with "ab", under the same write
    faults. Every close that returns 0 left exactly the new bytes; every other left the old
    object (or none); nothing partial; no upload left open; nothing left in staging."""
    SERVER_ARGS = WRITE_FAULTS
    SIZES = [1, 100 * KiB, MiB + 1, 3 * MiB + 7, 8 * MiB, 20 * MiB + 3, 48 * MiB]
    KINDS = ("new-patched", "middle", "appended")

    def run_cases(self, mnt, cases):
        def one(name):
            old, change, new = cases[name]
            try:
                change(mnt.path(name))
                return None
            except OSError as e:
                return e
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            futures = {n: pool.submit(one, n) for n in cases}
            done, pending = concurrent.futures.wait(futures.values(), timeout=600)
            self.assertEqual(len(pending), 0, "writers still busy after 600 s (a hang guard)")
            return {n: f.result() for n, f in futures.items()}

    def check_truth(self, mnt, cases, errors):
        problems = []
        log = mnt.output()
        for name, (old, _, new) in sorted(cases.items()):
            on_server = self.on_server(name)
            have = None
            if os.path.exists(on_server):
                with open(on_server, "rb") as f:
                    have = f.read()
            if errors[name] is None:
                if have != new:
                    problems.append("%s: close returned 0, the object is %s" %
                                    (name, "absent" if have is None else
                                     "%d B, not the %d B written" % (len(have), len(new))))
            else:
                if have != old:
                    problems.append("%s: failed (%s), and the object is not the old one (%s)" %
                                    (name, errors[name], "absent" if have is None
                                     else "%d B" % len(have)))
                if "saving '%s' failed" % name not in log:
                    problems.append("%s: failed, no \"saving '%s' failed\" in the log" %
                                    (name, name))
        return problems

    def prepare(self, prefix=""):
        cases = {}
        for i, size in enumerate(self.SIZES):
            for j, kind in enumerate(self.KINDS):
                name = "%s%s-%d.bin" % (prefix, kind, size)
                cases[name] = staged_case(kind, size, seed=100 * i + j)
                if cases[name][0] is not None:
                    with open(self.on_server(name), "wb") as f:
                        f.write(cases[name][0])
        self.server_rescan()
        return cases

    def test_staged_files_under_write_faults_every_close_tells_the_truth(self):
        cases = self.prepare()
        staging = tempfile.mkdtemp(prefix="staging-")
        mnt = self.mount_with("--upload-part-size", "1MiB", "--retries", "10",
                              "--staging-dir", staging)
        errors = self.run_cases(mnt, cases)
        problems = self.check_truth(mnt, cases, errors)
        # Retries absorb these faults (FaultRunTest says why): every close returns 0.
        failed = [n for n, e in errors.items() if e is not None]
        if failed:
            problems.append("closes failed: %s" % ["%s: %s" % (n, errors[n]) for n in failed])
        stats = self.server.stats()
        faults = {k: stats["faults"].get(k, 0) for k in WRITE_FAULT_COUNTERS}
        print("\nstaged: %d files, server faults %s; PUT %d, UPLOAD_PART %d, ABORT %d, GET %d" %
              (len(cases), faults, stats["PUT"], stats["UPLOAD_PART"],
               stats["ABORT_MULTIPART"], stats["GET"]))
        if faults["write_error"] == 0:
            problems.append("the server injected no write errors: %s" % faults)
        if mnt.unmount() != 0:
            problems.append("ossmount did not exit 0")
        if self.open_uploads()["open"]:
            problems.append("multipart uploads left open: %s" % self.open_uploads())
        if os.listdir(staging):
            problems.append("files left in the staging directory: %s" % os.listdir(staging))
        self.assert_no_problems(problems, mnt)


class StagedFileFailsTest(WriteFaultCase):
    # Every write request for a key that starts with "doomed" gets a 503: those staged files
    # fail, the others are exact.
    SERVER_ARGS = ["--write-fault-prefix", "doomed", "--write-error-rate", "1", "--seed", "5"]
    SIZES = [100 * KiB, 3 * MiB + 7]
    KINDS = StagedFaultRunTest.KINDS
    run_cases = StagedFaultRunTest.run_cases
    check_truth = StagedFaultRunTest.check_truth
    prepare = StagedFaultRunTest.prepare

    def test_a_staged_file_that_cannot_be_saved_fails_its_close_and_keeps_the_old_object(self):
        cases = self.prepare("doomed-")
        cases.update(self.prepare("fine-"))
        mnt = self.mount_with("--upload-part-size", "1MiB", "--retry-budget", "5s")
        errors = self.run_cases(mnt, cases)
        problems = self.check_truth(mnt, cases, errors)
        for name, error in errors.items():
            if name.startswith("doomed-") and error is None:
                problems.append("%s: every upload request failed, yet its close returned 0" % name)
            if name.startswith("fine-") and error is not None:
                problems.append("%s: failed (%s)" % (name, error))
            if error is not None and error.errno not in (errno.EIO, errno.ETIMEDOUT):
                problems.append("%s: failed with %s, not EIO or ETIMEDOUT" % (name, error))
        self.assertEqual(mnt.unmount(), 0)
        self.assert_no_problems(problems, mnt)
        self.assert_no_open_uploads()


if __name__ == "__main__":
    harness.main()
