#!/usr/bin/python3
"""Writes that do not stream, through ossmount and its writable peers, side by side.

  bench/staged_writes.py [--lines N] [--line-bytes B] [--object-mib M]
                         [--conditions paced,unpaced] [--peers ossmount-rw,rclone-writes,s3fs-rw]

Against one ossmount-testserver (auth off), "paced" (35 ms to first byte, 400 Mbit/s per
connection, for uploads and downloads) and "unpaced" (loopback). For each writable mount:
  - append: a log opened with "a", N lines of B bytes, each followed by a flush (a write(2),
    as logging.FileHandler does): lines/s of the loop; then, with the file still open, the
    seconds until a second mount of the same kind (metadata revalidated at once where the
    peer allows) reads all N lines, or "at close" and the seconds after close when the peer
    shows nothing before;
  - rewrite: an object of M MiB (PUT beforehand by curl) opened "r+b", 1 MiB written in its
    middle, closed: the seconds to the object being complete with the change (checked byte for
    byte), and the first write's own seconds (the download a staged copy needs, when the peer
    makes it then; s3fs makes it at open, which is timed with it).
Results: bench/results/staged-writes-<timestamp>.json and .md.
"""
import argparse
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ossbench.digest import sha256_file  # noqa: E402
from ossbench.mounts import PEER_OPTIONS, Mount  # noqa: E402
from ossbench.server import TestServer  # noqa: E402

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
BUCKET = "staged"
PACED = {"ttfb": 35, "mbps": 400}
MiB = 1 << 20


def log(msg):
    print("[staged-writes %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


class Run:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="staged-bench-", dir="/var/tmp")
        self.root = os.path.join(self.work, "root")
        os.makedirs(os.path.join(self.root, BUCKET))
        self.server = TestServer(os.path.join(args.build, "tests", "server", "ossmount-testserver"),
                                 self.root, self.work, threads=2, memory_cache_mb=0)
        self.results = []


    def server_path(self, key):
        return os.path.join(self.root, BUCKET, key)

    def record(self, condition, peer, case, **values):
        row = dict(condition=condition, peer=peer, case=case, **values)
        self.results.append(row)
        log(json.dumps(row))

    def mount(self, peer, reader=False):
        # As bench/checkpoints.py runs it (PEER_OPTIONS says so).
        extra = ["--max-memory", "1GiB"] if peer == "ossmount-rw" else []
        ttl = "indefinite"
        if peer == "ossmount-rw" and reader:
            # Revalidate at every stat, names that were absent too: what a watcher of a live
            # log asks for.
            ttl = "0"
            extra += ["--negative-metadata-ttl", "0"]
        return Mount(peer, self.args.build, self.work, self.server.endpoint, BUCKET, extra=extra,
                     timeout=60, metadata_ttl=ttl)

    def append_case(self, condition, peer):
        n, size = self.args.lines, self.args.line_bytes
        line = (b"x" * (size - 1)) + b"\n"
        name = "%s-%s.log" % (condition, peer)
        total = n * size
        writer = self.mount(peer)
        reader = self.mount(peer, reader=True)
        with writer, reader:
            f = open(os.path.join(writer.mnt, name), "ab", buffering=0)
            t = time.monotonic()
            for _ in range(n):
                f.write(line)  # one write(2) per line, as a flushed log handler makes
            elapsed = time.monotonic() - t
            written_at = time.monotonic()
            seen, delay = False, None
            path = os.path.join(reader.mnt, name)
            deadline = written_at + self.args.visible_timeout
            while time.monotonic() < deadline:
                try:
                    if os.path.getsize(path) >= total:
                        with open(path, "rb") as r:
                            if len(r.read()) >= total:
                                seen, delay = True, time.monotonic() - written_at
                                break
                except OSError:
                    pass
                time.sleep(0.05)
            close_t = time.monotonic()
            f.close()
            close_s = time.monotonic() - close_t
            after_close = None
            if not seen:
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    if os.path.exists(self.server_path(name)) and \
                            os.path.getsize(self.server_path(name)) == total:
                        after_close = time.monotonic() - close_t
                        break
                    time.sleep(0.05)
        exact = os.path.exists(self.server_path(name)) and \
            os.path.getsize(self.server_path(name)) == total
        self.record(condition, peer, "append", lines=n, line_bytes=size,
                    lines_per_s=n / elapsed, visible_while_open=seen,
                    visible_delay_s=delay, close_s=close_s, in_bucket_after_close_s=after_close,
                    exact=exact, peak_rss_mib=writer.usage.get("peak_rss_mib"))
        writer.cleanup()
        reader.cleanup()

    def rewrite_case(self, condition, peer):
        size = self.args.object_mib * MiB
        name = "%s-%s-big.bin" % (condition, peer)
        src = os.path.join(self.work, "big.bin")
        if not os.path.exists(src):
            with open(src, "wb") as f:
                for _ in range(self.args.object_mib):
                    f.write(os.urandom(MiB))
        subprocess.run(["curl", "-sS", "-f", "-T", src, "%s/%s/%s" % (self.server.endpoint,
                                                                       BUCKET, name),
                        "-o", "/dev/null"], check=True, timeout=900)
        patch = os.urandom(MiB)
        at = size // 2
        m = self.mount(peer)
        with m:
            path = os.path.join(m.mnt, name)
            t = time.monotonic()
            fd = os.open(path, os.O_RDWR)
            opened = time.monotonic() - t
            t1 = time.monotonic()
            os.pwrite(fd, patch[:4096], at)
            first = time.monotonic() - t1
            os.pwrite(fd, patch[4096:], at + 4096)
            os.close(fd)
            closed = time.monotonic() - t
            # Complete in the bucket with the change (rclone uploads after close).
            with open(src, "rb") as f:
                data = f.read()
            expected = hashlib.sha256(data[:at] + patch + data[at + MiB:]).hexdigest()
            del data
            done = None
            deadline = time.monotonic() + 900
            while time.monotonic() < deadline:
                try:
                    if sha256_file(self.server_path(name)) == expected:
                        done = time.monotonic() - t
                        break
                except OSError:
                    pass
                time.sleep(0.2)
        self.record(condition, peer, "rewrite-1MiB-of-%dMiB" % self.args.object_mib,
                    open_s=opened, first_write_s=first, close_s=closed, complete_s=done,
                    exact=done is not None, peak_rss_mib=m.usage.get("peak_rss_mib"))
        m.cleanup()
        os.remove(self.server_path(name))

    def run(self):
        self.server.start()
        try:
            for condition in self.args.conditions:
                self.server.set_condition(condition, PACED)
                log("condition %s" % condition)
                for peer in self.args.peers:
                    for case in (self.append_case, self.rewrite_case):
                        try:
                            case(condition, peer)
                        except Exception as e:  # a failed peer is recorded, the run goes on
                            self.record(condition, peer, case.__name__, error=str(e)[:300])
        finally:
            self.server.stop()
        return self.save()

    def save(self):
        stamp = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
        out = os.path.join(BENCH, "results", "staged-writes-" + stamp)
        meta = {"lines": self.args.lines, "line_bytes": self.args.line_bytes,
                "object_mib": self.args.object_mib, "paced": PACED,
                "peers": {p: PEER_OPTIONS[p] for p in self.args.peers}, "date": stamp}
        with open(out + ".json", "w") as f:
            json.dump({"meta": meta, "results": self.results}, f, indent=1)
        with open(out + ".md", "w") as f:
            f.write(markdown(meta, self.results))
        shutil.rmtree(self.work, ignore_errors=True)
        log("results in %s.md" % out)
        return out


