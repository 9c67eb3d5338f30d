#!/usr/bin/python3
"""One large file read whole: ossmount beside curl's ceilings and the peers, in one run.

  bench/large_files.py [--build DIR] [--size-mib 256] [--mbps 50,0] [--ttfb-ms 35]
                       [--readers 8] [--peers s3fs,rclone-off]

Against one ossmount-testserver (--auth off) holding one object of --size-mib random bytes,
for each pacing in --mbps (megabits per second per connection; 0: loopback speed) at
--ttfb-ms to first byte:
  - curl, one stream: the whole object in one GET;
  - curl, 8 and 32 ranged GETs of 8 MiB at once (8 or 32 curl processes, each taking the
    next range until none is left): what many connections per file reach;
  - ossmount, one reader: the file read whole in 1 MiB reads on a fresh mount (nothing in the
    page cache), MB/s and the daemon's peak RSS;
  - ossmount, --readers processes reading the same file at once on a fresh mount: MB/s of
    the slowest and the fastest, and how many times the server sent the file;
  - each peer in --peers that is installed, one reader, as ossmount's.
Every case's bytes are checked against the object's sha256. Ratios are against curl with 32
ranges (the ceiling of many connections) and curl with one stream, from the same run.
Results: bench/results/large-files-<timestamp>.json and .md.
"""
import argparse
import concurrent.futures
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
from ossbench.mounts import Mount  # noqa: E402
from ossbench.server import TestServer, proc_peak_rss_mib, serving_pid  # noqa: E402

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
BUCKET = "large"
KEY = "blob.bin"
MiB = 1 << 20
RANGE = 8 * MiB


def log(msg):
    print("[large %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def make_object(root, size):
    """The object's file under the server's root, and its sha256."""
    path = os.path.join(root, BUCKET, KEY)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    digest = hashlib.sha256()
    with open(path, "wb") as f:
        left = size
        while left:
            chunk = os.urandom(min(left, 16 * MiB))
            f.write(chunk)
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


def curl_ranges(url, size, streams, out_dir):
    """Seconds for `streams` curl processes to fetch every RANGE-byte range once, and the
    sha256 of the ranges put together."""
    ranges = [(off, min(off + RANGE, size) - 1) for off in range(0, size, RANGE)]
    parts = [os.path.join(out_dir, "part-%06d" % i) for i in range(len(ranges))]

    def fetch(i):
        a, b = ranges[i]
        subprocess.run(["curl", "-sf", "-r", "%d-%d" % (a, b), "-o", parts[i], url], check=True)

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=streams) as pool:
        list(pool.map(fetch, range(len(ranges))))
    seconds = time.monotonic() - start
    digest = hashlib.sha256()
    for p in parts:
        with open(p, "rb") as f:
            digest.update(f.read())
        os.unlink(p)
    return seconds, digest.hexdigest()


def curl_whole(url, out_dir):
    path = os.path.join(out_dir, "whole")
    start = time.monotonic()
    subprocess.run(["curl", "-sf", "-o", path, url], check=True)
    seconds = time.monotonic() - start
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            chunk = f.read(16 * MiB)
            if not chunk:
                break
            digest.update(chunk)
    os.unlink(path)
    return seconds, digest.hexdigest()


READER = r"""
import hashlib, sys, time
digest = hashlib.sha256()
start = time.monotonic()
with open(sys.argv[1], "rb", buffering=0) as f:
    while True:
        chunk = f.read(1 << 20)
        if not chunk:
            break
        digest.update(chunk)
print(time.monotonic() - start, digest.hexdigest())
"""


def read_through(path, readers):
    """Starts `readers` processes reading `path` whole at once; each one's (seconds, sha256)."""
    procs = [subprocess.Popen([sys.executable, "-c", READER, path], stdout=subprocess.PIPE,
                              text=True) for _ in range(readers)]
    out = []
    for p in procs:
        text, _ = p.communicate()
        if p.returncode != 0:
            raise RuntimeError("a reader of %s failed" % path)
        seconds, digest = text.split()
        out.append((float(seconds), digest))
    return out


def mount_case(kind, args, server, work, size, want, readers=1):
    server.reset()
    with Mount(kind, args.build, work, server.endpoint, BUCKET) as m:
        results = read_through(os.path.join(m.mnt, KEY), readers)
        pid = serving_pid(m.proc.pid)
        rss = proc_peak_rss_mib(pid)
    sent = server.stats()["bytes_sent"]
    for _, digest in results:
        if digest != want:
            raise RuntimeError("%s read bytes that differ from the object's" % kind)
    rates = [size / MiB / s for s, _ in results]
    return {"mbps_each": [round(r, 1) for r in rates], "min": round(min(rates), 1),
            "max": round(max(rates), 1), "peak_rss_mib": rss,
            "sent_times_file": round(sent / size, 2)}


