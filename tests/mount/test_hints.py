"""Sampler-order hints through a real mount (python/ossmount_hints.py + the "hints" control
command).

The server answers every request after a high TTFB (--ttfb-ms). After ImageFolder-style
listings, the epoch's order is sent to the daemon; readers then read in that order with
several workers. Every byte must match the source, the server must see exactly one GET per
file (a read of a file whose prefetch is in flight joins it), and the daemon's status must
show that the files were prefetched (not read on demand). A DataLoader over ImageFolder with
HintedSampler does the same, and so does examples/train_imagefolder.py, run as a user runs
it. Malformed hint requests are refused with a clear error.
"""
import concurrent.futures
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import harness

sys.path.insert(0, os.path.join(harness.SOURCE_DIR, "python"))
import ossmount_hints  # noqa: E402


# One rank of a distributed job: argv = python dir, dataset root, rank, a directory where
# the ranks meet. It sends its order when its DataLoader starts, waits until the other
# rank has sent too (so both lists are live at once), reads its share, and prints its pid,
# how many paths it sent and the digest of each file it read.
RANK_SCRIPT = r"""
import hashlib, json, os, sys, time
sys.path.insert(0, sys.argv[1])
import torch, torchvision
import ossmount_hints
root, rank, meet = sys.argv[2], int(sys.argv[3]), sys.argv[4]

def digest(path):  # the loader: each sample is its path and the digest of its bytes
    with open(path, "rb") as f:
        return path, hashlib.sha256(f.read()).hexdigest()

dataset = torchvision.datasets.ImageFolder(root, loader=digest)
shard = torch.utils.data.distributed.DistributedSampler(dataset, num_replicas=2, rank=rank,
                                                        shuffle=True, seed=3)
sampler = ossmount_hints.HintedSampler(shard, dataset)
data = torch.utils.data.DataLoader(dataset, sampler=sampler, batch_size=4, num_workers=2,
                                   collate_fn=lambda b: b)
batches = iter(data)  # starts the workers, which draws the order: the hints are sent
open(os.path.join(meet, "sent.%d" % rank), "w").close()
deadline = time.time() + 120
while not os.path.exists(os.path.join(meet, "sent.%d" % (1 - rank))):
    if time.time() > deadline:
        sys.exit("the other rank never sent its hints")
    time.sleep(0.02)
digests = {}
for batch in batches:
    for (path, d), _ in batch:
        digests[os.path.relpath(path, os.path.dirname(root))] = d
print(json.dumps({"pid": os.getpid(), "sent": sampler.sent, "digests": digests}))
"""


class HintsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.src = harness.ensure_dataset("imagefolder", "hints-images", "--classes", "4",
                                         "--per-class", "30", "--seed", "11")
        cls.manifest = harness.read_manifest(cls.src)
        cls.server = harness.TestServer(os.path.dirname(cls.src), bucket="hints-images",
                                        args=["--ttfb-ms", "30"])

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def mount(self, *extra):
        return harness.Mount(self.server, args=["--metadata-ttl", "indefinite"] + list(extra))

    def list_like_imagefolder(self, m):
        for d in sorted({os.path.dirname(rel) for rel in self.manifest}):
            os.listdir(m.path(d))

    def status(self, m):
        return ossmount_hints._call(m.mountpoint, {"command": "warmup-status"})

    def test_hinted_epoch_one_get_per_file_and_every_byte_right(self):
        m = self.mount()
        try:
            self.list_like_imagefolder(m)
            order = sorted(self.manifest)
            random.Random(5).shuffle(order)
            self.server.reset_stats()
            sent = ossmount_hints.send_hints([m.path(rel) for rel in order], m.mountpoint)
            self.assertEqual(sent, len(order))

            def read(rel):
                return rel, harness.sha256_file(m.path(rel))

            # 4 workers, each on its own contiguous batch, like a DataLoader.
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                for rel, digest in pool.map(read, order):
                    self.assertEqual(digest, self.manifest[rel][1], rel)
            stats = self.server.stats()
            self.assertEqual(stats.get("GET", 0), len(order), stats)
            self.assertEqual(stats.get("HEAD", 0), 0, stats)
            hints = self.status(m)["hints"]
            self.assertEqual(hints["files"], len(order), hints)
            self.assertEqual(hints["read"], len(order), hints)
            # Most files came from the prefetcher, not from on-demand GETs.
            self.assertGreaterEqual(hints["fetched"], len(order) // 2, hints)
            self.assertEqual(hints["outstanding_bytes"], 0, hints)
            self.assertEqual(m.unmount(), 0, m.output())
        finally:
            m.close()

    def test_dataloader_with_hinted_sampler(self):
        import torch
        import torchvision

        def loader(path):
            with open(path, "rb") as f:
                return f.read()

        m = self.mount()
        try:
            dataset = torchvision.datasets.ImageFolder(m.path("train"), loader=loader)
            self.server.reset_stats()
            sampler = ossmount_hints.HintedSampler(torch.utils.data.RandomSampler(dataset),
                                                   dataset)
            data = torch.utils.data.DataLoader(dataset, sampler=sampler, batch_size=8,
                                               num_workers=4, collate_fn=lambda b: b)
            import hashlib
            seen = 0
            for batch in data:
                for raw, label in batch:
                    digest = hashlib.sha256(raw).hexdigest()
                    self.assertIn(digest, {d for _, d in self.manifest.values()})
                    seen += 1
            self.assertEqual(seen, len(self.manifest))
            self.assertEqual(sampler.sent, len(self.manifest))
            stats = self.server.stats()
            self.assertEqual(stats.get("GET", 0), len(self.manifest), stats)
            hints = self.status(m)["hints"]
            self.assertGreaterEqual(hints["fetched"], len(self.manifest) // 2, hints)
        finally:
            m.close()

    def test_example_training_loop_runs_over_the_mount(self):
        # examples/train_imagefolder.py, which the README points users to: a real training
        # loop (decode, augment, forward, backward) with HintedSampler, as a user runs it.
        m = self.mount()
        try:
            self.server.reset_stats()
            r = subprocess.run(
                ["/usr/bin/python3",
                 os.path.join(harness.SOURCE_DIR, "examples", "train_imagefolder.py"),
                 m.path("train"), "--epochs", "2", "--workers", "2", "--batch-size", "16",
                 "--image-size", "32"],
                capture_output=True, text=True, timeout=600)
            print("\n" + r.stdout + r.stderr[-2000:])
            self.assertEqual(r.returncode, 0, r.stderr[-3000:])
            n = len(self.manifest)
            epochs = re.findall(r"(?m)^epoch (\d): (\d+) images in .*, loss ([0-9.]+), "
                                r"hints sent: (\d+)$", r.stdout)
            self.assertEqual([(e, int(k), int(h)) for e, k, _, h in epochs],
                             [("1", n, n), ("2", n, n)], r.stdout)
            # Each epoch's order reached the daemon and was read to its end; the second
            # epoch came from the kernel's page cache (--metadata-ttl indefinite): one GET
            # per file in all, and one more only for a file whose pages the kernel dropped
            # in between (this VM's DAMON reclaim does, now and then), read on demand.
            hints = self.status(m)["hints"]
            self.assertEqual(hints["files"], n, hints)
            self.assertEqual(hints["read"], n, hints)
            doc = json.loads(harness.stats_json(m.mountpoint).stdout)
            misses = harness.metric(doc, "counters", "ossmount_page_cache_reopens_total",
                                    result="miss")
            self.assertLess(misses, n // 4)
            self.assertEqual(self.server.stats().get("GET", 0), n + misses)
        finally:
            m.close()

    def test_relative_dataset_root_is_hinted_where_the_loader_reads(self):
        # ImageFolder("mnt/train") keeps paths relative to the current directory; the hints
        # must name those files (not "mnt/train/..." under the mount's root, which would
        # prefetch nothing and probe the server for every name).
        import torch
        import torchvision

        m = self.mount()
        cwd = os.getcwd()
        try:
            os.chdir(os.path.dirname(m.mountpoint))
            root = os.path.join(os.path.basename(m.mountpoint), "train")
            dataset = torchvision.datasets.ImageFolder(root, loader=harness.sha256_file)
            self.assertFalse(os.path.isabs(dataset.samples[0][0]))
            self.server.reset_stats()
            sampler = ossmount_hints.HintedSampler(torch.utils.data.RandomSampler(dataset),
                                                   dataset)
            order = list(sampler)
            self.assertEqual(sampler.sent, len(self.manifest))
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                digests = list(pool.map(lambda i: dataset[i][0], order))
            by_path = {os.path.relpath(p, root): d for p, d in
                       ((dataset.samples[i][0], d) for i, d in zip(order, digests))}
            self.assertEqual(by_path, {os.path.relpath(rel, "train"): digest
                                       for rel, (_, digest) in self.manifest.items()})
            stats = self.server.stats()
            self.assertEqual(stats.get("GET", 0), len(self.manifest), stats)
            self.assertEqual(stats.get("LIST", 0), 0, stats)
            self.assertEqual(stats.get("HEAD", 0), 0, stats)
            hints = self.status(m)["hints"]
            self.assertGreaterEqual(hints["fetched"], len(self.manifest) // 2, hints)
        finally:
            os.chdir(cwd)
            m.close()

    def test_distributed_ranks_are_each_prefetched(self):
        # Two ranks of a distributed job (one process each, as torchrun starts them), each
        # with HintedSampler over a DistributedSampler: each rank's order is followed, not
        # only the last one sent. Once both have exited, the next list anyone sends drops
        # theirs.
        m = self.mount()
        work = tempfile.mkdtemp(prefix="ossmount-ranks-")
        try:
            torchvision_root = m.path("train")
            self.server.reset_stats()
            ranks = [subprocess.Popen(
                [sys.executable, "-c", RANK_SCRIPT, os.path.join(harness.SOURCE_DIR, "python"),
                 torchvision_root, str(rank), work],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for rank in (0, 1)]
            results = []
            for p in ranks:
                out, err = p.communicate(timeout=300)
                self.assertEqual(p.returncode, 0, err)
                results.append(json.loads(out))
            digests = {}
            for r in results:
                self.assertEqual(r["sent"], len(self.manifest) // 2, r)
                digests.update(r["digests"])
            self.assertEqual(digests, {rel: digest for rel, (_, digest) in self.manifest.items()})
            stats = self.server.stats()
            self.assertEqual(stats.get("GET", 0), len(self.manifest), stats)
            self.assertEqual(stats.get("HEAD", 0), 0, stats)
            hints = self.status(m)["hints"]
            senders = {s["pid"]: s for s in hints["senders"]}
            self.assertEqual(set(senders), {r["pid"] for r in results}, hints)
            for s in senders.values():
                self.assertEqual(s["files"], len(self.manifest) // 2, hints)
                self.assertEqual(s["read"], s["files"], hints)
                # Most of each rank's files came from the prefetcher.
                self.assertGreaterEqual(s["fetched"], s["files"] // 2, hints)
                self.assertEqual(s["outstanding_bytes"], 0, hints)
            # `ossmount warmup --status` shows each rank's list.
            shown = subprocess.run([harness.OSSMOUNT, "warmup", "--status", m.mountpoint],
                                   capture_output=True, text=True, timeout=30)
            self.assertEqual(shown.returncode, 0, shown.stderr)
            self.assertIn("hints, all lists: %d file(s)" % len(self.manifest), shown.stdout)
            for r in results:
                self.assertIn("from pid %d: %d file(s) in the list, %d read"
                              % (r["pid"], r["sent"], r["sent"]), shown.stdout)
            # Both ranks have exited: the next list (here an empty one) drops their lists.
            self.assertEqual(ossmount_hints.send_hints([], m.mountpoint), 0)
            self.assertEqual(self.status(m)["hints"]["senders"], [])
            self.assertEqual(m.unmount(), 0, m.output())
        finally:
            shutil.rmtree(work, ignore_errors=True)
            m.close()

    def hinted_epoch(self, m, seed):
        """Sends a shuffled order as hints and reads it with 4 threads, checking every byte.
        Returns the GETs the server saw, the daemon's page-cache reopen misses (a READ of a
        file the kernel was given reached the daemon) and the hint status, once the kernel
        has released every handle and no hinted fetch is in flight."""
        order = sorted(self.manifest)
        random.Random(seed).shuffle(order)
        before = json.loads(harness.stats_json(m.mountpoint).stdout)
        self.server.reset_stats()
        sent = ossmount_hints.send_hints([m.path(rel) for rel in order], m.mountpoint)
        self.assertEqual(sent, len(order))
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            for rel, digest in pool.map(lambda rel: (rel, harness.sha256_file(m.path(rel))),
                                        order):
                self.assertEqual(digest, self.manifest[rel][1], rel)
        deadline = time.time() + 10
        hints = self.status(m)["hints"]
        while (hints["read"] < len(order) or hints["in_flight"] > 0) and time.time() < deadline:
            time.sleep(0.05)  # releases reach the daemon after close() returns
            hints = self.status(m)["hints"]
        after = json.loads(harness.stats_json(m.mountpoint).stdout)
        name = "ossmount_page_cache_reopens_total"
        misses = (harness.metric(after, "counters", name, result="miss") -
                  harness.metric(before, "counters", name, result="miss"))
        return self.server.stats().get("GET", 0), misses, hints

    def test_epochs_on_one_mount_fetch_only_what_the_page_cache_dropped(self):
        # With an indefinite TTL the kernel keeps the pages of every file read (keep_cache),
        # so the reads of a second epoch on the same mount mostly never reach the daemon.
        # Its hinted order must not fetch those files again (GETs nobody would read), and
        # the list must still follow the reader to its end. Once the pages are gone (dropped
        # here with POSIX_FADV_DONTNEED, as memory pressure would), the reopens' misses end
        # the daemon's trust in the page cache and the rest of the list is prefetched.
        m = self.mount()
        try:
            self.list_like_imagefolder(m)
            files = len(self.manifest)
            gets, misses, hints = self.hinted_epoch(m, seed=1)
            self.assertEqual(gets, files)
            self.assertEqual(misses, 0)  # nothing was in the page cache yet

            gets, misses, hints = self.hinted_epoch(m, seed=2)
            self.assertLess(misses, files // 4, hints)  # the page cache held (nearly) all
            self.assertEqual(gets, misses, hints)  # a GET only for what it no longer held
            self.assertEqual(hints["read"], files, hints)
            self.assertEqual(hints["fetched"], 0, hints)
            self.assertEqual(hints["page_cached"], files, hints)
            self.assertEqual(hints["outstanding_files"], 0, hints)
            shown = subprocess.run([harness.OSSMOUNT, "warmup", "--status", m.mountpoint],
                                   capture_output=True, text=True, timeout=30)
            self.assertIn("%d read, 0 prefetched, %d held by the page cache" % (files, files),
                          shown.stdout)

            for rel in self.manifest:
                fd = os.open(m.path(rel), os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)
            gets, misses, hints = self.hinted_epoch(m, seed=3)
            self.assertEqual(misses, files, hints)
            self.assertEqual(gets, files, hints)  # once each: on demand or prefetched
            self.assertEqual(hints["read"], files, hints)
            self.assertGreaterEqual(hints["fetched"], files // 2, hints)
            self.assertEqual(hints["outstanding_bytes"], 0, hints)
            self.assertEqual(m.unmount(), 0, m.output())
        finally:
            m.close()

    def test_bad_hint_requests_are_refused_clearly(self):
        m = self.mount()
        try:
            with self.assertRaisesRegex(RuntimeError, "absolute"):
                ossmount_hints._call(m.mountpoint, {"command": "hints", "paths": ["/etc/passwd"]})
            with self.assertRaisesRegex(RuntimeError, r"\.\."):
                ossmount_hints._call(m.mountpoint, {"command": "hints", "paths": ["a/../../x"]})
            with self.assertRaisesRegex(RuntimeError, "array"):
                ossmount_hints._call(m.mountpoint, {"command": "hints", "paths": "train"})
            with self.assertRaisesRegex(ValueError, "not inside"):
                ossmount_hints.send_hints(["/etc/passwd"], m.mountpoint)
            # An empty list clears the hints.
            self.assertEqual(ossmount_hints.send_hints([], m.mountpoint), 0)
        finally:
            m.close()

    def test_hints_naming_nothing_that_exists_cost_no_request(self):
        # Paths under a name the mount's root listing lacks (a wrong root, a typo) are known
        # absent from that listing: skipped with no probe, however many there are.
        m = self.mount()
        try:
            self.list_like_imagefolder(m)
            self.server.reset_stats()
            wrong = ["nowhere/" + rel for rel in sorted(self.manifest)]
            self.assertEqual(ossmount_hints.send_hints(wrong, m.mountpoint), len(wrong))
            hints = self.status(m)["hints"]
            for _ in range(100):  # the prefetcher works through them in the background
                if hints["next"] == len(wrong) and hints["in_flight"] == 0:
                    break
                time.sleep(0.05)
                hints = self.status(m)["hints"]
            self.assertEqual(hints["next"], len(wrong), hints)
            self.assertEqual(hints["fetched"], 0, hints)
            stats = self.server.stats()
            self.assertEqual(stats["requests"], 0, stats)
            # The real files are still read as usual.
            rel = sorted(self.manifest)[0]
            self.assertEqual(harness.sha256_file(m.path(rel)), self.manifest[rel][1])
        finally:
            m.close()


if __name__ == "__main__":
    harness.main()
