"""Checkpoints written through a real mount with --allow-writes, by the programs that write them.

docs/SEMANTICS.md "Writing"; /work/shared/DESIGN.md section 8. Every file written here is
compared, byte for byte, with what the same program writes to a local directory or with the
bytes the test wrote, on the server's own disk (the bundled server keeps each object as a file
under ROOT/BUCKET/KEY) and through a fresh mount that never saw the writes:
- torch.save of a ~100 MB state dict (default 8 MiB parts) is byte-identical to a local
  torch.save of the same object, and torch.load in another process on a fresh mount gives
  equal tensors.
- PyTorch's distributed checkpoint (DCP) FileSystemWriter, reproduced step for step (Debian's
  torch 1.13 lacks torch.distributed.checkpoint): per-rank .distcp files written by threads and
  fsynced, then ".metadata.tmp" pickled and fsynced, the old ".metadata" removed and the temp
  renamed over it; twice, the second save replacing the first's files.
- The Hugging Face Trainer / DeepSpeed layout: checkpoint-N/ directories, a `latest` file
  rewritten with open(path, "w"), rotation by shutil.rmtree keeping the last 2.
- Save to a temporary name and os.replace it over the previous file; cp -r, tar -x and
  rsync -a of a local tree (nested and empty directories, files of 0 B to 20 MiB): exit 0 and
  diff -r clean on a fresh mount.
- Visibility: this mount (--metadata-ttl indefinite) sees its writes at once in stat, listdir
  and ls, the size so far while a file is written, EBUSY for a reader while it is; a second
  mount (--metadata-ttl 0) sees the object only once close returned.
- S3 (s3rver, SigV4 with Content-MD5): torch.save/torch.load, mkdir, rename, rm.
- 64 files of 40 MiB written at once with --max-memory 256MiB: every object exact and the
  daemon's peak RSS within its budget (see test_64_files_at_once_stay_within_max_memory).
Every test also checks that no multipart upload was left open on the server.
"""
import errno
import hashlib
import io
import json
import os
import pickle
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import threading
import unittest
import urllib.request

import harness

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20


def random_bytes(size, seed):
    return random.Random(seed).randbytes(size)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def server_files(bucket_dir):
    """The objects the bundled server holds on its disk, as {relative path: size}. Directory
    markers ("dir/") are kept in the server's memory, not on disk, and its temporary files
    start with ".ossmount-testserver-tmp"."""
    out = {}
    for dirpath, _, filenames in os.walk(bucket_dir):
        for name in filenames:
            if name.startswith(".ossmount-testserver"):
                continue
            path = os.path.join(dirpath, name)
            out[os.path.relpath(path, bucket_dir)] = os.path.getsize(path)
    return out


