"""The benchmark datasets, generated once and cached under bench/data/root (git-ignored).

Each subdirectory of the root is one bucket of the object server:
  img/train/<class>/<name>.JPEG  20 classes x 250 real JPEGs, 110-120 KB on average
  big/1g.bin                     one 1 GiB object of pseudo-random bytes
  meta/meta/dNNN/kNNNNNN         100,000 tiny keys in 100 directories of 1,000
A marker file written after each part completes makes an interrupted generation restart.
"""
import os
import shutil
import subprocess

PY = "/usr/bin/python3"
BIG_SIZE = 1 << 30
MANY_KEYS = 100000


def ensure(repo, root, log):
    gen = os.path.join(repo, "scripts", "gen_dataset.py")
    parts = [
        ("img", [PY, gen, "imagefolder", os.path.join(root, "img"), "--classes", "20",
                 "--per-class", "250"]),
        ("big", [PY, gen, "bigfile", os.path.join(root, "big", "1g.bin"), "--size",
                 str(BIG_SIZE)]),
        ("meta", [PY, gen, "manykeys", os.path.join(root, "meta"), "--count", str(MANY_KEYS)]),
    ]
    os.makedirs(root, exist_ok=True)
    for name, cmd in parts:
        done = os.path.join(os.path.dirname(root), ".%s.done" % name)
        if os.path.exists(done):
            continue
        log("generating dataset '%s' (once; cached in %s)" % (name, root))
        shutil.rmtree(os.path.join(root, name), ignore_errors=True)
        subprocess.run(cmd, check=True)
        open(done, "w").close()


def image_keys(root):
    """Keys of every JPEG in the img bucket, relative to the bucket."""
    base = os.path.join(root, "img")
    return sorted(os.path.relpath(os.path.join(d, f), base)
                  for d, _, fs in os.walk(os.path.join(base, "train")) for f in fs)
