#!/usr/bin/python3
"""Checkpoint save and load through ossmount and its writable peers, side by side.

  bench/checkpoints.py [--size-mib N] [--small-files N] [--conditions paced,unpaced]
                       [--peers ossmount-rw,rclone-writes,s3fs-rw] [--build DIR]
                       [--ossmount-args "OPTIONS"]

Against one ossmount-testserver (auth off), under two conditions: "paced" (35 ms to first
byte and 400 Mbit/s per connection, for uploads and downloads: the real service caps one
connection far below a node's bandwidth) and "unpaced" (loopback, nothing injected).

For each mount (ossmount --allow-writes, rclone mount --vfs-cache-mode writes, s3fs):
  - save: `dd bs=1M` of a torch.save file of N MiB, and torch.save of the same tensors from a
    Python process; timed until the object is complete in the bucket (rclone uploads after
    close, so its close is not the end), checked byte for byte against the source;
  - load: on a fresh mount, `dd` to /dev/null, and torch.load timed by itself (the tensors
    are compared afterwards, untimed);
  - small files: 1,000 files of 100 KB written by 16 threads, files/s until all are in the
    bucket.
Ceilings in the same run: curl PUT and GET of the file in one stream, curl GETs of 8 MiB
ranges, 8 at a time (ossmount's per-file read concurrency), and the file's bytes as 8 objects
PUT by 8 curls at once (what the server can take from 8 upload streams); and torch.save to and
torch.load from a local file in the page cache (what the two cores allow torch itself).
Daemon peak RSS (VmHWM) is read before each unmount. Results: bench/results/
checkpoints-<timestamp>.json and .md.
"""
import argparse
import concurrent.futures
import datetime
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ossbench.digest import sha256_file  # noqa: E402
from ossbench.mounts import PEER_OPTIONS, Mount  # noqa: E402
from ossbench.server import TestServer  # noqa: E402

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
PYTHON = "/usr/bin/python3"
BUCKET = "ckpt"
PART = 8 << 20
RANGE_CONCURRENCY = 8
PACED = {"ttfb": 35, "mbps": 400}

SAVE_SCRIPT = r"""
import sys, time, torch
mib, path, seed = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
g = torch.Generator().manual_seed(seed)
n = mib * (1 << 20) // 4 // (1 << 20)
state = {"layer%03d" % i: torch.randn(1 << 20, generator=g) for i in range(n)}
t = time.monotonic()
torch.save(state, path)
print(time.monotonic() - t)
"""

LOAD_SCRIPT = r"""
import sys, time, torch
path, seed = sys.argv[1], int(sys.argv[2])
t = time.monotonic()
state = torch.load(path)
elapsed = time.monotonic() - t
g = torch.Generator().manual_seed(seed)
for i in range(len(state)):
    assert torch.equal(state["layer%03d" % i], torch.randn(1 << 20, generator=g)), i
print(elapsed)
"""


