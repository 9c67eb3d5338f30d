#!/usr/bin/python3
"""Random records of one large object, read through a mount by forked worker processes.

  bench/random_records.py [--build DIR] [--old-build DIR] [--rounds N] [--records N]
                          [--record-size BYTES] [--workers N] [--no-rclone]

The access pattern of datasets kept in a few large files and read at random: an Arrow file
(Hugging Face datasets) or a numpy.memmap mapped by the Dataset, LMDB, HDF5. WORKERS
processes forked after the file was opened (and, for mmap, mapped), as DataLoader workers
inherit their Dataset, read RECORDS records of 100 KB (--record-size: HDF5 chunks, audio or
video clips run to megabytes) at random offsets (one per 16 MiB slot) of a 16 GiB sparse object (4 KiB of random bytes at every MiB, holes elsewhere) on
the project's server at 35 ms TTFB, every record compared with the source file. Two modes:
`pread` (os.pread on the shared descriptor) and `mmap` (a slice of the shared mapping, so
every record arrives as the kernel's read-around of a page fault).

Mounts, in alternating rounds: ossmount with --metadata-ttl indefinite (as in the harness)
and 60 (the default), the same for the build in --old-build if given, and rclone mount
--vfs-cache-mode off (the harness's peer options), also with --vfs-read-chunk-size 128Ki. Reported per mount and mode: records/s
(the bound is WORKERS / 35 ms), GETs and KiB the server sent per record. Indicative figures
on a shared machine; compare rounds of the same minutes.
"""
import argparse
import contextlib
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ossbench.mounts import Mount  # noqa: E402
from ossbench.server import TestServer  # noqa: E402

MiB = 1 << 20
OBJECT_SIZE = 16 * 1024 * MiB
BUCKET = "records"


def make_object(root):
    path = os.path.join(root, BUCKET, "16g.bin")
    if os.path.exists(path + ".complete"):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    rng = random.Random(3)
    with open(path, "wb") as f:
        f.truncate(OBJECT_SIZE)
        for off in range(0, OBJECT_SIZE, MiB):
            os.pwrite(f.fileno(), rng.randbytes(4096), off + rng.randrange(MiB - 4096))
    os.sync()  # a read during the new file's writeback would be slow for the server
    open(path + ".complete", "w").close()
    return path


def add_build_arguments(parser, rounds):
    """--build, --old-build and --rounds, as every script over this object takes them."""
    parser.add_argument("--build", default="build")
    parser.add_argument("--old-build", default="")
    parser.add_argument("--rounds", type=int, default=rounds)


def compared_builds(args):
    """[(label, build directory)]: "new" (--build), and "old" (--old-build) when given."""
    builds = [("new", os.path.abspath(args.build))]
    if args.old_build:
        builds.append(("old", os.path.abspath(args.old_build)))
    return builds


@contextlib.contextmanager
def records_server(build, prefix):
    """The project's server (from `build`) over the records bucket, its object made once:
    yields (server, work directory, the object's local copy); stops and cleans up after."""
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    root = os.path.join(src, "bench", "data", "records")
    source = make_object(root)
    work = tempfile.mkdtemp(prefix=prefix)
    server = TestServer(os.path.join(build, "tests", "server", "ossmount-testserver"), root,
                        work)
    server.start()
    try:
        yield server, work, source
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def read_records(path, source, mode, workers, offsets, record):
    """Forks `workers` readers sharing one descriptor (and mapping); returns seconds."""
    import mmap
    fd = os.open(path, os.O_RDONLY)
    src = os.open(source, os.O_RDONLY)
    mapping = mmap.mmap(fd, 0, prot=mmap.PROT_READ) if mode == "mmap" else None
    start = time.monotonic()
    pids = []
    for w in range(workers):
        pid = os.fork()
        if pid == 0:
            ok = True
            for o in offsets[w::workers]:
                got = mapping[o:o + record] if mapping is not None else os.pread(fd, record, o)
                ok = ok and got == os.pread(src, record, o)
            os._exit(0 if ok else 1)
        pids.append(pid)
    bad = sum(os.waitpid(pid, 0)[1] != 0 for pid in pids)
    seconds = time.monotonic() - start
    if mapping is not None:
        mapping.close()
    os.close(fd)
    os.close(src)
    if bad:
        raise SystemExit("random_records: %d worker(s) read wrong bytes" % bad)
    return seconds


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_build_arguments(p, rounds=1)
    p.add_argument("--records", type=int, default=480)
    p.add_argument("--record-size", type=int, default=100 * 1000)
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--no-rclone", action="store_true")
    args = p.parse_args()
    build = os.path.abspath(args.build)
    slots = OBJECT_SIZE // (16 * MiB)
    record = args.record_size
    if not 0 < record <= 16 * MiB:
        raise SystemExit("random_records: --record-size must be 1 to %d bytes" % (16 * MiB))
    with records_server(build, "ossmount-random-records-") as (server, work, source):
        server.set_ttfb(35)
        # (label, kind, build, --metadata-ttl or rclone's setting, extra arguments)
        mounts = [("new", "ossmount", build, "indefinite", []),
                  ("new", "ossmount", build, "60", [])]
        if args.old_build:
            old = os.path.abspath(args.old_build)
            mounts += [("old", "ossmount", old, "indefinite", []),
                       ("old", "ossmount", old, "60", [])]
        if not args.no_rclone:
            # As in the harness, and with rclone's first ranged GET of a file cut from 128 MiB
            # (--vfs-read-chunk-size) to 128 KiB, its setting for random reads.
            mounts += [("peer", "rclone-off", build, "harness", []),
                       ("peer", "rclone-off", build, "chunk128Ki",
                        ["--vfs-read-chunk-size", "128Ki"])]
        print("%d records of %d bytes, %d workers, 35 ms TTFB (bound %.0f records/s)"
              % (args.records, record, args.workers, args.workers / 0.035), flush=True)
        # Untimed: the server's first reads of the object (its extents) are slower.
        with Mount("ossmount", build, work, server.endpoint, BUCKET) as m:
            read_records(os.path.join(m.mnt, "16g.bin"), source, "pread", args.workers,
                         [s * 16 * MiB for s in range(0, slots, 4)], 100 * 1000)
        for rnd in range(args.rounds):
            for label, kind, b, setting, extra in mounts:
                ttl = setting if kind == "ossmount" else "indefinite"
                with Mount(kind, b, work, server.endpoint, BUCKET, extra=extra,
                           metadata_ttl=ttl) as m:
                    path = os.path.join(m.mnt, "16g.bin")
                    os.stat(path)
                    for mode in ("pread", "mmap"):
                        rng = random.Random(1000 * rnd + len(mode))
                        offsets = [s * 16 * MiB + rng.randrange(16 * MiB - record + 1)
                                   for s in rng.sample(range(slots), args.records)]
                        server.reset()
                        seconds = read_records(path, source, mode, args.workers, offsets,
                                               record)
                        st = server.stats()
                        print("round %d %-4s %-10s %-10s %-5s %7.1f records/s %5.2f GETs "
                              "%7.0f KiB per record" % (
                                  rnd + 1, label, kind, setting, mode, args.records / seconds,
                                  st["GET"] / args.records,
                                  st["bytes_sent"] / args.records / 1024), flush=True)


if __name__ == "__main__":
    main()
