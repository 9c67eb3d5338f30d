#!/usr/bin/python3
"""What bodies cut short cost a sequential reader of a large file.

  bench/cut_bodies.py [--build DIR] [--old-build DIR] [--rounds N] [--rate P] [--mbps N]
                      [--ttfb-ms N] [--mib N]

On the project's server at 35 ms TTFB with each connection paced to MBPS megabits per second
(default 400), the first MIB MiB (default 256) of the 16 GiB sparse object of
bench/random_records.py read in 1 MiB preads, each read on a fresh mount with --retries 20:
once with no fault, then with a share RATE (default 0.2) of all GET bodies cut short (the
server closes the connection at a random point of the body). Every byte is compared with
the source. Reported per build: MB/s, GETs, cuts, and the MiB the server sent; the bytes
sent with no fault include the readahead past the last read (the window runs ahead), so the
cuts' cost is the difference between the two. Builds (--old-build) alternate within each
round. Indicative figures on a shared machine: the time of a read with cuts depends on the
retries' randomized backoff as much as on the bytes.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ossbench.mounts import Mount  # noqa: E402
from random_records import BUCKET, add_build_arguments, compared_builds, records_server  # noqa: E402

MiB = 1 << 20


def read_head(server, build, work, length, expected):
    """Reads the object's first `length` bytes on a fresh mount: (seconds, server stats, cuts)."""
    with Mount("ossmount", build, work, server.endpoint, BUCKET, metadata_ttl="60",
               extra=["--retries", "20"]) as m:
        path = os.path.join(m.mnt, "16g.bin")
        os.stat(path)
        server.reset()
        fd = os.open(path, os.O_RDONLY)
        try:
            start = time.monotonic()
            got = b"".join(os.pread(fd, MiB, off) for off in range(0, length, MiB))
            seconds = time.monotonic() - start
        finally:
            os.close(fd)
        stats = server.stats()
        cuts = server._call("GET", "/_ossmount/stats")["faults"].get("truncate", 0)
    if got != expected:
        raise SystemExit("cut_bodies: wrong bytes from %s" % build)
    return seconds, stats, cuts


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_build_arguments(p, rounds=3)
    p.add_argument("--rate", type=float, default=0.2)
    p.add_argument("--mbps", type=int, default=400)
    p.add_argument("--ttfb-ms", type=int, default=35)
    p.add_argument("--mib", type=int, default=256)
    args = p.parse_args()
    builds = compared_builds(args)
    length = args.mib * MiB
    with records_server(builds[0][1], "ossmount-cut-bodies-") as (server, work, source):
        with open(source, "rb") as f:
            expected = f.read(length)
        server.set_ttfb(args.ttfb_ms)
        server.set_bandwidth(args.mbps)
        print("%d ms TTFB, %d Mbit/s per connection, %d MiB read, %.0f%% of bodies cut"
              % (args.ttfb_ms, args.mbps, args.mib, args.rate * 100), flush=True)
        read_head(server, builds[0][1], work, length, expected)  # untimed: a cold server
        for rnd in range(args.rounds):
            for label, build in (builds if rnd % 2 == 0 else builds[::-1]):
                row = []
                for rate in (0, args.rate):
                    server._call("POST", "/_ossmount/faults?truncate-rate=%g" % rate)
                    seconds, stats, cuts = read_head(server, build, work, length, expected)
                    row.append("%s %4.0f MB/s, %3d GETs, %2d cuts, %5.1f MiB sent"
                               % ("no cuts:" if rate == 0 else "cuts:   ", length / seconds / 1e6,
                                  stats["GET"], cuts, stats["bytes_sent"] / MiB))
                server._call("POST", "/_ossmount/faults?truncate-rate=0")
                print("round %d %-3s %s" % (rnd + 1, label, " | ".join(row)), flush=True)


if __name__ == "__main__":
    main()
