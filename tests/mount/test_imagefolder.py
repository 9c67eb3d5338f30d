"""torchvision ImageFolder over a mounted bucket, as a training job would read it.

Runs with Debian's /usr/bin/python3 (python3-torch, python3-torchvision). Checks that
ImageFolder + DataLoader(shuffle=True, num_workers=4) over the mount sees the same classes,
the same number of samples and the same bytes per file as the source tree, that every image
decodes, and (request accounting, metadata TTL indefinite) that the whole pass costs no HEAD
and exactly one GET per file at the server. An epoch that outlasts a finite --metadata-ttl
lists each class directory again about once per TTL instead of probing every file.
"""
import hashlib
import os
import time
import unittest

import harness
import torch
import torchvision
from PIL import Image


def hash_loader(path):
    with open(path, "rb") as f:
        data = f.read()
    return hashlib.sha256(data).hexdigest()


class Dataset(torch.utils.data.Dataset):
    """ImageFolder whose samples are (relative path, sha256 of the raw bytes, class index)."""

    def __init__(self, root):
        self.inner = torchvision.datasets.ImageFolder(root, loader=hash_loader)
        self.root = root

    def __len__(self):
        return len(self.inner)

    def __getitem__(self, i):
        digest, label = self.inner[i]
        return os.path.relpath(self.inner.samples[i][0], self.root), digest, label


def epoch(root):
    ds = Dataset(root)
    loader = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True, num_workers=4)
    seen = {}
    for rels, digests, labels in loader:
        for rel, digest, label in zip(rels, digests, labels):
            seen[rel] = (digest, int(label))
    return ds.inner.classes, seen


class ImageFolderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.src = harness.ensure_dataset("imagefolder", "images", "--classes", "10",
                                         "--per-class", "50")
        cls.server = harness.TestServer(os.path.dirname(cls.src), bucket="images")
        cls.mount = harness.Mount(cls.server, args=["--metadata-ttl", "indefinite"])

    @classmethod
    def tearDownClass(cls):
        cls.mount.close()
        cls.server.stop()

    def test_epoch_matches_source_with_one_get_per_file(self):
        self.server.reset_stats()
        classes, seen = epoch(self.mount.path("train"))
        stats = self.server.stats()
        src_classes, src_seen = epoch(os.path.join(self.src, "train"))
        self.assertEqual(classes, src_classes)
        self.assertEqual(len(classes), 10)
        self.assertEqual(len(seen), 500)
        self.assertEqual(seen, src_seen)
        # Request accounting: listings only for metadata, one GET per image, no HEAD.
        self.assertEqual(stats.get("HEAD", 0), 0, stats)
        self.assertEqual(stats.get("GET", 0), 500, stats)
        self.assertGreater(stats.get("LIST", 0), 0, stats)
        self.assertLessEqual(stats.get("LIST", 0), 1 + 10 + 2, stats)

    def test_images_decode(self):
        train = self.mount.path("train")
        for cls in sorted(os.listdir(train))[:3]:
            for name in sorted(os.listdir(os.path.join(train, cls)))[:10]:
                with Image.open(os.path.join(train, cls, name)) as im:
                    im.load()
                    self.assertGreater(im.size[0], 100)


class FiniteTtlEpochTest(unittest.TestCase):
    """An epoch that outlasts --metadata-ttl (1 s here, as a long epoch outlasts the default
    60 s): once a class directory's listing expires, the next lookup in it lists it again and
    that listing answers its siblings, instead of one probe LIST per file before its GET."""

    def test_epoch_longer_than_the_ttl_lists_directories_not_files(self):
        src = harness.ensure_dataset("imagefolder", "images", "--classes", "10",
                                     "--per-class", "50")
        server = harness.TestServer(os.path.dirname(src), bucket="images",
                                    args=["--ttfb-ms", "20"])
        try:
            mount = harness.Mount(server, args=["--metadata-ttl", "1"])
            try:
                server.reset_stats()
                started = time.monotonic()
                classes, seen = epoch(mount.path("train"))
                seconds = time.monotonic() - started
                stats = server.stats()
            finally:
                mount.close()
        finally:
            server.stop()
        src_classes, src_seen = epoch(os.path.join(src, "train"))
        self.assertEqual(classes, src_classes)
        self.assertEqual(seen, src_seen)
        print("\nepoch of %.1f s at TTL 1 s: %s" % (seconds, stats))
        self.assertGreater(seconds, 2, "the epoch must outlast the TTL to test anything")
        self.assertEqual(stats.get("GET", 0), 500, stats)
        self.assertEqual(stats.get("HEAD", 0), 0, stats)
        # The scan lists 12 directories (root, train, 10 classes); then each is listed again
        # at most once per three quarters of the TTL (refreshed ahead of expiry; the kernel
        # revalidates train/ and the class directories on the path too), where probing would
        # cost one LIST per file opened after the first second.
        bound = 12 + 12 * (int(seconds / 0.75) + 2)
        self.assertLess(bound, 500)
        self.assertLessEqual(stats.get("LIST", 0), bound, stats)


if __name__ == "__main__":
    harness.main()
