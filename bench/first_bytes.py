#!/usr/bin/python3
"""How soon reads of a large file get their bytes when each connection is bandwidth-bound.

  bench/first_bytes.py [--build DIR] [--old-build DIR] [--rounds N] [--mbps N] [--ttfb-ms N]
                       [--metadata-ttl TTL]

On the project's server at 35 ms TTFB with each connection paced to MBPS megabits per second
(default 400, about 50 MB/s: one connection to an object store across a network, not this
machine's loopback; 0: no cap), over the 16 GiB sparse object of bench/random_records.py, each case on a
fresh mount (nothing in the page cache):
  - first read: the first 128 KiB of the file (`head -c`, a format's header);
  - shard: the first 64 MiB read in 1 MiB preads (a WebDataset shard, a tar, weights);
  - records: 16 records of 4 MiB at random offsets, one pread each (Parquet row groups).
Builds (--old-build) alternate within each round. Indicative figures on a shared machine;
compare rounds of the same minutes.
"""
import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ossbench.mounts import Mount  # noqa: E402
from random_records import (BUCKET, OBJECT_SIZE, add_build_arguments, compared_builds,  # noqa: E402
                            records_server)

KiB = 1 << 10
MiB = 1 << 20
SHARD = 64 * MiB
RECORD = 4 * MiB
RECORDS = 16


def timed_preads(path, reads):
    """Seconds to pread each (offset, length) of `reads` in turn, every read whole."""
    fd = os.open(path, os.O_RDONLY)
    try:
        start = time.monotonic()
        for off, length in reads:
            if len(os.pread(fd, length, off)) != length:
                raise SystemExit("first_bytes: short read at %d" % off)
        return time.monotonic() - start
    finally:
        os.close(fd)


def first_read(path):
    return timed_preads(path, [(0, 128 * KiB)])


def shard(path):
    return timed_preads(path, [(off, MiB) for off in range(0, SHARD, MiB)])


def records(path, seed):
    rng = random.Random(seed)
    offsets = [rng.randrange(0, OBJECT_SIZE - RECORD) // 4096 * 4096 for _ in range(RECORDS)]
    return timed_preads(path, [(off, RECORD) for off in offsets])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_build_arguments(p, rounds=3)
    p.add_argument("--mbps", type=int, default=400)
    p.add_argument("--ttfb-ms", type=int, default=35)
    p.add_argument("--metadata-ttl", default="60")
    args = p.parse_args()
    builds = compared_builds(args)
    build = builds[0][1]
    with records_server(build, "ossmount-first-bytes-") as (server, work, _):
        server.set_ttfb(args.ttfb_ms)
        server.set_bandwidth(args.mbps)
        print("%d ms TTFB, %s per connection, --metadata-ttl %s"
              % (args.ttfb_ms, "%d Mbit/s" % args.mbps if args.mbps else "no bandwidth cap",
                 args.metadata_ttl), flush=True)
        # Untimed: the server's first reads of the object are slower.
        with Mount("ossmount", build, work, server.endpoint, BUCKET,
                   metadata_ttl=args.metadata_ttl) as m:
            shard(os.path.join(m.mnt, "16g.bin"))
        for rnd in range(args.rounds):
            for label, b in (builds if rnd % 2 == 0 else builds[::-1]):
                row = []
                for case in ("first read", "shard", "records"):
                    with Mount("ossmount", b, work, server.endpoint, BUCKET,
                               metadata_ttl=args.metadata_ttl) as m:
                        path = os.path.join(m.mnt, "16g.bin")
                        os.stat(path)
                        server.reset()
                        if case == "first read":
                            row.append("first 128 KiB %6.1f ms" % (first_read(path) * 1e3))
                        elif case == "shard":
                            seconds = shard(path)
                            row.append("64 MiB shard %5.0f MB/s" % (SHARD / seconds / 1e6))
                        else:
                            seconds = records(path, rnd)
                            row.append("4 MiB records %5.1f ms each, %3d GETs"
                                       % (seconds / RECORDS * 1e3, server.stats()["GET"]))
                print("round %d %-3s %s" % (rnd + 1, label, " | ".join(row)), flush=True)


if __name__ == "__main__":
    main()
