"""Files opened by path, never listed by the program, through a real mount.

Runs with Debian's /usr/bin/python3 (torch). Many datasets never list a directory: they read
their file names from an annotation or list file (COCO, a train.txt of paths) and open each
one. The daemon then gets a lookup for every name that no listing answers; it probes the
name (one LIST request), and once the third name of a directory has been probed it lists
the directory in the background, so the rest of that directory's names are answered
without a request (docs/SEMANTICS.md "Metadata cache"). Checks, behind a 10 ms time to
first byte: a torch DataLoader over such a dataset reads every byte right with one GET per
file and a handful of LISTs per directory instead of one per file; a flat directory of
2,500 names (3 listing pages) likewise; `ossmount stats` counts the listings; a manifest
mount, whose lookups cost no request, lists nothing for them; and lookups of names in one
directory reach the server together, not one at a time (the kernel's per-directory lock,
which libfuse 3.14 leaves on, is lifted in the INIT reply).
"""
import concurrent.futures
import json
import os
import random
import subprocess
import tempfile
import threading
import unittest

import harness
import torch.utils.data

CLASSES = 8
PER_CLASS = 40
FLAT = 2500


class PathListDataset(torch.utils.data.Dataset):
    """What a dataset built from a list file does: opens each path, never lists."""

    def __init__(self, root, paths):
        self.root = root
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(os.path.join(self.root, self.paths[i]), "rb") as f:
            return self.paths[i], f.read()


def make_tree(root):
    rng = random.Random(11)
    files = {}

    def put(rel, size):
        data = bytes(rng.getrandbits(8) for _ in range(size))
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        files[rel] = data

    for c in range(CLASSES):
        for i in range(PER_CLASS):
            put("train/c%02d/img%03d.jpg" % (c, i), rng.randrange(100, 2000))
    for i in range(FLAT):
        put("flat/%06d.jpg" % i, rng.randrange(10, 200))
    return files


def read_all(mountpoint, paths, workers):
    """Every path through a DataLoader with `workers` processes, in a shuffled order."""
    loader = torch.utils.data.DataLoader(PathListDataset(mountpoint, paths), batch_size=None,
                                         shuffle=True, num_workers=workers)
    return dict(loader)


class ByPathTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="by-path-")
        cls.files = make_tree(os.path.join(cls.root, "bypath"))
        cls.server = harness.TestServer(cls.root, bucket="bypath", args=["--ttfb-ms", "10"])

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        subprocess.run(["rm", "-rf", cls.root], check=False)

    def read_by_path(self, args, paths, workers):
        """Mounts with `args`, reads `paths` through a DataLoader with `workers`, unmounts.
        Returns what was read, the server's requests during the read, the lookup listings
        (ossmount_lookup_listings_total by result) and `ossmount stats`."""
        mount = harness.Mount(self.server, args=args)
        try:
            self.server.reset_stats()
            got = read_all(mount.mountpoint, paths, workers)
            stats = self.server.stats()
            doc = json.loads(harness.stats_json(mount.mountpoint).stdout)
            listings = {r: harness.metric(doc, "counters", "ossmount_lookup_listings_total",
                                          result=r)
                        for r in ("listed", "abandoned", "failed")}
            text = subprocess.run([harness.OSSMOUNT, "stats", mount.mountpoint],
                                  capture_output=True, text=True, check=True).stdout
        finally:
            mount.close()
        return got, stats, listings, text

    def test_a_file_list_dataset_costs_one_get_per_file_and_few_lists(self):
        # The default finite TTL (60 s) and the dataset setting.
        for args in ([], ["--metadata-ttl", "indefinite"]):
            with self.subTest(args=args):
                paths = sorted(p for p in self.files if p.startswith("train/"))
                got, stats, listings, text = self.read_by_path(args, paths, workers=4)
                self.assertEqual(set(got), set(paths))
                for p in paths:
                    self.assertEqual(got[p], self.files[p], p)
                self.assertEqual(stats["GET"], len(paths))
                self.assertEqual(stats.get("HEAD", 0), 0)
                # Each class directory, and train/ itself, listed once (one page each) after
                # its third probe. Without that: a probe per file, 320.
                self.assertEqual(listings, {"listed": CLASSES + 1, "abandoned": 0, "failed": 0})
                # Probes: 3 per directory, plus those the 4 workers sent while its listing was
                # on its way; nowhere near one per file.
                self.assertLessEqual(stats["LIST"], (CLASSES + 1) * 8, stats)
                print("%s: %d LISTs for %d files" % (args, stats["LIST"], len(paths)))
                self.assertIn("%d listed, 0 abandoned (the lookups stopped), 0 failed" %
                              (CLASSES + 1), text)

    def test_a_flat_directory_is_listed_behind_its_probes(self):
        paths = sorted(p for p in self.files if p.startswith("flat/"))
        got, stats, listings, _ = self.read_by_path([], paths, workers=8)
        self.assertEqual(len(got), FLAT)
        for p in paths:
            self.assertEqual(got[p], self.files[p], p)
        self.assertEqual(stats["GET"], FLAT)
        # flat/ (one name was probed in the root: not listed).
        self.assertEqual(listings, {"listed": 1, "abandoned": 0, "failed": 0})
        # 3 pages, and the probes sent while they came: a tenth of the names at most.
        self.assertLessEqual(stats["LIST"], FLAT // 10, stats)
        print("flat directory: %d LISTs for %d files" % (stats["LIST"], FLAT))

    def test_lookups_in_one_directory_reach_the_server_together(self):
        # libfuse 3.14 never tells the kernel that lookups may run in parallel, and the kernel
        # then sends one LOOKUP per directory at a time; the daemon amends its INIT reply.
        # Under TTL 0 every stat is a probe: 16 at once, each held 300 ms by the server,
        # open 16 connections when they overlap and reuse one when they come one by one.
        slow = harness.TestServer(self.root, bucket="bypath", args=["--ttfb-ms", "300"])
        mount = harness.Mount(slow, args=["--metadata-ttl", "0"])
        try:
            names = sorted(p for p in self.files if p.startswith("flat/"))[:16]
            os.stat(mount.path("flat"))
            slow.reset_stats()
            barrier = threading.Barrier(len(names))

            def stat(p):
                barrier.wait()
                return os.stat(mount.path(p)).st_size

            with concurrent.futures.ThreadPoolExecutor(len(names)) as pool:
                sizes = list(pool.map(stat, names))
            stats = slow.stats()
            log = mount.output()
        finally:
            mount.close()
            slow.stop()
        self.assertEqual(sizes, [len(self.files[p]) for p in names])
        self.assertIn("lookups and readdirs in one directory run in parallel", log)
        self.assertGreaterEqual(stats["connections"], 8, stats)

    def test_a_manifest_mount_lists_nothing_for_lookups(self):
        paths = sorted(p for p in self.files if p.startswith("train/c00/"))
        manifest = os.path.join(self.root, "manifest.tsv")
        with open(manifest, "w") as f:
            for p in paths:
                f.write("%s\t%d\n" % (p, len(self.files[p])))
        got, stats, listings, _ = self.read_by_path(["--manifest", manifest], paths, workers=2)
        self.assertEqual(got, {p: self.files[p] for p in paths})
        self.assertEqual(stats.get("LIST", 0), 0)
        self.assertEqual(listings, {"listed": 0, "abandoned": 0, "failed": 0})


if __name__ == "__main__":
    harness.main()
