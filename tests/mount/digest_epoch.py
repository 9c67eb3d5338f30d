#!/usr/bin/python3
"""One ImageFolder epoch through 8 DataLoader workers, each sample the file's size and sha256.

  digest_epoch.py ROOT OUT

Prints "scanned" once ImageFolder has listed ROOT, writes {"files": {REL: [SIZE, SHA256]}}
to OUT at the end, and fails (exit 1, with the traceback) on any error. Used by the restart
tests (tests/mount/test_restart.py) and the systemd test (scripts/test-systemd.sh).
"""
import hashlib
import json
import os
import sys
import warnings

import torch
import torchvision

warnings.filterwarnings("ignore", message=".*worker processes in total.*")
root, out = sys.argv[1], sys.argv[2]


def loader(path):
    with open(path, "rb") as f:
        data = f.read()
    return [len(data), hashlib.sha256(data).hexdigest()]


class DS(torch.utils.data.Dataset):
    def __init__(self):
        self.inner = torchvision.datasets.ImageFolder(root, loader=loader)
    def __len__(self):
        return len(self.inner)

    def __getitem__(self, i):
        (size, digest), _ = self.inner[i]
        return os.path.relpath(self.inner.samples[i][0], root), size, digest


ds = DS()
print("scanned", flush=True)
files = {}
for rels, sizes, digests in torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True,
                                                         num_workers=8):
    for rel, size, digest in zip(rels, sizes, digests):
        files[rel] = [int(size), digest]
with open(out, "w") as f:
    json.dump({"files": files}, f)
