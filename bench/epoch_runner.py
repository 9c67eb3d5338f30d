#!/usr/bin/python3
"""ImageFolder epochs for the benchmark, with server request counts per phase.

  epoch_runner.py ROOT --workers N --epochs E [--limit K] [--stats-url URL] [--hints]
                  [--paths-from DIR]

The reader is scripts/imagefolder_epoch.py's: torchvision ImageFolder with its raw-bytes
loader (each worker reads every byte and returns only the length, so no image data is
pickled through the worker pipe) and DataLoader(shuffle=True, batch_size 32). --limit K
reads a fixed random subset of K images each epoch (used for the slowest peers in quick
mode). With --stats-url (the server's base URL) the counters are reset before ImageFolder
lists the tree and read after the listing and after each epoch. --hints wraps the
shuffling sampler in python/ossmount_hints.HintedSampler (each epoch's order is sent to the
mount before the epoch starts). --paths-from DIR reads the same files by path instead, as a
dataset built from a list file (COCO's annotations, a train.txt) does: the relative paths of
the files under DIR, a local tree of the same layout, are opened under ROOT, which is never
listed (the "list" phase then only counts them).
Prints one JSON object per phase on stdout: {"phase": "list"|"epoch", ...}.
"""
import argparse
import json
import os
import random
import sys
import time
import urllib.request
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import imagefolder_epoch  # noqa: E402  (raw_length_loader)
import torch  # noqa: E402
import torchvision  # noqa: E402

warnings.filterwarnings("ignore", message=".*worker processes in total.*")


def server(url, method, path):
    if not url:
        return {}
    req = urllib.request.Request(url + path, method=method,
                                 data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=30) as r:
        body = r.read()
    if method != "GET":
        return {}
    s = json.loads(body)
    return {"GET": s["GET"], "HEAD": s["HEAD"], "LIST": s["LIST"]}


class PathListDataset(torch.utils.data.Dataset):
    """(raw length, class index) of each path under root, opened by name, never listed."""

    def __init__(self, root, paths):
        self.root = root
        self.paths = paths
        self.classes = sorted({p.split(os.sep)[0] for p in paths})
        index = {c: i for i, c in enumerate(self.classes)}
        self.samples = [(os.path.join(root, p), index[p.split(os.sep)[0]]) for p in paths]

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, label = self.samples[i]
        return imagefolder_epoch.raw_length_loader(path), label


def relative_files(top):
    return sorted(os.path.relpath(os.path.join(d, n), top)
                  for d, _, names in os.walk(top) for n in names)


def delta(a, b):
    return {k: b[k] - a.get(k, 0) for k in b}


def emit(rec):
    print(json.dumps(rec))
    sys.stdout.flush()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--stats-url", default="")
    p.add_argument("--hints", action="store_true")
    p.add_argument("--paths-from", default="")
    args = p.parse_args()

    server(args.stats_url, "POST", "/_ossmount/reset")
    start = time.monotonic()
    if args.paths_from:
        ds = PathListDataset(args.root, relative_files(args.paths_from))
    else:
        ds = torchvision.datasets.ImageFolder(args.root,
                                              loader=imagefolder_epoch.raw_length_loader)
    list_s = time.monotonic() - start
    before = server(args.stats_url, "GET", "/_ossmount/stats")
    emit({"phase": "list", "images": len(ds), "classes": len(ds.classes),
          "seconds": round(list_s, 3), "requests": before})
    if args.limit and args.limit < len(ds):
        ds = torch.utils.data.Subset(ds, random.Random(1).sample(range(len(ds)), args.limit))
    if args.hints:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                        "python"))
        import ossmount_hints
        base = ds.dataset if isinstance(ds, torch.utils.data.Subset) else ds
        paths = [s[0] for s in base.samples]
        if isinstance(ds, torch.utils.data.Subset):
            paths = [paths[i] for i in ds.indices]
        sampler = ossmount_hints.HintedSampler(torch.utils.data.RandomSampler(ds), paths=paths)
        loader = torch.utils.data.DataLoader(ds, batch_size=32, sampler=sampler,
                                             num_workers=args.workers)
    else:
        loader = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=True,
                                             num_workers=args.workers)
    for epoch in range(1, args.epochs + 1):
        start = time.monotonic()
        files = nbytes = 0
        for data, labels in loader:
            files += len(labels)
            nbytes += int(data.sum())
        secs = time.monotonic() - start
        after = server(args.stats_url, "GET", "/_ossmount/stats")
        emit({"phase": "epoch", "epoch": epoch, "files": files, "bytes": nbytes,
              "seconds": round(secs, 3), "files_per_s": round(files / secs, 1),
              "MB_per_s": round(nbytes / secs / 1e6, 1),
              "requests": delta(before, after) if after else {}})
        before = after
    return 0


if __name__ == "__main__":
    sys.exit(main())
