#!/usr/bin/python3
"""Generates the datasets ossmount's demo, tests and benchmarks read.

  imagefolder DIR --classes C --per-class N [--seed S]
      DIR/train/<class>/<name>.JPEG: real, decodable JPEGs averaging 110-120 KB
      (ImageNet-like), deterministic for a given seed.
  mixed DIR
      The mount-test tree: files of 0 B, 1 B, 115 KB, 5 MiB and 64 MiB, nested directories
      and a small ImageFolder tree. Keys that cannot be files on disk (markers, clashes,
      invalid names) are uploaded by the tests through the object client instead.
  bigfile PATH --size BYTES
      One large file of pseudo-random bytes.
  manykeys DIR --count N
      N tiny files spread over a two-level tree (metadata benchmarks).

Writes a manifest (relative path, size, sha256) to DIR/MANIFEST.tsv for the checks.
Run with /usr/bin/python3 (Debian's, which has PIL and numpy).
"""
import argparse
import hashlib
import io
import os
import sys

import numpy as np
from PIL import Image

CLASS_NAMES = ["n%08d" % (1440764 + 1000 * i) for i in range(1000)]


def jpeg_bytes(rng):
    # Noise compresses badly, so the size is governed by the pixel count: about 0.77 bytes
    # per pixel at quality 85. Sides of 360-410 px give 100-130 KB, mean about 115 KB.
    side = int(rng.integers(360, 411))
    pixels = rng.integers(0, 256, (side, side, 3), dtype=np.uint8)
    # A smooth gradient over part of the image makes it look like something and varies size.
    ramp = np.linspace(0, 255, side, dtype=np.uint8)
    band = int(rng.integers(0, side // 6))
    if band:
        pixels[:band, :, 0] = ramp
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "JPEG", quality=85)
    return buf.getvalue()


def write(path, data, manifest, root):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    manifest.append((os.path.relpath(path, root), len(data), hashlib.sha256(data).hexdigest()))


def write_manifest(root, manifest):
    with open(os.path.join(root, "MANIFEST.tsv"), "w") as f:
        for rel, size, digest in sorted(manifest):
            f.write("%s\t%d\t%s\n" % (rel, size, digest))


def imagefolder(root, classes, per_class, seed, manifest, sub="train"):
    rng = np.random.default_rng(seed)
    for c in range(classes):
        cls = CLASS_NAMES[c]
        for i in range(per_class):
            name = "%s_%d.JPEG" % (cls, i)
            write(os.path.join(root, sub, cls, name), jpeg_bytes(rng), manifest, root)


def random_bytes(rng, size):
    return rng.integers(0, 256, size, dtype=np.uint8).tobytes()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("imagefolder")
    a.add_argument("dir")
    a.add_argument("--classes", type=int, default=10)
    a.add_argument("--per-class", type=int, default=50)
    a.add_argument("--seed", type=int, default=1)
    m = sub.add_parser("mixed")
    m.add_argument("dir")
    m.add_argument("--seed", type=int, default=2)
    b = sub.add_parser("bigfile")
    b.add_argument("path")
    b.add_argument("--size", type=int, required=True)
    k = sub.add_parser("manykeys")
    k.add_argument("dir")
    k.add_argument("--count", type=int, default=100000)
    args = p.parse_args()

    manifest = []
    if args.cmd == "imagefolder":
        imagefolder(args.dir, args.classes, args.per_class, args.seed, manifest)
        write_manifest(args.dir, manifest)
    elif args.cmd == "mixed":
        rng = np.random.default_rng(args.seed)
        root = args.dir
        write(os.path.join(root, "empty.bin"), b"", manifest, root)
        write(os.path.join(root, "one.bin"), b"x", manifest, root)
        write(os.path.join(root, "small.bin"), random_bytes(rng, 115 * 1000), manifest, root)
        write(os.path.join(root, "medium.bin"), random_bytes(rng, 5 << 20), manifest, root)
        write(os.path.join(root, "large.bin"), random_bytes(rng, 64 << 20), manifest, root)
        write(os.path.join(root, "nested/a/b/c/deep.txt"), b"deep\n", manifest, root)
        write(os.path.join(root, "nested/a/sibling.txt"), b"sibling\n", manifest, root)
        write(os.path.join(root, "names/with space.txt"), b"space\n", manifest, root)
        write(os.path.join(root, "names/plus+sign.txt"), b"plus\n", manifest, root)
        write(os.path.join(root, "names/percent%41.txt"), b"percent\n", manifest, root)
        write(os.path.join(root, "names/unicode-\u00e9\u4e2d.txt"), b"unicode\n", manifest, root)
        for i in range(1100):  # more than one list page in one directory
            write(os.path.join(root, "many/f%05d.txt" % i), b"%d\n" % i, manifest, root)
        imagefolder(root, 3, 20, args.seed, manifest)
        write_manifest(root, manifest)
    elif args.cmd == "bigfile":
        rng = np.random.default_rng(7)
        os.makedirs(os.path.dirname(os.path.abspath(args.path)), exist_ok=True)
        with open(args.path, "wb") as f:
            left = args.size
            while left:
                n = min(left, 8 << 20)
                f.write(random_bytes(rng, n))
                left -= n
    elif args.cmd == "manykeys":
        per_dir = 1000
        for i in range(args.count):
            d = os.path.join(args.dir, "meta", "d%03d" % (i // per_dir))
            if i % per_dir == 0:
                os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "k%06d" % i), "wb") as f:
                f.write(b"%d" % i)
    return 0


if __name__ == "__main__":
    sys.exit(main())