def log(msg):
    print("[checkpoints %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


class Run:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="ckpt-bench-", dir="/var/tmp")
        self.root = os.path.join(self.work, "root")
        os.makedirs(os.path.join(self.root, BUCKET))
        self.server = TestServer(os.path.join(args.build, "tests", "server", "ossmount-testserver"),
                                 self.root, self.work, threads=2, memory_cache_mb=0)
        self.results = []
        self.source = os.path.join(self.work, "source.pt")

    # --- the server ------------------------------------------------------------------------


    def object_size(self, key):
        req = urllib.request.Request("%s/%s/%s" % (self.server.endpoint, BUCKET, key),
                                     method="HEAD")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return int(r.headers["Content-Length"])
        except Exception:
            return -1

    def wait_for_object(self, key, size, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.object_size(key) == size:
                return True
            time.sleep(0.05)
        return False

    def server_path(self, key):
        return os.path.join(self.root, BUCKET, key)

    def remove_objects(self, prefix=""):
        base = os.path.join(self.root, BUCKET)
        for name in os.listdir(base):
            if name.startswith(prefix) and name != "source.pt":
                path = os.path.join(base, name)
                shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)

    def record(self, condition, peer, case, **values):
        row = dict(condition=condition, peer=peer, case=case, **values)
        self.results.append(row)
        log(json.dumps(row))

    # --- ceilings ----------------------------------------------------------------------------

    def local_cases(self, condition):
        """torch.save to and torch.load from a local file (the page cache): what the two cores
        allow torch itself, the ceiling of the torch cases."""
        size = os.path.getsize(self.source)
        path = os.path.join(self.work, "local", "source.pt")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        out = subprocess.run([PYTHON, "-c", SAVE_SCRIPT, str(self.args.size_mib), path, "1"],
                             check=True, timeout=self.args.timeout, stdout=subprocess.PIPE)
        elapsed = float(out.stdout.split()[-1])
        self.record(condition, "local", "save-torch.save", seconds=elapsed, mbps=size / elapsed / 1e6)
        out = subprocess.run([PYTHON, "-c", LOAD_SCRIPT, path, "1"], check=True,
                             timeout=self.args.timeout, stdout=subprocess.PIPE)
        elapsed = float(out.stdout.split()[-1])
        self.record(condition, "local", "load-torch.load", seconds=elapsed, mbps=size / elapsed / 1e6)
        os.remove(path)

    def curl_cases(self, condition):
        size = os.path.getsize(self.source)
        url = "%s/%s/curl.pt" % (self.server.endpoint, BUCKET)
        t = time.monotonic()
        subprocess.run(["curl", "-sS", "-f", "-T", self.source, url, "-o", "/dev/null"],
                       check=True, timeout=self.args.timeout)
        self.record(condition, "curl", "save-stream", seconds=time.monotonic() - t,
                    mbps=size / (time.monotonic() - t) / 1e6)
        t = time.monotonic()
        subprocess.run(["curl", "-sS", "-f", url, "-o", "/dev/null"], check=True,
                       timeout=self.args.timeout)
        elapsed = time.monotonic() - t
        self.record(condition, "curl", "load-stream", seconds=elapsed, mbps=size / elapsed / 1e6)
        ranges = ["%d-%d" % (o, min(o + PART, size) - 1) for o in range(0, size, PART)]

        def get(r):
            subprocess.run(["curl", "-sS", "-f", "-r", r, url, "-o", "/dev/null"], check=True,
                           timeout=self.args.timeout)

        t = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(RANGE_CONCURRENCY) as pool:
            list(pool.map(get, ranges))
        elapsed = time.monotonic() - t
        self.record(condition, "curl", "load-ranged-x%d" % RANGE_CONCURRENCY, seconds=elapsed,
                    mbps=size / elapsed / 1e6)
        os.remove(self.server_path("curl.pt"))
        # The upload ceiling at a mount's concurrency: the file's bytes as 8 objects PUT at
        # once (split beforehand, untimed), which is what 8 parts in flight cost the server.
        pieces = []
        with open(self.source, "rb") as f:
            for i in range(RANGE_CONCURRENCY):
                piece = os.path.join(self.work, "piece%d" % i)
                with open(piece, "wb") as out:
                    out.write(f.read(-(-size // RANGE_CONCURRENCY)))
                pieces.append(piece)

        def put(i):
            subprocess.run(["curl", "-sS", "-f", "-T", pieces[i], "%s-%d" % (url, i), "-o",
                            "/dev/null"], check=True, timeout=self.args.timeout)

        t = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(RANGE_CONCURRENCY) as pool:
            list(pool.map(put, range(RANGE_CONCURRENCY)))
        elapsed = time.monotonic() - t
        self.record(condition, "curl", "save-parallel-x%d" % RANGE_CONCURRENCY, seconds=elapsed,
                    mbps=size / elapsed / 1e6)
        for i, piece in enumerate(pieces):
            os.remove(piece)
            os.remove(self.server_path("curl.pt-%d" % i))

    # --- mounts ------------------------------------------------------------------------------

    def mount(self, peer):
        extra = (["--max-memory", "1GiB"] + shlex.split(self.args.ossmount_args)
                 if peer == "ossmount-rw" else [])
        return Mount(peer, self.args.build, self.work, self.server.endpoint, BUCKET, extra=extra,
                     timeout=60)

    def save_cases(self, condition, peer):
        size = os.path.getsize(self.source)
        digest = sha256_file(self.source)
        for case in ("dd", "torch.save"):
            # torch.save names its archive after the file, so the torch.save file keeps the
            # source's name (in a directory of its own) to be byte-identical to it.
            key = "%s-dd.pt" % peer if case == "dd" else "%s-torch/source.pt" % peer
            m = self.mount(peer)
            with m:
                target = os.path.join(m.mnt, key)
                if case != "dd":
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                t = time.monotonic()
                if case == "dd":
                    subprocess.run(["dd", "if=" + self.source, "of=" + target, "bs=1M",
                                    "status=none"], check=True, timeout=self.args.timeout)
                else:
                    subprocess.run([PYTHON, "-c", SAVE_SCRIPT, str(self.args.size_mib), target,
                                    "1"], check=True, timeout=self.args.timeout,
                                   stdout=subprocess.PIPE)
                closed = time.monotonic() - t
                complete = self.wait_for_object(key, size, self.args.timeout)
                elapsed = time.monotonic() - t
            exact = complete and sha256_file(self.server_path(key)) == digest
            self.record(condition, peer, "save-" + case, seconds=elapsed, close_seconds=closed,
                        mbps=size / elapsed / 1e6, exact=exact,
                        peak_rss_mib=m.usage.get("peak_rss_mib"))
            m.cleanup()
        return "%s-dd.pt" % peer

    def load_cases(self, condition, peer, key):
        size = os.path.getsize(self.source)
        for case in ("dd", "torch.load"):
            m = self.mount(peer)
            with m:
                path = os.path.join(m.mnt, key)
                t = time.monotonic()
                if case == "dd":
                    subprocess.run(["dd", "if=" + path, "of=/dev/null", "bs=1M", "status=none"],
                                   check=True, timeout=self.args.timeout)
                    ok = True
                else:
                    out = subprocess.run([PYTHON, "-c", LOAD_SCRIPT, path, "1"],
                                         timeout=self.args.timeout, stdout=subprocess.PIPE)
                    ok = out.returncode == 0
                elapsed = time.monotonic() - t
                if case == "torch.load" and ok:
                    # torch.load's own time: not Python's start, importing torch, or the
                    # check that regenerates every tensor, which all mounts pay alike.
                    elapsed = float(out.stdout.split()[-1])
            self.record(condition, peer, "load-" + case, seconds=elapsed, mbps=size / elapsed / 1e6,
                        exact=ok, peak_rss_mib=m.usage.get("peak_rss_mib"))
            m.cleanup()

    def small_files_case(self, condition, peer):
        count, size = self.args.small_files, 100 * 1000
        payload = os.urandom(size)
        m = self.mount(peer)
        with m:
            # The server's index may still name the directory an earlier condition made (the
            # bench removes objects from its disk, not through the API).
            os.makedirs(os.path.join(m.mnt, "small-" + peer), exist_ok=True)

            def write(i):
                with open(os.path.join(m.mnt, "small-" + peer, "f%05d" % i), "wb") as f:
                    f.write(payload)

            t = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(16) as pool:
                list(pool.map(write, range(count)))
            base = self.server_path("small-" + peer)
            deadline = time.monotonic() + self.args.timeout
            while time.monotonic() < deadline:
                done = []
                for n in os.listdir(base):
                    try:  # a peer's temporary file may go between the listing and the stat
                        if n.startswith("f") and os.path.getsize(os.path.join(base, n)) == size:
                            done.append(n)
                    except OSError:
                        pass
                if len(done) == count:
                    break
                time.sleep(0.05)
            elapsed = time.monotonic() - t
        self.record(condition, peer, "small-files-x16", seconds=elapsed, files_per_s=count / elapsed,
                    complete=len(done) == count, peak_rss_mib=m.usage.get("peak_rss_mib"))
        m.cleanup()

    def run(self):
        self.server.start()
        log("making a torch.save file of %d MiB" % self.args.size_mib)
        subprocess.run([PYTHON, "-c", SAVE_SCRIPT, str(self.args.size_mib), self.source, "1"],
                       check=True, stdout=subprocess.PIPE)
        try:
            for condition in self.args.conditions:
                self.server.set_condition(condition, PACED)
                log("condition %s" % condition)
                self.curl_cases(condition)
                self.local_cases(condition)
                for peer in self.args.peers:
                    try:
                        key = self.save_cases(condition, peer)
                        self.load_cases(condition, peer, key)
                        self.small_files_case(condition, peer)
                    except Exception as e:  # a failed peer is recorded, the run goes on
                        self.record(condition, peer, "failed", error=str(e)[:300])
                    self.remove_objects()
        finally:
            self.server.stop()
        return self.save()

    def save(self):
        stamp = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
        out = os.path.join(BENCH, "results", "checkpoints-" + stamp)
        meta = {"size_mib": self.args.size_mib, "small_files": self.args.small_files,
                "paced": PACED, "peers": {p: PEER_OPTIONS[p] for p in self.args.peers},
                "cpus": os.cpu_count(), "date": stamp}
        with open(out + ".json", "w") as f:
            json.dump({"meta": meta, "results": self.results}, f, indent=1)
        with open(out + ".md", "w") as f:
            f.write(markdown(meta, self.results))
        shutil.rmtree(self.work, ignore_errors=True)
        log("results in %s.md" % out)
        return out


def markdown(meta, rows):
    lines = ["# Checkpoint save and load, %s" % meta["date"], "",
             "%d MiB torch.save file; %d files of 100 KB by 16 threads; paced = %d ms TTFB and "
             "%d Mbit/s per connection. MB/s is 10^6 bytes per second until the object is "
             "complete in the bucket; ratios are against the same run's curl." %
             (meta["size_mib"], meta["small_files"], meta["paced"]["ttfb"],
              meta["paced"]["mbps"]), ""]
    for condition in sorted({r["condition"] for r in rows}):
        rs = [r for r in rows if r["condition"] == condition]
        curl = {r["case"]: r["mbps"] for r in rs if r["peer"] == "curl"}
        local = {r["case"]: r["mbps"] for r in rs if r["peer"] == "local"}
        lines += ["## %s" % condition, "",
                  "| peer | case | MB/s or files/s | vs curl | exact | peak RSS MiB |",
                  "|---|---|---|---|---|---|"]
        for r in rs:
            if "mbps" in r:
                base = curl.get("save-stream") if r["case"].startswith("save") else \
                    curl.get("load-stream")
                ceiling = r["peer"] in ("curl", "local")
                ratio = "%.2fx" % (r["mbps"] / base) if base and not ceiling else ""
                if r["case"] in local and not ceiling:
                    ratio += " (%.2fx of local)" % (r["mbps"] / local[r["case"]])
                if r["case"].startswith("save") and not ceiling and \
                        curl.get("save-parallel-x8"):
                    ratio += " (%.2fx of parallel x8)" % (r["mbps"] / curl["save-parallel-x8"])
                if r["case"].startswith("load") and not ceiling and \
                        curl.get("load-ranged-x8"):
                    ratio += " (%.2fx of ranged x8)" % (r["mbps"] / curl["load-ranged-x8"])
                value = "%.0f" % r["mbps"]
            elif "files_per_s" in r:
                value, ratio = "%.0f" % r["files_per_s"], ""
            else:
                value, ratio = r.get("error", ""), ""
            lines.append("| %s | %s | %s | %s | %s | %s |" % (
                r["peer"], r["case"], value, ratio, r.get("exact", r.get("complete", "")),
                r.get("peak_rss_mib", "") or ""))
        lines.append("")
    lines += ["Peers as run:", ""] + ["- %s: `%s`" % kv for kv in meta["peers"].items()]
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size-mib", type=int, default=2048)
    p.add_argument("--small-files", type=int, default=1000)
    p.add_argument("--conditions", default="paced,unpaced")
    p.add_argument("--peers", default="ossmount-rw,rclone-writes,s3fs-rw")
    p.add_argument("--build", default=os.path.join(REPO, "build"))
    p.add_argument("--timeout", type=int, default=900, help="seconds per step")
    p.add_argument("--ossmount-args", default="",
                   help="more options for ossmount-rw, e.g. \"--staging-dir ''\" "
                        "(split as a shell would)")
    args = p.parse_args()
    args.conditions = args.conditions.split(",")
    args.peers = args.peers.split(",")
    Run(args).run()


if __name__ == "__main__":
    main()
