#!/usr/bin/python3
"""Threaded readers for the benchmark.

  threaded_reader.py files ROOT --threads 16 [--limit K]
      Lists ROOT (os.walk, not timed), then THREADS threads read whole files (1 MiB reads)
      from a shuffled shared queue until every file is read.
  threaded_reader.py offsets FILE --threads 64
      THREADS threads each read an equal slice of one large FILE sequentially (1 MiB reads):
      64 concurrent sequential readers for the memory-bound check.
Prints one JSON object: files, bytes, seconds, files_per_s, MB_per_s.
"""
import argparse
import json
import os
import queue
import random
import sys
import threading
import time

CHUNK = 1 << 20


def read_whole(path):
    n = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(CHUNK)
            if not b:
                return n
            n += len(b)


def read_slice(path, offset, length):
    n = 0
    with open(path, "rb", buffering=0) as f:
        f.seek(offset)
        while n < length:
            b = f.read(min(CHUNK, length - n))
            if not b:
                break
            n += len(b)
    return n


def run_threads(threads, work):
    total = [0, 0]
    lock = threading.Lock()
    errors = []

    def loop():
        while True:
            try:
                item = work.get_nowait()
            except queue.Empty:
                return
            try:
                n = item()
            except OSError as e:
                errors.append(str(e))
                continue
            with lock:
                total[0] += 1
                total[1] += n

    start = time.monotonic()
    ts = [threading.Thread(target=loop) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return total[0], total[1], time.monotonic() - start, errors


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["files", "offsets"])
    p.add_argument("path")
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--limit", type=int, default=0)
    args = p.parse_args()
    work = queue.Queue()
    if args.mode == "files":
        paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(args.path) for f in fs)
        random.Random(1).shuffle(paths)
        if args.limit:
            paths = paths[:args.limit]
        for path in paths:
            work.put(lambda path=path: read_whole(path))
    else:
        size = os.stat(args.path).st_size
        part = size // args.threads
        for i in range(args.threads):
            work.put(lambda i=i: read_slice(args.path, i * part, part))
    files, nbytes, secs, errors = run_threads(args.threads, work)
    print(json.dumps({"files": files, "bytes": nbytes, "seconds": round(secs, 3),
                      "files_per_s": round(files / secs, 1),
                      "MB_per_s": round(nbytes / secs / 1e6, 1), "errors": len(errors),
                      "first_error": errors[0] if errors else None}))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