def fmt(v, spec="%.2f"):
    return "" if v is None else (spec % v)


def markdown(meta, rows):
    lines = ["# Staged writes and appends, %s" % meta["date"], "",
             "%d lines of %d bytes, one write(2) each; 1 MiB rewritten in the middle of a %d MiB "
             "object; paced = %d ms TTFB and %d Mbit/s per connection." %
             (meta["lines"], meta["line_bytes"], meta["object_mib"], meta["paced"]["ttfb"],
              meta["paced"]["mbps"]), ""]
    for condition in sorted({r["condition"] for r in rows}):
        rs = [r for r in rows if r["condition"] == condition]
        lines += ["## %s" % condition, "", "Append:", "",
                  "| peer | lines/s | seen by another mount while open (s after the last "
                  "line) | close s | in the bucket s after close | exact |",
                  "|---|---|---|---|---|---|"]
        for r in rs:
            if r["case"] == "append":
                lines.append("| %s | %.0f | %s | %s | %s | %s |" % (
                    r["peer"], r["lines_per_s"],
                    fmt(r["visible_delay_s"]) if r["visible_while_open"] else "no",
                    fmt(r["close_s"]), fmt(r["in_bucket_after_close_s"]), r["exact"]))
        lines += ["", "Rewrite of 1 MiB in the middle:", "",
                  "| peer | open s | first write s | close s | complete in the bucket s | exact |",
                  "|---|---|---|---|---|---|"]
        for r in rs:
            if r["case"].startswith("rewrite"):
                lines.append("| %s | %s | %s | %s | %s | %s |" % (
                    r["peer"], fmt(r["open_s"]), fmt(r["first_write_s"]), fmt(r["close_s"]),
                    fmt(r["complete_s"]), r["exact"]))
        for r in rs:
            if "error" in r:
                lines.append("- %s %s failed: %s" % (r["peer"], r["case"], r["error"]))
        lines.append("")
    lines += ["Peers as run:", ""] + ["- %s: `%s`" % kv for kv in meta["peers"].items()]
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lines", type=int, default=10000)
    p.add_argument("--line-bytes", type=int, default=1024)
    p.add_argument("--object-mib", type=int, default=1024)
    p.add_argument("--visible-timeout", type=float, default=30,
                   help="seconds to wait for another mount to see the lines before closing")
    p.add_argument("--conditions", default="paced,unpaced")
    p.add_argument("--peers", default="ossmount-rw,rclone-writes,s3fs-rw")
    p.add_argument("--build", default=os.path.join(REPO, "build"))
    args = p.parse_args()
    args.conditions = args.conditions.split(",")
    args.peers = args.peers.split(",")
    Run(args).run()


if __name__ == "__main__":
    main()
