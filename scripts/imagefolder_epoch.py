#!/usr/bin/python3
"""Reads an ImageFolder tree the way a training job does and reports the rate.

  imagefolder_epoch.py ROOT [--workers N] [--epochs E] [--decode]

torchvision.datasets.ImageFolder + DataLoader(shuffle=True). By default each worker reads
every byte of each image and returns only its length (I/O only: no pickling of image data
through the worker pipe, which on 2 cores alone caps a local-disk epoch); with --decode it decodes the JPEG with PIL and
returns the tensor, as a real training input pipeline would.
Prints one line per epoch: files, bytes, seconds, files/s, MB/s. Run with /usr/bin/python3.
"""
import argparse
import json
import sys
import time

import warnings

import torch
import torchvision

# DataLoader warns when workers outnumber cores; reading over a network mount is I/O-bound,
# so more workers than cores is the point here.
warnings.filterwarnings("ignore", message=".*worker processes in total.*")


def raw_length_loader(path):
    with open(path, "rb") as f:
        return len(f.read())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--decode", action="store_true")
    p.add_argument("--json", action="store_true", help="print one JSON object per epoch")
    args = p.parse_args()

    if args.decode:
        t = torchvision.transforms.Compose([torchvision.transforms.Resize((224, 224)),
                                            torchvision.transforms.ToTensor()])
        ds = torchvision.datasets.ImageFolder(args.root, transform=t)
    else:
        ds = torchvision.datasets.ImageFolder(args.root, loader=raw_length_loader)
    loader = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, shuffle=True,
                                         num_workers=args.workers)
    print("ImageFolder %s: %d classes, %d images" % (args.root, len(ds.classes), len(ds)),
          file=sys.stderr)
    for epoch in range(1, args.epochs + 1):
        start = time.monotonic()
        files = 0
        nbytes = 0
        for data, _labels in loader:
            files += len(_labels)
            if not args.decode:
                nbytes += int(data.sum())
        secs = time.monotonic() - start
        rec = {"epoch": epoch, "files": files, "bytes": nbytes, "seconds": round(secs, 3),
               "files_per_s": round(files / secs, 1), "MB_per_s": round(nbytes / secs / 1e6, 1)}
        if args.json:
            print(json.dumps(rec))
        elif args.decode:
            print("epoch %d: %d images decoded in %.2f s: %.0f images/s" %
                  (epoch, files, secs, files / secs))
        else:
            print("epoch %d: %d files, %.1f MB in %.2f s: %.0f files/s, %.1f MB/s" %
                  (epoch, files, nbytes / 1e6, secs, files / secs, nbytes / secs / 1e6))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
