"""Large files: readahead in part-sized ranged GETs within a memory budget.
docs/SEMANTICS.md "Large files and readahead".

Over ossmount-testserver with 35 ms time-to-first-byte:
  - a 256 MiB object read sequentially with dd (bs=1M) gives exactly its bytes, and the server
    sees ranged GETs of the part size (--prefetch-unit), each part once;
  - 16 (and 64) concurrent sequential readers of large files with --max-memory 64MiB: the
    daemon's peak RSS (VmHWM) stays under its baseline right after mounting + 64 MiB + 64 MiB;
  - random preads are byte-exact;
  - random records read through one shared memory mapping by several processes (as DataLoader
    workers read an Arrow file or a numpy.memmap their Dataset mapped) are byte-exact and
    cost about what the kernel's read-around asked for, not a part per record;
  - readers sharing one descriptor (forked processes reading records of several MiB, threads
    reading two halves of a file) each keep their own run: growing pieces and a window, not
    a GET per kernel read;
  - with the server's bandwidth capped, a read is answered once its own bytes arrived, before
    its part's GET completes; a reader that waits for the part fetched ahead of it gets
    more parts in flight at once (a stall doubles its window); and under truncated and reset
    bodies as well the bytes are exact (a retry continues the bytes already handed out), and
    a retry asks only for the bytes still missing.
No wall-clock thresholds.
"""
import concurrent.futures
import hashlib
import json
import mmap
import os
import random
import re
import shutil
import subprocess
import tempfile
import unittest
import urllib.parse
import urllib.request

import harness

MiB = 1 << 20
BIG_SIZE = 256 * MiB
READERS = 16
READER_FILE_SIZE = 48 * MiB
SPARSE_SIZE = 4096 * MiB


def write_random(path, size, seed):
    rng = random.Random(seed)
    h = hashlib.sha256()
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 4 * MiB)
            block = rng.randbytes(n)
            h.update(block)
            f.write(block)
            left -= n
    return h.hexdigest()


def vm_hwm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM for pid %d" % pid)


def sha256_read(path, chunk):
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


class ReadaheadTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="readahead-data-")
        bucket = os.path.join(cls.root, "bucket")
        os.makedirs(os.path.join(bucket, "many"))
        cls.big = os.path.join(bucket, "big.bin")
        cls.big_digest = write_random(cls.big, BIG_SIZE, 1)
        # 4 GiB, sparse: 4 KiB of random bytes at every MiB, the rest holes. Large enough
        # that the kernel's read-around of random records seldom lands on pages it read.
        cls.sparse = os.path.join(bucket, "sparse.bin")
        rng = random.Random(3)
        with open(cls.sparse, "wb") as f:
            f.truncate(SPARSE_SIZE)
            for off in range(0, SPARSE_SIZE, MiB):
                os.pwrite(f.fileno(), rng.randbytes(4096), off + rng.randrange(MiB - 4096))
        cls.many = {}
        for i in range(READERS):
            name = "many/f%02d.bin" % i
            cls.many[name] = write_random(os.path.join(bucket, name),
                                          READER_FILE_SIZE + i * 4099, 100 + i)
        cls.server = harness.TestServer(cls.root, bucket="bucket", args=["--ttfb-ms", "35"])

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.root, ignore_errors=True)

    def read_ahead_kb(self, mountpoint):
        dev = os.stat(mountpoint).st_dev
        with open("/sys/class/bdi/%d:%d/read_ahead_kb" % (os.major(dev), os.minor(dev))) as f:
            return int(f.read())

    def test_kernel_readahead_is_set_on_the_mount(self):
        # --kernel-readahead raises the mount's bdi readahead after INIT: by default 1 MiB
        # (at most --max-memory/64) with --metadata-ttl indefinite, else the kernel's own
        # 128 KiB; a value given is used as it is.
        cases = [(["--metadata-ttl", "indefinite"], 1024),
                 (["--metadata-ttl", "indefinite", "--max-memory", "32MiB"], 128),
                 ([], 128),
                 (["--kernel-readahead", "8MiB"], 8192),
                 (["--metadata-ttl", "indefinite", "--kernel-readahead", "0"], 128)]
        for args, expected in cases:
            m = harness.Mount(self.server, args=args)
            try:
                # The value is written once the mount answers, after the mount table shows it
                # (where harness.Mount stops waiting): wait for the daemon to say it serves.
                harness.wait_for(lambda: "; serving" in m.output(), 30, "the daemon to serve")
                self.assertEqual(self.read_ahead_kb(m.mountpoint), expected, args)
            finally:
                m.close()

    def test_sequential_dd_uses_part_sized_ranged_gets(self):
        part = 8 * MiB
        m = harness.Mount(self.server, args=["--prefetch-unit", "8MiB", "--kernel-readahead",
                                             "16MiB"])
        try:
            self.assertEqual(os.stat(m.path("big.bin")).st_size, BIG_SIZE)
            self.server.reset_stats()
            dd = subprocess.Popen(["dd", "if=" + m.path("big.bin"), "bs=1M", "status=none"],
                                  stdout=subprocess.PIPE)
            h = hashlib.sha256()
            with dd.stdout:
                while True:
                    b = dd.stdout.read(MiB)
                    if not b:
                        break
                    h.update(b)
            self.assertEqual(dd.wait(), 0)
            self.assertEqual(h.hexdigest(), self.big_digest)
            stats = self.server.stats()
            parts = BIG_SIZE // part
            # Every part once. The kernel's readahead requests run concurrently and a few can
            # arrive long after the reads beyond them (stragglers); each of those costs one
            # GET of just its bytes (at most 1 MiB, the kernel's largest read), never a part.
            self.assertGreaterEqual(stats["GET_RANGE"], parts, stats)
            self.assertLessEqual(stats["GET_RANGE"], parts + 16, stats)
            self.assertEqual(stats["GET_RANGE"], stats["GET"], stats)
            self.assertEqual(stats["HEAD"], 0, stats)
            self.assertGreaterEqual(stats["bytes_sent"], BIG_SIZE)
            # Bodies are whole parts (plus straggler reads): about part_size per part GET.
            stragglers = stats["GET_RANGE"] - parts
            self.assertLessEqual(stats["bytes_sent"],
                                 BIG_SIZE + 4 * part + stragglers * MiB + stats["GET"] * 4096)
        finally:
            m.close()

    def test_random_preads_are_byte_exact(self):
        m = harness.Mount(self.server)
        try:
            rng = random.Random(5)
            with open(self.big, "rb") as src, open(m.path("big.bin"), "rb", buffering=0) as f:
                fd = f.fileno()
                for _ in range(300):
                    off = rng.randrange(BIG_SIZE + 1000)
                    size = rng.choice([1, 4096, 65536, 131072, 3 * MiB + 17,
                                       rng.randrange(1, 2 * MiB)])
                    src.seek(off)
                    self.assertEqual(os.pread(fd, size, off), src.read(size),
                                     "offset %d size %d" % (off, size))
        finally:
            m.close()

    def read_mapped_records(self, args, records, workers=8, record_size=100 * 1000,
                            mode="mmap"):
        """Reads `records` random records of sparse.bin through one descriptor (and, for
        mode "mmap", one mapping) shared by `workers` forked processes, by slices of the
        mapping or by os.pread (mode "pread"); returns the server's counters. One record per
        16 MiB slot, so no two records are near enough to look like one run."""
        rng = random.Random(17)
        slots = rng.sample(range(1, SPARSE_SIZE // (16 * MiB) - 1), records)
        offsets = [slot * 16 * MiB + rng.randrange(16 * MiB - record_size) for slot in slots]
        m = harness.Mount(self.server, args=args)
        try:
            with open(m.path("sparse.bin"), "rb") as f, open(self.sparse, "rb") as src:
                mapping = (mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                           if mode == "mmap" else None)

                def record(o):
                    if mapping is not None:
                        return mapping[o:o + record_size]
                    return os.pread(f.fileno(), record_size, o)

                self.server.reset_stats()
                pids = []
                for w in range(workers):
                    pid = os.fork()
                    if pid == 0:  # a worker: compares its records, exits 0 if all are right
                        ok = all(record(o) == os.pread(src.fileno(), record_size, o)
                                 for o in offsets[w::workers])
                        os._exit(0 if ok else 1)
                    pids.append(pid)
                statuses = [os.waitpid(pid, 0)[1] for pid in pids]
                stats = self.server.stats()
                if mapping is not None:
                    mapping.close()
            self.assertEqual(statuses, [0] * workers, "a worker read wrong bytes")
            return stats
        finally:
            m.close()

    def test_random_records_through_a_shared_mapping(self):
        records = 80
        # A finite TTL: the kernel's own 128 KiB read-around per page fault, two or three
        # reads per record. Before short runs, the read after the read-around opened a window
        # and fetched an 8 MiB part for each record (7.6 MB per record measured).
        stats = self.read_mapped_records([], records)
        print("128 KiB kernel readahead: %d GETs, %d bytes per record"
              % (stats["GET"], stats["bytes_sent"] // records))
        self.assertEqual(stats["HEAD"], 0, stats)
        self.assertLessEqual(stats["bytes_sent"], records * MiB, stats)
        # An indefinite TTL: the default kernel readahead (1 MiB) is read around every fault:
        # about one 1 MiB GET per record (about 16 MB per record with the old 16 MiB default).
        stats = self.read_mapped_records(["--metadata-ttl", "indefinite"], records)
        print("1 MiB kernel readahead: %d GETs, %d bytes per record"
              % (stats["GET"], stats["bytes_sent"] // records))
        self.assertLessEqual(stats["bytes_sent"], records * 2 * MiB, stats)

    def test_processes_sharing_a_descriptor_read_multi_mib_records_in_growing_pieces(self):
        # The kernel's 128 KiB reads (a finite TTL) of 4 MiB records, 8 processes at once on
        # one descriptor. With one run per open file every read was random, a GET each: 34
        # GETs per record measured. Each worker's run: the first read, then pieces of 256 KiB
        # doubling to 4 MiB, about 6 GETs.
        records = 40
        stats = self.read_mapped_records([], records, record_size=4 * MiB, mode="pread")
        print("4 MiB records by pread on a shared descriptor: %.1f GETs, %d bytes per record"
              % (stats["GET"] / records, stats["bytes_sent"] // records))
        self.assertEqual(stats["HEAD"], 0, stats)
        self.assertLessEqual(stats["GET"], records * 10, stats)
        self.assertLessEqual(stats["bytes_sent"], records * 3 * 4 * MiB, stats)

    def test_threads_reading_two_halves_through_one_descriptor(self):
        # Two threads, one open file, each reading its half of big.bin sequentially in 1 MiB
        # preads (a parallel copy): each run gets its own window once it covers a part (the
        # second after pieces up to a part). One run per open file made every read random (a
        # GET per 128 KiB kernel read); one window per file left the second reader waiting
        # for each of its parts (every part of its half a demand part).
        m = harness.Mount(self.server)
        try:
            half = BIG_SIZE // 2
            with open(m.path("big.bin"), "rb", buffering=0) as f:
                self.server.reset_stats()

                def read_half(start):
                    h = hashlib.sha256()
                    for off in range(start, start + half, MiB):
                        h.update(os.pread(f.fileno(), MiB, off))
                    return h.digest()

                before = json.loads(harness.stats_json(m.mountpoint).stdout)
                with concurrent.futures.ThreadPoolExecutor(2) as pool:
                    first, second = pool.map(read_half, [0, half])
                stats = self.server.stats()
                after = json.loads(harness.stats_json(m.mountpoint).stdout)
            with open(self.big, "rb") as src:
                self.assertEqual(hashlib.sha256(src.read(half)).digest(), first)
                self.assertEqual(hashlib.sha256(src.read(half)).digest(), second)
            demand = (harness.metric(after, "counters", "ossmount_parts_total", source="demand")
                      - harness.metric(before, "counters", "ossmount_parts_total",
                                       source="demand"))
            print("two halves through one descriptor: %d GETs, %d bytes, %d demand parts"
                  % (stats["GET"], stats["bytes_sent"], demand))
            # Each reader waits for its first parts (and the second for its pieces); then
            # both are read ahead: 6-8 measured. With one window per file the second reader
            # waited for every piece of its half: 16.
            self.assertLessEqual(demand, 12)
            # 32 parts of 8 MiB, the second half's first pieces, and a few GETs of runs that
            # were interrupted (the other reader's first read closes the window once).
            self.assertLessEqual(stats["GET"], 100, stats)
            self.assertLessEqual(stats["bytes_sent"], BIG_SIZE * 3 // 2, stats)
        finally:
            m.close()

    def set_faults(self, **settings):
        query = urllib.parse.urlencode({k.replace("_", "-"): v for k, v in settings.items()})
        req = urllib.request.Request(self.server.endpoint + "/_ossmount/faults?" + query,
                                     method="POST")
        urllib.request.urlopen(req, timeout=10).read()

    def no_faults(self):
        self.set_faults(bandwidth_mbps=0, truncate_rate=0, reset_rate=0)

    def counter(self, mountpoint, name):
        doc = json.loads(harness.stats_json(mountpoint).stdout)
        return harness.metric(doc, "counters", name)

    def early_answers(self, mountpoint):
        return self.counter(mountpoint, "ossmount_early_answers_total")

    def test_a_read_is_answered_once_its_bytes_arrived_not_its_whole_part(self):
        # 80 Mbit/s per connection: an 8 MiB part takes about 0.8 s to arrive, the first
        # 128 KiB of it 13 ms. The first read waits for those, not for the part.
        m = harness.Mount(self.server)
        try:
            self.set_faults(bandwidth_mbps=80)
            before = self.early_answers(m.mountpoint)
            self.server.reset_stats()
            with open(m.path("big.bin"), "rb", buffering=0) as f:
                first = os.pread(f.fileno(), 128 * 1024, 0)
                in_flight = self.server.stats()
            early = self.early_answers(m.mountpoint) - before
            with open(self.big, "rb") as src:
                self.assertEqual(first, src.read(128 * 1024))
            print("first 128 KiB at 80 Mbit/s: %d early answers, server %s" % (early, in_flight))
            self.assertGreaterEqual(early, 1)
            # One part was asked for: the read did not fetch its bytes separately.
            self.assertEqual(in_flight["GET"], 1, in_flight)
        finally:
            self.no_faults()
            m.close()

    def test_a_reader_that_waits_for_readahead_gets_more_parts_in_flight(self):
        # 80 Mbit/s per connection: the reader outruns every part, so it waits for the part
        # fetched ahead of it (8 MiB, sent when the reader passed 7 MiB). Each such wait
        # doubles its window, so parts beyond the next one go out at once instead of one
        # more per part consumed: growth by consumption alone would have asked for 2 parts
        # (0 and 1) by the time the reader is at 12 MiB.
        m = harness.Mount(self.server)
        try:
            self.set_faults(bandwidth_mbps=80)
            before = self.counter(m.mountpoint, "ossmount_readahead_stalls_total")
            self.server.reset_stats()
            with open(m.path("big.bin"), "rb", buffering=0) as f:
                head = b"".join(os.pread(f.fileno(), MiB, off) for off in range(0, 12 * MiB, MiB))
                asked = self.server.stats()
            stalls = self.counter(m.mountpoint, "ossmount_readahead_stalls_total") - before
            with open(self.big, "rb") as src:
                self.assertEqual(head, src.read(12 * MiB))
            print("first 12 MiB at 80 Mbit/s: %d stalls, server %s" % (stalls, asked))
            self.assertGreaterEqual(stalls, 1)
            self.assertGreaterEqual(asked["GET"], 4, asked)
        finally:
            self.no_faults()
            m.close()

    def test_a_reader_past_2_mib_that_waits_for_its_first_part_asks_for_the_next(self):
        # 80 Mbit/s per connection: 8 MiB part 0 takes about 0.8 s, and every read waits for
        # its bytes. A reader of the file's first MiB costs that one part; a reader 3 MiB in
        # that waits for it is a stall and part 1 goes out, where growth by consumption alone
        # would wait until the reader is past 4 MiB.
        m = harness.Mount(self.server)
        try:
            self.set_faults(bandwidth_mbps=80)
            for name, length, gets, stalls in (("sparse.bin", MiB, 1, 0),
                                               ("big.bin", 3 * MiB, 2, 1)):
                before = self.counter(m.mountpoint, "ossmount_readahead_stalls_total")
                self.server.reset_stats()
                with open(m.path(name), "rb", buffering=0) as f:
                    head = b"".join(os.pread(f.fileno(), MiB, off)
                                    for off in range(0, length, MiB))
                    asked = self.server.stats()
                counted = self.counter(m.mountpoint, "ossmount_readahead_stalls_total") - before
                with open(os.path.join(self.root, "bucket", name), "rb") as src:
                    self.assertEqual(head, src.read(length))
                print("first %d MiB of %s at 80 Mbit/s: %d stalls, server %s"
                      % (length // MiB, name, counted, asked))
                if stalls:
                    self.assertGreaterEqual(counted, stalls)
                    self.assertGreaterEqual(asked["GET"], gets, asked)
                else:
                    self.assertEqual(counted, 0)
                    self.assertEqual(asked["GET"], gets, asked)
        finally:
            self.no_faults()
            m.close()

    def test_truncated_and_reset_bodies_at_a_capped_bandwidth_give_exact_bytes(self):
        # Parts are handed out as they arrive; a body cut short is retried, and the retry must
        # continue the bytes already handed out (it checks they are the same), never rewrite
        # them or serve a mix.
        m = harness.Mount(self.server, args=["--retries", "20"])
        try:
            self.set_faults(bandwidth_mbps=800, truncate_rate=0.2, reset_rate=0.1)
            before = self.early_answers(m.mountpoint)
            self.server.reset_stats()
            self.assertEqual(sha256_read(m.path("big.bin"), MiB), self.big_digest)
            stats = self.server.stats()
            early = self.early_answers(m.mountpoint) - before
            faults = stats["faults"]
            print("256 MiB with truncated and reset bodies: %s, %d GETs, %d early answers"
                  % (faults, stats["GET"], early))
            self.assertGreater(faults.get("truncate", 0) + faults.get("reset", 0), 0)
            self.assertGreater(early, 0)
        finally:
            self.no_faults()
            m.close()
        self.assertNotIn("does not begin with the bytes", m.output())

    def test_a_retry_of_a_part_cut_short_asks_only_for_the_bytes_still_missing(self):
        # Half of all GET bodies are cut short (the server closes the connection partway).
        # A part's bytes are handed out as they arrive, so its retry asks only for the rest:
        # the server sends each byte about once. Asking for the whole part again would send,
        # per part, half a part for each cut: about 128 MiB more for the 256 MiB file.
        m = harness.Mount(self.server, args=["--retries", "20"])
        try:
            self.set_faults(truncate_rate=0.5)
            before = self.counter(m.mountpoint, "ossmount_request_resumed_bytes_total")
            self.server.reset_stats()
            self.assertEqual(sha256_read(m.path("big.bin"), MiB), self.big_digest)
            stats = self.server.stats()
            doc = json.loads(harness.stats_json(m.mountpoint).stdout)
            kept = harness.metric(doc, "counters", "ossmount_request_resumed_bytes_total",
                                  type="GET-range") - before
            view = subprocess.run([harness.OSSMOUNT, "stats", m.mountpoint, "--once"],
                                  capture_output=True, text=True, timeout=60, check=True).stdout
            self.no_faults()
            self.assertEqual(m.unmount(), 0, m.output()[-2000:])  # it logs its retries at exit
        finally:
            self.no_faults()
            m.close()
        cuts = stats["faults"].get("truncate", 0)
        print("256 MiB with half the bodies cut short: %d cuts, %d GETs, %d bytes sent, "
              "%d bytes not asked for again" % (cuts, stats["GET"], stats["bytes_sent"], kept))
        self.assertGreater(cuts, 8, stats)
        self.assertGreater(kept, 0)
        self.assertRegex(view, r"resumed retries: [0-9.]+ (B|[KMGT]iB) not fetched again")
        # The kernel's straggling reads cost at most 1 MiB each (see the dd test); 32 MiB
        # covers them, and is a quarter of what refetching whole parts would add.
        self.assertGreaterEqual(stats["bytes_sent"], BIG_SIZE)
        self.assertLessEqual(stats["bytes_sent"], BIG_SIZE + 32 * MiB, stats)
        log = m.output()
        resumed = re.search(r"resumed (\d+) \((\d+) bytes not fetched again\)", log)
        self.assertIsNotNone(resumed, log[-2000:])
        self.assertGreater(int(resumed.group(1)), 0)

    def test_concurrent_sequential_readers_stay_within_memory(self):
        m = harness.Mount(self.server, args=["--max-memory", "64MiB"])
        try:
            for name in self.many:  # metadata in, before the baseline
                os.stat(m.path(name))
            baseline = vm_hwm_kib(m.daemon_pid())
            with concurrent.futures.ThreadPoolExecutor(READERS) as pool:
                digests = dict(zip(self.many, pool.map(
                    lambda name: sha256_read(m.path(name), MiB), self.many)))
            self.assertEqual(digests, self.many)
            peak = vm_hwm_kib(m.daemon_pid())
            limit = baseline + (64 + 64) * 1024
            print("VmHWM baseline %d KiB, peak %d KiB, limit %d KiB" % (baseline, peak, limit))
            self.assertLess(peak, limit)
        finally:
            m.close()

    def test_64_concurrent_readers_stay_within_memory(self):
        # Four opens of each file: 64 readers, each with its own window.
        m = harness.Mount(self.server, args=["--max-memory", "64MiB"])
        try:
            for name in self.many:
                os.stat(m.path(name))
            baseline = vm_hwm_kib(m.daemon_pid())
            names = list(self.many) * 4
            with concurrent.futures.ThreadPoolExecutor(len(names)) as pool:
                digests = list(pool.map(lambda name: sha256_read(m.path(name), MiB), names))
            self.assertEqual(digests, [self.many[n] for n in names])
            peak = vm_hwm_kib(m.daemon_pid())
            limit = baseline + (64 + 64) * 1024
            print("VmHWM baseline %d KiB, peak %d KiB, limit %d KiB" % (baseline, peak, limit))
            self.assertLess(peak, limit)
        finally:
            m.close()


if __name__ == "__main__":
    harness.main()
