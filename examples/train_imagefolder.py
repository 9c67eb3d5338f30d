#!/usr/bin/env python3
"""Train a small CNN on an ImageFolder tree read through an ossmount mount, with
sampler-order hints (python/ossmount_hints.py).

    ossmount BUCKET /mnt/oss --metadata-ttl indefinite --cache /nvme/ossmount-cache
    python3 examples/train_imagefolder.py /mnt/oss/train --epochs 2 --workers 16

Each epoch, HintedSampler sends the order of that epoch's files to the daemon, which then
fetches ahead of the DataLoader workers with many GETs in flight. --no-hints runs the same
loop without them, for comparison. Needs torch and torchvision only.
"""
import argparse
import os
import sys
import time

import torch
import torchvision
from torchvision import transforms

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from ossmount_hints import HintedSampler  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", help="ImageFolder root inside an ossmount mount (class dirs below)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument("--no-hints", action="store_true", help="plain RandomSampler")
    args = ap.parse_args()

    tf = transforms.Compose([
        transforms.RandomResizedCrop(args.image_size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
    ])
    dataset = torchvision.datasets.ImageFolder(args.root, transform=tf)
    sampler = torch.utils.data.RandomSampler(dataset)
    if not args.no_hints:
        sampler = HintedSampler(sampler, dataset)  # sends each epoch's order to the mount
    loader = torch.utils.data.DataLoader(dataset, sampler=sampler, batch_size=args.batch_size,
                                         num_workers=args.workers, persistent_workers=False)

    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
        torch.nn.Linear(32, len(dataset.classes)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        start = time.monotonic()
        seen, total_loss = 0, 0.0
        for images, labels in loader:
            opt.zero_grad()
            loss = loss_fn(model(images), labels)
            loss.backward()
            opt.step()
            seen += len(labels)
            total_loss += loss.item() * len(labels)
        secs = time.monotonic() - start
        print("epoch %d: %d images in %.1f s (%.0f images/s), loss %.3f%s" %
              (epoch + 1, seen, secs, seen / secs, total_loss / max(seen, 1),
               "" if args.no_hints else ", hints sent: %d" % sampler.sent))


if __name__ == "__main__":
    main()