def run_condition(args, server, work, size, want, mbps):
    url = "%s/%s/%s" % (server.endpoint, BUCKET, KEY)
    if mbps:
        server.set_condition("paced", {"ttfb": args.ttfb_ms, "mbps": mbps})
    else:
        server._call("POST", "/_ossmount/faults?clear&ttfb-ms=%d" % args.ttfb_ms)
    rows = {}
    seconds, digest = curl_whole(url, work)
    assert digest == want, "curl read other bytes"
    rows["curl, one stream"] = {"min": round(size / MiB / seconds, 1)}
    log("%s Mbit/s: curl one stream %.1f MB/s" % (mbps or "unpaced", rows["curl, one stream"]["min"]))
    for streams in (8, 32):
        seconds, digest = curl_ranges(url, size, streams, work)
        assert digest == want, "curl's ranges put together differ from the object"
        rows["curl, %d ranged GETs of 8 MiB at once" % streams] = {
            "min": round(size / MiB / seconds, 1)}
        log("curl %d ranges: %.1f MB/s" % (streams, size / MiB / seconds))
    rows["ossmount, one reader"] = mount_case("ossmount", args, server, work, size, want)
    log("ossmount one reader: %s" % rows["ossmount, one reader"])
    rows["ossmount, %d readers of the file at once" % args.readers] = mount_case(
        "ossmount", args, server, work, size, want, readers=args.readers)
    log("ossmount %d readers: %s" % (args.readers,
                                     rows["ossmount, %d readers of the file at once" % args.readers]))
    for peer in [p for p in args.peers.split(",") if p]:
        binary = "rclone" if peer.startswith("rclone") else peer
        if shutil.which(binary) is None:
            log("%s is not installed; left out" % peer)
            continue
        try:
            rows["%s, one reader" % peer] = mount_case(peer, args, server, work, size, want)
            log("%s: %s" % (peer, rows["%s, one reader" % peer]))
        except Exception as e:  # a peer that fails is reported, not fatal
            rows["%s, one reader" % peer] = {"error": str(e)}
            log("%s failed: %s" % (peer, e))
    ceiling = rows["curl, 32 ranged GETs of 8 MiB at once"]["min"]
    one = rows["curl, one stream"]["min"]
    for row in rows.values():
        if "min" in row:
            row["vs_curl_32"] = round(row["min"] / ceiling, 2)
            row["vs_curl_1"] = round(row["min"] / one, 2)
    return rows


def markdown(result):
    out = ["# One large file read whole (%s)" % result["started"], "",
           "%d MiB object, %d ms to first byte; MB/s are MiB per second; for several readers, "
           "the slowest and the fastest." % (result["size_mib"], result["ttfb_ms"]), ""]
    for cond, rows in result["conditions"].items():
        out += ["## %s" % cond, "",
                "| reader | MB/s | x curl 32 ranges | x curl 1 stream | peak RSS MiB | "
                "server sent (x file) |", "|---|---|---|---|---|---|"]
        for name, row in rows.items():
            if "error" in row:
                out.append("| %s | failed: %s | | | | |" % (name, row["error"]))
                continue
            mbps = ("%.1f" % row["min"] if row.get("max", row["min"]) == row["min"]
                    else "%.1f-%.1f" % (row["min"], row["max"]))
            out.append("| %s | %s | %.2f | %.2f | %s | %s |" % (
                name, mbps, row["vs_curl_32"], row["vs_curl_1"], row.get("peak_rss_mib", ""),
                row.get("sent_times_file", "")))
        out.append("")
    return "\n".join(out)


def main():
    if shutil.which("s3fs") is None or shutil.which("rclone") is None:
        subprocess.run([os.path.join(REPO, "scripts", "install-deps.sh"), "--bench"], check=True,
                       stdout=subprocess.DEVNULL)
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.path.join(REPO, "build"))
    p.add_argument("--size-mib", type=int, default=256)
    p.add_argument("--mbps", default="50,0", help="per-connection pacing of each condition")
    p.add_argument("--ttfb-ms", type=int, default=35)
    p.add_argument("--readers", type=int, default=8)
    p.add_argument("--peers", default="s3fs,rclone-off")
    args = p.parse_args()
    size = args.size_mib * MiB
    work = tempfile.mkdtemp(prefix="large-files-")
    root = os.path.join(work, "root")
    started = datetime.datetime.utcnow().isoformat() + "Z"
    server = TestServer(os.path.join(args.build, "tests", "server", "ossmount-testserver"), root,
                        work, threads=2, memory_cache_mb=0)
    try:
        log("making the %d MiB object" % args.size_mib)
        want = make_object(root, size)
        server.start()
        result = {"started": started, "size_mib": args.size_mib, "ttfb_ms": args.ttfb_ms,
                  "conditions": {}}
        for mbps in [int(x) for x in args.mbps.split(",")]:
            name = "%d Mbit/s per connection" % mbps if mbps else "unpaced (loopback)"
            result["conditions"][name] = run_condition(args, server, work, size, want, mbps)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    stamp = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
    out_dir = os.path.join(BENCH, "results")
    os.makedirs(out_dir, exist_ok=True)
    base = os.path.join(out_dir, "large-files-%s" % stamp)
    with open(base + ".json", "w") as f:
        json.dump(result, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(markdown(result) + "\n")
    log("results in %s.{json,md}" % base)
    print(markdown(result))


if __name__ == "__main__":
    main()
