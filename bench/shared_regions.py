#!/usr/bin/python3
"""Regions of one large object read by threads sharing one descriptor, or each its own.

  bench/shared_regions.py [--build DIR] [--old-build DIR] [--rounds N] [--size-mib N]
                          [--metadata-ttl TTL]

A parallel copy, or a loader whose threads each read a region of one file (model weights,
a shard), through one open file: THREADS threads (1, 2 and 4) split the first SIZE MiB
(default 512) of the 16 GiB sparse object of bench/random_records.py into equal regions and
read each sequentially with 1 MiB preads, on the project's server at 35 ms TTFB. The same
with a descriptor per thread, for comparison. Each case on a fresh mount (nothing in the
page cache); builds (--old-build) in alternating order within each round. Reported: MB/s,
GETs, and MiB the server sent. Indicative figures on a shared machine; compare rounds of the
same minutes.
"""
import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ossbench.mounts import Mount  # noqa: E402
from random_records import (BUCKET, add_build_arguments, compared_builds,  # noqa: E402
                            records_server)

MiB = 1 << 20
CASES = ((1, True), (2, True), (4, True), (2, False), (4, False))


def read_regions(path, size, threads, shared):
    """Reads [0, size) in `threads` equal regions, 1 MiB preads; returns seconds."""
    fd = os.open(path, os.O_RDONLY)
    region = size // threads
    errors = []

    def reader(i):
        f = fd if shared else os.open(path, os.O_RDONLY)
        try:
            for off in range(i * region, (i + 1) * region, MiB):
                if len(os.pread(f, MiB, off)) != MiB:
                    errors.append("short read at %d" % off)
                    return
        finally:
            if not shared:
                os.close(f)

    start = time.monotonic()
    workers = [threading.Thread(target=reader, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    seconds = time.monotonic() - start
    os.close(fd)
    if errors:
        raise SystemExit("shared_regions: " + errors[0])
    return seconds


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_build_arguments(p, rounds=2)
    p.add_argument("--size-mib", type=int, default=512)
    p.add_argument("--metadata-ttl", default="60")
    args = p.parse_args()
    size = args.size_mib * MiB
    builds = compared_builds(args)
    build = builds[0][1]
    with records_server(build, "ossmount-shared-regions-") as (server, work, _):
        server.set_ttfb(35)
        print("%d MiB in 1 MiB preads, 35 ms TTFB, --metadata-ttl %s"
              % (args.size_mib, args.metadata_ttl), flush=True)
        # Untimed: the server's first reads of the object are slower.
        with Mount("ossmount", build, work, server.endpoint, BUCKET,
                   metadata_ttl=args.metadata_ttl) as m:
            read_regions(os.path.join(m.mnt, "16g.bin"), size, 4, False)
        for rnd in range(args.rounds):
            for label, b in (builds if rnd % 2 == 0 else builds[::-1]):
                for threads, shared in CASES:
                    with Mount("ossmount", b, work, server.endpoint, BUCKET,
                               metadata_ttl=args.metadata_ttl) as m:
                        path = os.path.join(m.mnt, "16g.bin")
                        os.stat(path)
                        server.reset()
                        seconds = read_regions(path, size, threads, shared)
                        st = server.stats()
                        print("round %d %-3s %d thread(s) %-13s %5.0f MB/s %4d GETs %5.0f MiB sent"
                              % (rnd + 1, label, threads,
                                 "one descriptor" if shared else "descriptor each",
                                 size / seconds / 1e6, st["GET"], st["bytes_sent"] / MiB),
                              flush=True)


if __name__ == "__main__":
    main()
