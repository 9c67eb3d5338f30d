"""List-ahead through a real mount: a walk's next directories are listed before it enters them.

Runs with Debian's /usr/bin/python3 (torchvision). A tree of 40 class directories behind a
20 ms time to first byte. Entering one class directory lists only it; entering a second one
(a walk) makes the daemon list the 38 after it in the background (--list-ahead, default 64);
torchvision's ImageFolder then scans the tree and reads every file. Checks (docs/SEMANTICS.md
"Tree"): the listings ahead reach the server before the walk asks for them; with or without
list-ahead, a whole walk lists every directory exactly once and sees every byte of the
source; --list-ahead 0 lists nothing ahead; `ossmount stats` shows the listings and inodes
the walk left in memory.
"""
import json
import os
import random
import tempfile
import time
import unittest

import harness
import torchvision

CLASSES = 40
PER_CLASS = 3


def raw_loader(path):
    with open(path, "rb") as f:
        return f.read()


def make_tree(root):
    rng = random.Random(7)
    files = {}
    for c in range(CLASSES):
        d = os.path.join(root, "train", "c%02d" % c)
        os.makedirs(d)
        for i in range(PER_CLASS):
            data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(100, 3000)))
            with open(os.path.join(d, "img%d.jpg" % i), "wb") as f:
                f.write(data)
            files["train/c%02d/img%d.jpg" % (c, i)] = data
    return files


def lists(server):
    return server.stats().get("LIST", 0)


class ListAheadTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="list-ahead-")
        cls.files = make_tree(os.path.join(cls.root, "walk"))
        cls.server = harness.TestServer(cls.root, bucket="walk", args=["--ttfb-ms", "20"])

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def walk(self, *args):
        """Mounts with `args`, enters train/ and its first class directory; returns the LISTs
        the server saw a moment after that, then scans and reads the tree with ImageFolder
        and returns the LISTs of the whole walk."""
        mount = harness.Mount(self.server, args=["--metadata-ttl", "indefinite"] + list(args))
        try:
            train = mount.path("train")
            self.assertEqual(len(os.listdir(train)), CLASSES)
            self.server.reset_stats()
            names = ["img%d.jpg" % i for i in range(PER_CLASS)]
            self.assertEqual(sorted(os.listdir(os.path.join(train, "c00"))), names)
            time.sleep(0.5)  # anything started in the background reaches the server
            entered = lists(self.server)
            self.assertEqual(sorted(os.listdir(os.path.join(train, "c01"))), names)
            if args != ("--list-ahead", "0"):
                # A walk: the 38 directories after c01 are being listed; wait for them.
                harness.wait_for(lambda: lists(self.server) >= CLASSES, 30,
                                 "the listings ahead of the walk")
            else:
                time.sleep(0.5)
            after_entering = lists(self.server)
            started = time.monotonic()
            ds = torchvision.datasets.ImageFolder(train, loader=raw_loader)
            scan = time.monotonic() - started
            seen = {os.path.relpath(path, mount.mountpoint): ds[i][0]
                    for i, (path, _) in enumerate(ds.samples)}
            stats = self.server.stats()
            doc = json.loads(harness.stats_json(mount.mountpoint).stdout)
        finally:
            mount.close()
        print("\n%s: entering c00 %d LISTs, c01 too %d; ImageFolder scan %.2f s; %s" %
              (" ".join(args) or "default", entered, after_entering, scan, stats))
        self.assertEqual(ds.classes, ["c%02d" % c for c in range(CLASSES)])
        self.assertEqual(seen, self.files)
        self.assertEqual(stats.get("GET", 0), CLASSES * PER_CLASS, stats)
        self.assertEqual(stats.get("HEAD", 0), 0, stats)
        ahead = {r: harness.metric(doc, "counters", "ossmount_list_ahead_total", result=r)
                 for r in ("listed", "abandoned", "failed")}
        distance = harness.metric(doc, "gauges", "ossmount_list_ahead_distance")
        # What the walk left in memory: the listings of /, train/ and the 40 classes, with
        # 1 + 40 + 40 x 3 names, and an inode for each of those names and the root.
        metadata = {g: harness.metric(doc, "gauges", "ossmount_" + g)
                    for g in ("inodes", "metadata_listings", "metadata_listed_names",
                              "metadata_listing_bytes")}
        print("metadata after the walk: %s" % metadata)
        names = 1 + CLASSES + CLASSES * PER_CLASS
        self.assertEqual(metadata["metadata_listings"], 2 + CLASSES)
        self.assertEqual(metadata["metadata_listed_names"], names)
        self.assertEqual(metadata["inodes"], names + 1)
        # A 32-byte record per name, the names and etags, and each listing's own header.
        self.assertGreater(metadata["metadata_listing_bytes"], 32 * names)
        self.assertLess(metadata["metadata_listing_bytes"], 200 * names)
        return entered, after_entering, stats.get("LIST", 0), ahead, distance

    def test_the_directories_after_the_one_entered_are_listed_ahead(self):
        entered, after_entering, total, ahead, distance = self.walk()
        # One directory entered is not a walk (a lone `ls`): nothing listed ahead.
        self.assertEqual(entered, 1)
        # The second is: c00, c01 and the 38 after it, each once, before the walk asks.
        self.assertEqual(after_entering, CLASSES)
        # The walk found every directory listed: nothing more.
        self.assertEqual(total, CLASSES)
        # `ossmount stats` counts the 38 listed ahead.
        self.assertEqual(ahead, {"listed": CLASSES - 2, "abandoned": 0, "failed": 0})
        self.assertEqual(distance, 64)

    def test_without_list_ahead_the_walk_lists_each_directory_itself(self):
        entered, after_entering, total, ahead, distance = self.walk("--list-ahead", "0")
        self.assertEqual(entered, 1)
        self.assertEqual(after_entering, 2)
        self.assertEqual(total, CLASSES)
        self.assertEqual(ahead, {"listed": 0, "abandoned": 0, "failed": 0})
        self.assertEqual(distance, 0)


if __name__ == "__main__":
    harness.main()