def tree_files(root):
    """{relative path: sha256} of every file, plus {relative path: None} of every directory."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = None
        for f in filenames:
            out[os.path.relpath(os.path.join(dirpath, f), root)] = \
                harness.sha256_file(os.path.join(dirpath, f))
    return out


def failed_fuse_ops(log):
    """The daemon logs every FUSE operation that answered an error ("fuse OP ino N: ...")."""
    return [l for l in log.splitlines() if re.search(r"fuse \w+ ino \d+: ", l)]


# --- torch state dicts, built the same way in this process and in the loading child ----------

def make_state(seed, scale=1):
    import torch
    g = torch.Generator().manual_seed(seed)
    return {
        "model": {
            "embed.weight": torch.randn(4096 * scale, 1024, generator=g),          # 16 MiB
            "layer.0.weight": torch.randn(2048 * scale, 2048, generator=g),        # 16 MiB
            "layer.0.bias": torch.randn(2048, generator=g),
            "layer.1.weight": torch.randn(2048 * scale, 2048, generator=g).half(),  # 8 MiB
            "counts": torch.randint(0, 1 << 40, (1 << 20,), generator=g),          # 8 MiB
            "mask": torch.rand(1 << 20, generator=g) > 0.5,                        # 1 MiB
        },
        "optimizer": {
            "state": {0: {"step": torch.tensor(1000.0),
                          "exp_avg": torch.randn(2048 * scale, 1024, generator=g),  # 8 MiB
                          "exp_avg_sq": torch.rand(2048 * scale, 1024, generator=g)}},
            "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0]}],
        },
        "epoch": 7,
        "note": "checkpoint seed %d" % seed,
    }


def assert_state_equal(got, want, where="state"):
    import torch
    if isinstance(want, torch.Tensor):
        if not (isinstance(got, torch.Tensor) and got.dtype == want.dtype and
                torch.equal(got, want)):
            raise AssertionError("%s: tensors differ" % where)
    elif isinstance(want, dict):
        if sorted(got, key=str) != sorted(want, key=str):
            raise AssertionError("%s: keys %r != %r" % (where, list(got), list(want)))
        for k in want:
            assert_state_equal(got[k], want[k], "%s[%r]" % (where, k))
    elif isinstance(want, (list, tuple)):
        if len(got) != len(want):
            raise AssertionError("%s: lengths differ" % where)
        for i, (a, b) in enumerate(zip(got, want)):
            assert_state_equal(a, b, "%s[%d]" % (where, i))
    elif got != want:
        raise AssertionError("%s: %r != %r" % (where, got, want))


def load_and_check(path, seed, scale):
    """Run in a child process: torch.load the file and compare it with make_state(seed)."""
    import torch
    state = torch.load(path)
    assert_state_equal(state, make_state(seed, scale))
    print("equal tensors: %d" % sum(1 for _ in walk_tensors(state)))


def walk_tensors(obj):
    import torch
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from walk_tensors(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from walk_tensors(v)


def run_child(code, *args):
    """Runs `code` in a fresh /usr/bin/python3 that imports this file as a module."""
    prog = "import sys; sys.path.insert(0, %r); import test_writes as w; %s" % (HERE, code)
    r = subprocess.run(["/usr/bin/python3", "-c", prog] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise AssertionError("child failed (%d):\n%s\n%s" % (r.returncode, r.stdout, r.stderr))
    return r.stdout


# --- PyTorch DCP's FileSystemWriter, reproduced (torch/distributed/checkpoint/filesystem.py) ---

def dcp_items(rank, step):
    """The write items of one rank: BYTE_IO blobs and tensors, as a planner hands them out."""
    import torch
    g = torch.Generator().manual_seed(1000 * step + rank)
    tensors = [("rank%d.w%d" % (rank, i), torch.randn(256 * (i + 1), 1024, generator=g))
               for i in range(6)]  # 1, 2, ... 6 MiB
    blobs = [("rank%d.extra%d" % (rank, i), pickle.dumps({"rank": rank, "step": step, "i": i,
                                                          "rng": random_bytes(3000, step + i)}))
             for i in range(3)]
    return blobs, tensors


def dcp_write_rank(ckpt, rank, step, threads=3):
    """_FileSystemWriter.write_data with single_file_per_rank and thread_count=3: the rank's
    items in 3 buckets (BYTE_IO round robin, tensors to the smallest bucket), one file
    __RANK_I.distcp per bucket, written by its own thread: blobs first, then torch.save of each
    tensor into the stream, then os.fsync(stream.fileno()) inside the with block."""
    import torch
    blobs, tensors = dcp_items(rank, step)
    buckets = [([], []) for _ in range(threads)]
    for i, blob in enumerate(blobs):
        buckets[i % threads][0].append(blob)
    sizes = [0] * threads
    for name, t in sorted(tensors, key=lambda nt: -nt[1].numel()):
        i = min(range(threads), key=lambda b: sizes[b])
        buckets[i][1].append((name, t))
        sizes[i] += t.numel() * t.element_size()
    results = {}
    errors = []

    def write(i):
        file_name = "__%d_%d.distcp" % (rank, i)
        try:
            with open(os.path.join(ckpt, file_name), "wb") as stream:
                for name, blob in buckets[i][0]:
                    offset = stream.tell()
                    stream.write(blob)
                    results[name] = (file_name, offset, stream.tell() - offset, "bytes")
                for name, t in buckets[i][1]:
                    offset = stream.tell()
                    torch.save(t, stream)
                    results[name] = (file_name, offset, stream.tell() - offset, "tensor")
                os.fsync(stream.fileno())
        except BaseException as e:  # noqa: B902 - reported by the caller
            errors.append((file_name, e))

    workers = [threading.Thread(target=write, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise AssertionError("rank %d: %r" % (rank, errors))
    return results


def dcp_finish(ckpt, storage_data, step, flush_before_fsync=False):
    """_FileSystemWriter.finish: pickle.dump(metadata) into ".metadata.tmp" and
    os.fsync(metadata_file.fileno()) inside the with block (DCP does not flush first: Python's
    buffer still holds the pickle), then remove an existing ".metadata" and rename the temp."""
    storage_data = dict(sorted(storage_data.items()))  # the ranks' threads finish in any order
    metadata = {"version": "2.x", "step": step, "storage_data": storage_data,
                "planner_data": {k: k.split(".") for k in storage_data}}
    tmp_path = os.path.join(ckpt, ".metadata.tmp")
    with open(tmp_path, "wb") as metadata_file:
        pickle.dump(metadata, metadata_file)
        if flush_before_fsync:
            metadata_file.flush()
        os.fsync(metadata_file.fileno())
    metadata_path = os.path.join(ckpt, ".metadata")
    if os.path.exists(metadata_path):
        os.remove(metadata_path)
    os.rename(tmp_path, metadata_path)


def dcp_save(ckpt, step, flush_before_fsync=False):
    os.makedirs(ckpt, exist_ok=True)  # FileSystem.mkdir: parents=True, exist_ok=True
    storage_data = {}
    ranks = [threading.Thread(target=lambda r=r: storage_data.update(dcp_write_rank(ckpt, r, step)))
             for r in range(2)]
    for t in ranks:
        t.start()
    for t in ranks:
        t.join()
    if len(storage_data) != 2 * 9:
        raise AssertionError("a rank failed to write its files")
    dcp_finish(ckpt, storage_data, step, flush_before_fsync)


def dcp_load_and_check(ckpt, step):
    """FileSystemReader: .metadata first, then every item read from its (file, offset,
    length) slice and compared with what the ranks wrote."""
    import torch
    with open(os.path.join(ckpt, ".metadata"), "rb") as f:
        metadata = pickle.load(f)
    if metadata["step"] != step:
        raise AssertionError("metadata of step %r, not %d" % (metadata["step"], step))
    want = {}
    for rank in range(2):
        blobs, tensors = dcp_items(rank, step)
        want.update({n: ("bytes", b) for n, b in blobs})
        want.update({n: ("tensor", t) for n, t in tensors})
    if sorted(metadata["storage_data"]) != sorted(want):
        raise AssertionError("metadata names other items")
    for name, (file_name, offset, length, kind) in metadata["storage_data"].items():
        with open(os.path.join(ckpt, file_name), "rb") as f:
            f.seek(offset)
            data = f.read(length)
        if kind == "bytes":
            ok = data == want[name][1]
        else:
            ok = torch.equal(torch.load(io.BytesIO(data)), want[name][1])
        if not ok:
            raise AssertionError("%s in %s differs" % (name, file_name))


# --- The Hugging Face Trainer / DeepSpeed checkpoint layout -----------------------------------

def hf_save(output_dir, step, keep=2):
    """Trainer._save_checkpoint plus DeepSpeed's `latest` tag: checkpoint-STEP/ with the model
    (a safetensors file: 8-byte header length, JSON header, raw tensor bytes), optimizer.pt and
    scheduler.pt (torch.save), rng_state.pth, trainer_state.json and config.json, one file
    after another; then `latest` rewritten with open(path, "w"), then the oldest checkpoints
    beyond `keep` removed with shutil.rmtree (Trainer._rotate_checkpoints)."""
    import torch
    ckpt = os.path.join(output_dir, "checkpoint-%d" % step)
    os.makedirs(ckpt, exist_ok=True)
    for name, data in hf_files(step).items():
        if name.endswith(".pt") or name.endswith(".pth"):
            torch.save(data, os.path.join(ckpt, name))
        elif name.endswith(".json"):
            with open(os.path.join(ckpt, name), "w") as f:
                json.dump(data, f, indent=2, sort_keys=True)
        else:
            with open(os.path.join(ckpt, name), "wb") as f:
                f.write(data)
    with open(os.path.join(output_dir, "latest"), "w") as f:
        f.write("global_step%d" % step)
    ckpts = sorted((d for d in os.listdir(output_dir) if d.startswith("checkpoint-")),
                   key=lambda d: int(d.split("-")[1]))
    for old in ckpts[:-keep]:
        shutil.rmtree(os.path.join(output_dir, old), ignore_errors=True)


def hf_files(step):
    import torch
    g = torch.Generator().manual_seed(step)
    weights = torch.randn(3 * MiB // 4, generator=g)  # 3 MiB of float32
    header = json.dumps({"w": {"dtype": "F32", "shape": [weights.numel()],
                               "data_offsets": [0, weights.numel() * 4]}}).encode()
    safetensors = len(header).to_bytes(8, "little") + header + weights.numpy().tobytes()
    return {
        "model.safetensors": safetensors,
        "optimizer.pt": {"state": {0: {"exp_avg": torch.randn(MiB // 2, generator=g),
                                       "exp_avg_sq": torch.rand(MiB // 2, generator=g)}},
                         "param_groups": [{"lr": 1e-4 * step}]},
        "scheduler.pt": {"last_epoch": step, "_last_lr": [1e-4]},
        "rng_state.pth": {"python": random.Random(step).getstate(),
                          "cpu": torch.Generator().manual_seed(step).get_state()},
        "trainer_state.json": {"global_step": step,
                               "log_history": [{"step": s, "loss": 1.0 / s}
                                               for s in range(1, step + 1)]},
        "config.json": {"architectures": ["Toy"], "hidden_size": 1024},
    }


# --- Test cases --------------------------------------------------------------------------------

class WriteMountCase(unittest.TestCase):
    maxDiff = None
    """A fresh bundled server per test, over ROOT/bucket, and mounts of it."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="writes-data-")
        self.bucket_dir = os.path.join(self.root, "bucket")
        os.makedirs(self.bucket_dir)
        self.server = harness.TestServer(self.root, bucket="bucket")
        self.addCleanup(self.server.stop)
        self.mounts = []

    def mount(self, *args, writes=True, ttl="indefinite", server=None, spec=None, journal=None):
        a = ["--metadata-ttl", ttl]
        if writes:
            a += ["--allow-writes",
                  "--upload-journal", journal or tempfile.mkdtemp(prefix="upload-journal-")]
        m = harness.Mount(server or self.server, args=a + list(args), bucket_spec=spec)
        self.addCleanup(m.close)
        self.mounts.append(m)
        return m

    def fresh_mount(self, server=None, spec=None):
        """A read-only mount that never saw the writes, revalidating everything."""
        return self.mount("--negative-metadata-ttl", "0", writes=False, ttl="0", server=server,
                          spec=spec)

    def server_rescan(self):
        """After changing the server's directory behind its back (listings need a rescan)."""
        urllib.request.urlopen(urllib.request.Request(
            self.server.endpoint + "/_ossmount/rescan", method="POST"), timeout=10).read()

    def on_server(self, *rel):
        return os.path.join(self.bucket_dir, *rel)

    def assert_no_open_uploads(self, server=None):
        # A failed close returns before the abort of its upload is answered (it may wait for
        # the Initiate's answer): the uploads must be gone within moments, not at once.
        server = server or self.server
        deadline = time.monotonic() + 10
        stats = server.stats()
        while stats["open_multipart_uploads"] and time.monotonic() < deadline:
            time.sleep(0.05)
            stats = server.stats()
        if stats["open_multipart_uploads"]:
            with urllib.request.urlopen(server.endpoint + "/_ossmount/uploads") as r:
                left = r.read().decode()
            self.fail("multipart uploads left open on the server: %s" % left)

    def assert_clean_log(self, mount, allowed=()):
        """No FUSE operation of `mount` answered an error, except lines matching `allowed`."""
        bad = [l for l in failed_fuse_ops(mount.output())
               if not any(re.search(a, l) for a in allowed)]
        self.assertEqual(bad, [], "FUSE operations failed")


class TorchSaveTest(WriteMountCase):
    def test_torch_save_then_load_on_a_fresh_mount(self):
        import torch
        seed, scale = 11, 2  # about 98 MiB: 12 parts of the default 8 MiB
        state = make_state(seed, scale)
        mnt = self.mount()
        os.mkdir(mnt.path("run1"))
        torch.save(state, mnt.path("run1", "model.pt"))
        local_dir = tempfile.mkdtemp(prefix="local-save-")
        local = os.path.join(local_dir, "model.pt")  # same base name: torch names its records so
        torch.save(state, local)
        del state
        size = os.path.getsize(local)
        self.assertGreater(size, 90 * MiB)
        # This mount's view: the size at once.
        self.assertEqual(os.stat(mnt.path("run1", "model.pt")).st_size, size)
        # The server's file is byte-identical to the local save.
        self.assertEqual(harness.sha256_file(self.on_server("run1", "model.pt")),
                         harness.sha256_file(local))
        stats = self.server.stats()
        self.assertEqual(stats["INITIATE_MULTIPART"], 1)
        self.assertEqual(stats["COMPLETE_MULTIPART"], 1)
        self.assertGreaterEqual(stats["UPLOAD_PART"], size // (8 * MiB))
        self.assert_no_open_uploads()
        # torch.load in another process, on a mount that never saw the write.
        fresh = self.fresh_mount()
        out = run_child("w.load_and_check(sys.argv[1], %d, %d)" % (seed, scale),
                        fresh.path("run1", "model.pt"))
        self.assertIn("equal tensors: 9", out)
        self.assertEqual(harness.sha256_file(fresh.path("run1", "model.pt")),
                         harness.sha256_file(local))
        self.assertEqual(mnt.unmount(), 0)
        self.assert_clean_log(mnt)


class DistributedCheckpointTest(WriteMountCase):
    def check_dcp(self, flush_before_fsync):
        mnt = self.mount("--upload-part-size", "1MiB")
        local_root = tempfile.mkdtemp(prefix="local-dcp-")
        for step in (1, 2):  # the second save replaces every file of the first
            ckpt = mnt.path("dcp", "ckpt")
            dcp_save(ckpt, step, flush_before_fsync)
            local = os.path.join(local_root, "step%d" % step)
            dcp_save(local, step, flush_before_fsync)
            want = tree_files(local)
            self.assertEqual(len(want), 7)  # 6 rank files and .metadata
            self.assertEqual(tree_files(ckpt), want, "step %d, this mount" % step)
            self.assertEqual(tree_files(self.on_server("dcp", "ckpt")), want,
                             "step %d, server disk" % step)
            fresh = self.fresh_mount()
            self.assertEqual(tree_files(fresh.path("dcp", "ckpt")), want,
                             "step %d, fresh mount" % step)
            run_child("w.dcp_load_and_check(sys.argv[1], %d)" % step,
                      fresh.path("dcp", "ckpt"))
            fresh.close()
        self.assert_no_open_uploads()
        self.assertEqual(mnt.unmount(), 0)
        self.assert_clean_log(mnt)

    def test_dcp_save_twice_as_torch_does(self):
        # Exactly DCP's finish(): pickle.dump, then os.fsync with the pickle still in Python's
        # buffer; the buffer reaches the file at close.
        self.check_dcp(flush_before_fsync=False)

    def test_dcp_save_twice_metadata_flushed_before_fsync(self):
        # The same with metadata_file.flush() before the fsync, as most atomic-save helpers
        # do: the per-rank files (torch.save flushes its stream) and the rename path.
        self.check_dcp(flush_before_fsync=True)


class TrainerCheckpointTest(WriteMountCase):
    def test_checkpoint_dirs_latest_and_rotation(self):
        import torch
        mnt = self.mount("--upload-part-size", "1MiB")
        out = mnt.path("output")
        os.mkdir(out)
        local = tempfile.mkdtemp(prefix="local-trainer-")
        for step in (10, 20, 30):
            hf_save(out, step)
            hf_save(local, step)
            # This mount sees exactly the rotated layout at once.
            self.assertEqual(sorted(os.listdir(out)),
                             sorted(os.listdir(local)))
        self.assertEqual(sorted(os.listdir(local)), ["checkpoint-20", "checkpoint-30", "latest"])
        want = tree_files(local)
        self.assertEqual(tree_files(out), want)
        fresh = self.fresh_mount()
        self.assertEqual(tree_files(fresh.path("output")), want)
        with open(fresh.path("output", "latest")) as f:
            self.assertEqual(f.read(), "global_step30")
        opt = torch.load(fresh.path("output", "checkpoint-30", "optimizer.pt"))
        assert_state_equal(opt, hf_files(30)["optimizer.pt"])
        # The server holds exactly the files of checkpoint-20, checkpoint-30 and latest.
        self.assertEqual(sorted(server_files(self.on_server("output"))),
                         sorted(k for k, v in want.items() if v is not None))
        self.assert_no_open_uploads()
        self.assertEqual(mnt.unmount(), 0)
        self.assert_clean_log(mnt)


class CopyToolsTest(WriteMountCase):
    @classmethod
    def setUpClass(cls):
        cls.src_root = tempfile.mkdtemp(prefix="copy-src-")
        cls.src = os.path.join(cls.src_root, "ckpt")
        layout = {
            "empty.bin": 0, "one.bin": 1, "page.bin": 4096, "meta/config.json": 1234,
            "meta/tokenizer/vocab.txt": 100_000, "shards/shard-0.bin": MiB + 3,
            "shards/shard-1.bin": 5 * MiB, "shards/deep/er/big.bin": 20 * MiB,
        }
        for i, (rel, size) in enumerate(sorted(layout.items())):
            path = os.path.join(cls.src, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(random_bytes(size, i))
        os.makedirs(os.path.join(cls.src, "logs", "empty-dir"))
        cls.tar = os.path.join(cls.src_root, "ckpt.tar")
        with tarfile.open(cls.tar, "w") as t:
            t.add(cls.src, arcname="ckpt")

    def diff_on_fresh_mount(self, rel):
        fresh = self.fresh_mount()
        r = subprocess.run(["diff", "-r", self.src, fresh.path(rel)], capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(tree_files(fresh.path(rel)), tree_files(self.src))
        fresh.close()

    def run_tool(self, cmd):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, "%s: %s" % (cmd, r.stderr))

    def test_cp_r(self):
        mnt = self.mount("--upload-part-size", "1MiB")
        self.run_tool(["cp", "-r", self.src, mnt.path("cp")])
        self.assertEqual(tree_files(mnt.path("cp")), tree_files(self.src))
        self.diff_on_fresh_mount("cp")
        self.assert_no_open_uploads()

    def test_cp_p(self):
        # cp -p sets the mode with fsetxattr(system.posix_acl_access), then falls back to
        # fchmod when ACLs are not supported; the mount ignores modes, so it must not fail.
        mnt = self.mount("--upload-part-size", "1MiB")
        self.run_tool(["cp", "-r", "-p", self.src, mnt.path("cpp")])
        self.diff_on_fresh_mount("cpp")
        self.assert_no_open_uploads()

    def test_empty_file_renamed_right_after_close(self):
        # rsync's and many savers' pattern for an empty file: create the temporary name,
        # close it without a write, rename it into place at once.
        mnt = self.mount()
        for i in range(20):
            tmp = mnt.path(".empty.%d.tmp" % i)
            open(tmp, "wb").close()
            os.rename(tmp, mnt.path("empty.%d" % i))
        self.assertEqual(sorted(os.listdir(mnt.mountpoint)),
                         sorted("empty.%d" % i for i in range(20)))
        self.assertEqual(sorted(server_files(self.bucket_dir).items()),
                         sorted(("empty.%d" % i, 0) for i in range(20)))

    def test_cp_a_keeps_going_with_modes_and_times_ignored(self):
        mnt = self.mount("--upload-part-size", "1MiB")
        self.run_tool(["cp", "-a", self.src, mnt.path("cpa")])
        self.diff_on_fresh_mount("cpa")
        # Modes are the mount's: files 0644, directories 0755.
        self.assertEqual(os.stat(mnt.path("cpa", "one.bin")).st_mode & 0o7777, 0o644)
        self.assertEqual(os.stat(mnt.path("cpa", "meta")).st_mode & 0o7777, 0o755)
        self.assert_no_open_uploads()

    def test_tar_x(self):
        mnt = self.mount("--upload-part-size", "1MiB")
        os.mkdir(mnt.path("tar"))
        self.run_tool(["tar", "-x", "-f", self.tar, "-C", mnt.path("tar")])
        self.diff_on_fresh_mount("tar/ckpt")
        self.assert_no_open_uploads()

    def test_rsync_a(self):
        mnt = self.mount("--upload-part-size", "1MiB")
        self.run_tool(["rsync", "-a", self.src + "/", mnt.path("rsync") + "/"])
        self.diff_on_fresh_mount("rsync")
        # rsync wrote each file under a temporary name and renamed it: none is left.
        self.assertEqual(sorted(server_files(self.on_server("rsync"))),
                         sorted(k for k, v in tree_files(self.src).items() if v is not None))
        self.assert_no_open_uploads()

    def test_save_to_temp_name_and_replace(self):
        import torch
        mnt = self.mount("--upload-part-size", "1MiB")
        target = mnt.path("model.pt")
        for seed in (1, 2, 3):
            state = {"w": torch.randn(MiB, generator=torch.Generator().manual_seed(seed))}
            tmp = target + ".tmp"
            torch.save(state, tmp)
            os.replace(tmp, target)  # onto the previous save from the second round on
            self.assertEqual(sorted(os.listdir(mnt.mountpoint)), ["model.pt"])
            local = os.path.join(tempfile.mkdtemp(prefix="local-replace-"), "model.pt.tmp")
            torch.save(state, local)
            self.assertEqual(harness.sha256_file(self.on_server("model.pt")),
                             harness.sha256_file(local))
            self.assertFalse(os.path.exists(self.on_server("model.pt.tmp")))
        fresh = self.fresh_mount()
        got = torch.load(fresh.path("model.pt"))
        self.assertTrue(torch.equal(got["w"], torch.randn(
            MiB, generator=torch.Generator().manual_seed(3))))
        self.assert_no_open_uploads()
        self.assertEqual(mnt.unmount(), 0)
        self.assert_clean_log(mnt)


class VisibilityTest(WriteMountCase):
    """This mount sees its own writes at once, with --metadata-ttl indefinite; another mount
    (--metadata-ttl 0) sees an object only once the close that completed it returned."""

    def start_writing(self, mnt, rel, data):
        f = open(mnt.path(rel), "wb", buffering=0)
        self.addCleanup(f.close)
        f.write(data)
        return f

    def test_file_being_written_is_listed_in_a_directory_listed_after_its_creation(self):
        # Directories whose first listing comes after the create, while the file is written:
        # one made by mkdir, one that exists on the server, and the root.
        os.makedirs(self.on_server("srv"))
        with open(self.on_server("srv", "x"), "wb") as f:
            f.write(b"x")
        self.server_rescan()
        mnt = self.mount("--upload-part-size", "1MiB")
        os.mkdir(mnt.path("d"))
        files = [self.start_writing(mnt, rel, random_bytes(2 * MiB, 1))
                 for rel in ("d/w.bin", "srv/w.bin", "w.bin")]
        seen = {"during": [sorted(os.listdir(mnt.path(d))) for d in ("d", "srv", "")]}
        for f in files:
            f.close()
        seen["after close"] = [sorted(os.listdir(mnt.path(d))) for d in ("d", "srv", "")]
        want = [["w.bin"], ["w.bin", "x"], ["d", "srv", "w.bin"]]
        self.assertEqual(seen, {"during": want, "after close": want})
        self.assert_no_open_uploads()

    def test_size_so_far_and_after_close_with_a_listing_between(self):
        mnt = self.mount("--upload-part-size", "1MiB")
        os.mkdir(mnt.path("d"))
        self.assertEqual(os.listdir(mnt.path("d")), [])  # the empty listing is now cached
        data = random_bytes(3 * MiB + 17, 5)
        f = self.start_writing(mnt, "d/w.bin", data[:2 * MiB])
        size = lambda: os.stat(mnt.path("d", "w.bin")).st_size
        seen = {"written": size()}
        listed = os.listdir(mnt.path("d"))
        # A listing (READDIRPLUS) while the file is written must not shrink what stat shows.
        seen["after a listing"] = size()
        f.write(data[2 * MiB:])
        seen["all written"] = size()
        f.close()
        seen["closed"] = size()
        with open(mnt.path("d", "w.bin"), "rb") as g:
            seen["bytes read back"] = len(g.read())
        # The same with the listing after the last write: nothing corrects the size then.
        v = self.start_writing(mnt, "d/v.bin", data)
        listed_v = sorted(os.listdir(mnt.path("d")))
        v.close()
        seen["v.bin closed"] = os.stat(mnt.path("d", "v.bin")).st_size
        with open(mnt.path("d", "v.bin"), "rb") as g:
            seen["v.bin bytes read back"] = len(g.read())
        self.assertEqual((listed, listed_v), (["w.bin"], ["v.bin", "w.bin"]))
        self.assertEqual(seen, {"written": 2 * MiB, "after a listing": 2 * MiB,
                                "all written": len(data), "closed": len(data),
                                "bytes read back": len(data), "v.bin closed": len(data),
                                "v.bin bytes read back": len(data)})
        with open(mnt.path("d", "w.bin"), "rb") as g:
            self.assertEqual(g.read(), data)
        ls = subprocess.run(["ls", "-ln", mnt.path("d")], capture_output=True, text=True,
                            check=True).stdout
        self.assertRegex(ls, r"\n-rw-r--r-- 1 \d+ \d+ %d .* w\.bin\n" % len(data))

    def test_a_reader_here_reads_what_is_written_other_mounts_see_the_object_after_close(self):
        mnt = self.mount("--upload-part-size", "1MiB")
        other = self.fresh_mount()
        data = random_bytes(3 * MiB + 17, 6)
        f = self.start_writing(mnt, "w.bin", data[:2 * MiB])
        self.assertEqual(os.stat(mnt.path("w.bin")).st_size, 2 * MiB)
        # A reader on this mount reads the bytes so far (the file moves to its staged copy).
        with open(mnt.path("w.bin"), "rb") as r:
            self.assertEqual(r.read(), data[:2 * MiB])
        self.assertEqual(os.listdir(other.mountpoint), [])
        self.assertFalse(os.path.exists(other.path("w.bin")))
        self.assertFalse(os.path.exists(self.on_server("w.bin")))
        f.write(data[2 * MiB:])
        self.assertFalse(os.path.exists(other.path("w.bin")))
        f.close()
        # close returned: the object is complete, for everyone.
        self.assertEqual(os.stat(other.path("w.bin")).st_size, len(data))
        with open(other.path("w.bin"), "rb") as g:
            self.assertEqual(g.read(), data)
        with open(self.on_server("w.bin"), "rb") as g:
            self.assertEqual(g.read(), data)
        with open(mnt.path("w.bin"), "rb") as g:
            self.assertEqual(g.read(), data)
        self.assert_no_open_uploads()
        self.assertEqual(mnt.unmount(), 0)
        self.assert_clean_log(mnt)

    def test_new_files_in_a_cached_listing_with_their_sizes(self):
        mnt = self.mount()
        other = self.fresh_mount()
        self.assertEqual(os.listdir(mnt.mountpoint), [])
        for i in range(3):
            with open(mnt.path("n%d.txt" % i), "w") as g:
                g.write("x" * i)
        self.assertEqual(sorted(os.listdir(mnt.mountpoint)), ["n0.txt", "n1.txt", "n2.txt"])
        self.assertEqual([os.stat(mnt.path("n%d.txt" % i)).st_size for i in range(3)],
                         [0, 1, 2])
        self.assertEqual(sorted(os.listdir(other.mountpoint)), ["n0.txt", "n1.txt", "n2.txt"])
        # A shell redirection (open, dup2, close before any write) still writes the file.
        subprocess.run("echo hello > %s" % mnt.path("sh.txt"), shell=True, check=True)
        with open(other.path("sh.txt")) as g:
            self.assertEqual(g.read(), "hello\n")
        subprocess.run(": > %s" % mnt.path("empty.txt"), shell=True, check=True)
        self.assertEqual(os.stat(other.path("empty.txt")).st_size, 0)
        self.assertEqual(os.path.getsize(self.on_server("empty.txt")), 0)
        self.assert_no_open_uploads()
        self.assertEqual(mnt.unmount(), 0)
        self.assert_clean_log(mnt)

    def test_a_child_closing_an_inherited_descriptor_does_not_end_the_file(self):
        mnt = self.mount("--upload-part-size", "1MiB")
        other = self.fresh_mount()
        data = random_bytes(2 * MiB, 9)
        fd = os.open(mnt.path("fork.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, data[:MiB])
        pid = os.fork()
        if pid == 0:
            try:
                os.close(fd)  # a flush from another process
            finally:
                os._exit(0)
        self.assertEqual(os.waitpid(pid, 0)[1], 0)
        self.assertFalse(os.path.exists(other.path("fork.bin")))
        os.write(fd, data[MiB:])  # still writable
        os.close(fd)
        with open(other.path("fork.bin"), "rb") as g:
            self.assertEqual(g.read(), data)
        self.assert_no_open_uploads()


class S3WritesTest(unittest.TestCase):
    """The same path over s3rver: SigV4 with Content-MD5, parts of at least 5 MiB."""

    def test_torch_round_trip_mkdir_rename_rm(self):
        import torch
        server = harness.S3rver(bucket="bucket")
        self.addCleanup(server.stop)
        journal = tempfile.mkdtemp(prefix="upload-journal-")
        mnt = harness.Mount(server, args=["--allow-writes", "--upload-journal", journal,
                                          "--metadata-ttl", "indefinite"])
        self.addCleanup(mnt.close)
        seed = 21
        state = make_state(seed)  # about 57 MiB: several 8 MiB parts
        os.mkdir(mnt.path("ckpt"))
        torch.save(state, mnt.path("ckpt", "model.tmp"))
        os.rename(mnt.path("ckpt", "model.tmp"), mnt.path("ckpt", "model.pt"))
        local = os.path.join(tempfile.mkdtemp(prefix="local-s3-"), "model.tmp")
        torch.save(state, local)
        del state
        with open(mnt.path("ckpt", "notes.txt"), "w") as f:
            f.write("step 1\n")
        os.mkdir(mnt.path("ckpt", "empty"))
        os.mkdir(mnt.path("gone"))
        with open(mnt.path("gone", "x"), "wb") as f:
            f.write(b"x")
        os.remove(mnt.path("gone", "x"))
        os.rmdir(mnt.path("gone"))
        self.assertEqual(sorted(os.listdir(mnt.mountpoint)), ["ckpt"])
        self.assertEqual(mnt.unmount(), 0)
        self.assertEqual(failed_fuse_ops(mnt.output()), [])
        mnt.close()
        fresh = harness.Mount(server, args=["--metadata-ttl", "0"])
        self.addCleanup(fresh.close)
        self.assertEqual(sorted(os.listdir(fresh.mountpoint)), ["ckpt"])
        self.assertEqual(sorted(os.listdir(fresh.path("ckpt"))),
                         ["empty", "model.pt", "notes.txt"])
        self.assertEqual(harness.sha256_file(fresh.path("ckpt", "model.pt")),
                         harness.sha256_file(local))
        out = run_child("w.load_and_check(sys.argv[1], %d, 1)" % seed,
                        fresh.path("ckpt", "model.pt"))
        self.assertIn("equal tensors: 9", out)
        with open(fresh.path("ckpt", "notes.txt")) as f:
            self.assertEqual(f.read(), "step 1\n")
        # The object store's own listing: no temporary name, no removed key.
        keys = harness.client(server, "ls", "-r", "").stdout.decode()
        self.assertNotIn("model.tmp", keys)
        self.assertNotIn("gone", keys)
        self.assertIn("ckpt/model.pt", keys)


class ConcurrentWritersTest(WriteMountCase):
    FILES = 64
    SIZE = 40 * MiB
    MAX_MEMORY = 256 * MiB

    def test_64_files_at_once_stay_within_max_memory(self):
        """64 writers of 40 MiB each (2.5 GiB, ten times --max-memory) at once. Every object is
        exact. Bound on the daemon's peak RSS (VmHWM): its RSS right after the mount (code,
        libraries, FUSE rings, the first buffers) + --max-memory (all part buffers together) +
        one write request per writer waiting for room (the budget's documented overshoot,
        64 MiB here; over /dev/fuse, as a supervised mount serves, the kernel lets every
        writer have one in flight) + 64 MiB (allocator slack, thread stacks, HTTP state of 64
        uploads)."""
        mnt = self.mount("--max-memory", "256MiB")
        baseline = proc_status_kib(mnt.daemon_pid(), "VmRSS")
        digests = {}
        errors = []
        chunk = MiB

        def write(i):
            h = hashlib.sha256()
            block = bytearray(random_bytes(chunk, 100 + i))
            try:
                with open(mnt.path("many", "f%02d.bin" % i), "wb", buffering=0) as f:
                    for off in range(0, self.SIZE, chunk):
                        block[:16] = b"%04d:%011d" % (i, off)  # every MiB differs
                        f.write(block)
                        h.update(block)
                digests["many/f%02d.bin" % i] = h.hexdigest()
            except OSError as e:
                errors.append((i, e))

        # The daemon's own account of its data buffers, sampled while the writers run.
        used = []
        writing = threading.Event()

        def sample():
            while not writing.is_set():
                used.append(harness.mount_metric(mnt.mountpoint, "gauges",
                                                 "ossmount_memory_used_bytes"))
                writing.wait(0.1)

        os.mkdir(mnt.path("many"))
        sampler = threading.Thread(target=sample)
        sampler.start()
        threads = [threading.Thread(target=write, args=(i,)) for i in range(self.FILES)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        writing.set()
        sampler.join()
        self.assertEqual(errors, [])
        print("\nossmount_memory_used_bytes: highest sample %d (%d samples)" %
              (max(used), len(used)))
        peak = proc_status_kib(mnt.daemon_pid(), "VmHWM")
        limit = baseline + (self.MAX_MEMORY + self.FILES * MiB + 64 * MiB) // 1024
        print("\nVmRSS after mount %d KiB, VmHWM after the writes %d KiB, limit %d KiB" %
              (baseline, peak, limit))
        self.assertEqual(len(digests), self.FILES)
        for rel, digest in digests.items():
            self.assertEqual(os.path.getsize(self.on_server(rel)), self.SIZE, rel)
            self.assertEqual(harness.sha256_file(self.on_server(rel)), digest, rel)
        self.assert_no_open_uploads()
        # The budget may be exceeded by one write request (1 MiB) per writer waiting for room
        # (docs/ARCHITECTURE.md, "The write path"): 64 writers, 64 MiB.
        self.assertLessEqual(max(used), self.MAX_MEMORY + self.FILES * MiB,
                             "the daemon's own memory gauge")
        self.assertLessEqual(peak, limit)
        self.assertEqual(mnt.unmount(), 0)
        self.assert_clean_log(mnt)


def proc_status_kib(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError("no %s for pid %d" % (field, pid))


if __name__ == "__main__":
    harness.main()
