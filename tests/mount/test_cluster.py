"""Multi-node reads through a shared accelerator, with nodes as network namespaces.

One origin ossmount-testserver holds an ImageFolder dataset and answers after a TTFB;
another one runs as an accelerator in front of it (--origin), without latency of its own.
Two simulated nodes (network namespaces, tests/mount/netns_nodes.py) each run one daemon
with --endpoint = origin (listings, metadata) and --data-endpoint = accelerator (GET/HEAD),
and take their tree from one manifest object in the bucket (--manifest oss://BUCKET/KEY,
written once with `ossmount-client manifest`), so no node lists the bucket. On each node two
ranks of a 4-rank job run DistributedSampler (shuffle, set_epoch) over torchvision ImageFolder
on their node's mount and send their sampler order as hints (python/ossmount_hints.py).

Checked, over two epochs: every rank read exactly its shard (computed here from the source
tree with the same sampler), byte for byte; the shards together are the dataset; the origin
got no LIST at all, at most one GET per object in the first epoch and none in the second
(every object the second epoch's new shuffle sends to another node is an accelerator hit);
the accelerator answered the second epoch from memory only. docs/SEMANTICS.md, "Manifest
mode", names this test for --manifest oss://.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import harness
import netns_nodes

BUCKET = "cluster"
MANIFEST_KEY = "manifests/train.tsv"
NODES = 2
RANKS_PER_NODE = 2
WORLD = NODES * RANKS_PER_NODE
SEED = 17
ORIGIN_TTFB_MS = 25

# One rank for one epoch: argv = python dir, dataset root, rank, world, seed, epoch. Reads its
# DistributedSampler shard through a DataLoader whose sampler sends the order as hints, and
# prints the shard's paths in order and the digest of every file it read.
RANK_SCRIPT = r"""
import hashlib, json, os, sys
sys.path.insert(0, sys.argv[1])
import torch, torchvision
import ossmount_hints
root, rank, world, seed, epoch = sys.argv[2], *map(int, sys.argv[3:7])

def digest(path):
    with open(path, "rb") as f:
        return path, hashlib.sha256(f.read()).hexdigest()

dataset = torchvision.datasets.ImageFolder(root, loader=digest)
shard = torch.utils.data.distributed.DistributedSampler(
    dataset, num_replicas=world, rank=rank, shuffle=True, seed=seed)
sampler = ossmount_hints.HintedSampler(shard, dataset)
sampler.set_epoch(epoch)
data = torch.utils.data.DataLoader(dataset, sampler=sampler, batch_size=8, num_workers=2,
                                   collate_fn=lambda b: b)
digests = {}
for batch in data:
    for (path, d), _ in batch:
        digests[os.path.relpath(path, root)] = d
order = [os.path.relpath(dataset.samples[i][0], root) for i in shard]
print(json.dumps({"rank": rank, "sent": sampler.sent, "order": order, "digests": digests}))
"""


def get_json(server, what):
    import urllib.request
    with urllib.request.urlopen(server.endpoint + "/_ossmount/" + what, timeout=10) as r:
        return json.loads(r.read())


class NodeMount:
    """One node's daemon, started inside the node's network namespace, in the foreground;
    ready once it sent READY=1 (the mount answers)."""

    def __init__(self, nodes, k, cmd, env):
        self.mountpoint = tempfile.mkdtemp(prefix="ossmount-node%d-" % k)
        self.log = tempfile.NamedTemporaryFile(prefix="ossmount-node%d-" % k, suffix=".log",
                                               delete=False)
        self.notify_dir = tempfile.mkdtemp(prefix="ossmount-notify-")
        self.notify = harness.NotifyListener(self.notify_dir)
        env = dict(env, NOTIFY_SOCKET=self.notify.path)
        self.proc = subprocess.Popen(nodes.command(k, cmd(self.mountpoint)), env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        ready = []

        def started():
            message = self.notify.receive(0.05)
            if message is not None and "READY=1" in message.split("\n"):
                ready.append(True)
            return ready or self.proc.poll() is not None
        try:
            harness.wait_for(started, 60, "node %d's mount" % k)
        except AssertionError:
            self.close()
            raise
        if self.proc.poll() is not None:
            self.close()
            raise AssertionError("node %d's ossmount exited %s: %s" %
                                 (k, self.proc.returncode, harness.read_text(self.log.name)))

    def output(self):
        return harness.read_text(self.log.name)

    def close(self):
        harness.force_unmount(self.mountpoint)
        harness.stop_process(self.proc)
        self.notify.close()
        self.log.close()
        with __import__("contextlib").suppress(OSError):
            os.rmdir(self.mountpoint)


def expected_shards(source_root, epoch):
    """rank -> the paths DistributedSampler gives it, computed from the source tree on disk
    (not through any mount): what each rank must have read."""
    import torch
    import torchvision
    dataset = torchvision.datasets.ImageFolder(source_root, loader=lambda p: p)
    shards = {}
    for rank in range(WORLD):
        s = torch.utils.data.distributed.DistributedSampler(
            dataset, num_replicas=WORLD, rank=rank, shuffle=True, seed=SEED)
        s.set_epoch(epoch)
        shards[rank] = [os.path.relpath(dataset.samples[i][0], source_root) for i in s]
    return shards


class ClusterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        src = harness.ensure_dataset("imagefolder", "cluster-images", "--classes", "8",
                                     "--per-class", "250", "--seed", "23")
        cls.source = os.path.join(src, "train")
        # Hard links: a bucket of our own (the manifest object is added to it) without
        # copying 230 MB or writing into the shared dataset.
        cls.root = tempfile.mkdtemp(prefix="cluster-origin-")
        subprocess.run(["cp", "-al", src, os.path.join(cls.root, BUCKET)], check=True)
        cls.digests = {rel[len("train/"):]: d for rel, (_, d) in harness.read_manifest(src).items()
                       if rel.startswith("train/")}
        cls.nodes = netns_nodes.Nodes(NODES)
        cls.nodes.__enter__()
        cls.servers = []
        try:
            cls.origin = cls.start_server(cls.root, ["--ttfb-ms", str(ORIGIN_TTFB_MS)])
            # The manifest: one listing of the bucket, written once, put into the bucket.
            manifest = os.path.join(cls.root, "train.tsv")
            harness.client(cls.origin, "manifest", "train/", "-o", manifest)
            harness.client(cls.origin, "put", MANIFEST_KEY, manifest)
            cls.accel = cls.start_server(tempfile.mkdtemp(prefix="cluster-accel-"),
                                         ["--origin", cls.origin.endpoint])
            for k in range(NODES):
                for server in (cls.origin, cls.accel):
                    if not cls.nodes.can_connect(k, server.port):
                        raise AssertionError("node %d cannot reach %s" % (k, server.endpoint))
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start_server(cls, root, args):
        host = cls.nodes.host_address
        server = harness.TestServer(root, bucket=BUCKET, args=["--host", host] + args)
        server.endpoint = "http://%s:%d" % (host, server.port)
        cls.servers.append(server)
        return server

    @classmethod
    def tearDownClass(cls):
        for server in cls.servers:
            server.stop()
        run = cls.nodes.run
        cls.nodes.__exit__(None, None, None)
        left = netns_nodes.leftovers(run)
        assert left == ([], []), "teardown left %r" % (left,)

    def mount_command(self, mountpoint):
        return [harness.OSSMOUNT, BUCKET + ":/train", mountpoint, "-f",
                "--region", harness.REGION, "--path-style",
                "--endpoint", self.origin.endpoint, "--data-endpoint", self.accel.endpoint,
                "--manifest", "oss://%s/%s" % (BUCKET, MANIFEST_KEY),
                "--metadata-ttl", "indefinite"]

    def run_epoch(self, mounts, epoch):
        """Runs every rank of one epoch at once (ranks 2k and 2k+1 on node k); rank -> its
        report."""
        procs = []
        for rank in range(WORLD):
            k = rank // RANKS_PER_NODE
            cmd = ["/usr/bin/python3", "-c", RANK_SCRIPT,
                   os.path.join(harness.SOURCE_DIR, "python"), mounts[k].mountpoint,
                   str(rank), str(WORLD), str(SEED), str(epoch)]
            procs.append(subprocess.Popen(self.nodes.command(k, cmd), stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        reports = {}
        for rank, p in enumerate(procs):
            out, err = p.communicate(timeout=600)
            self.assertEqual(p.returncode, 0, "rank %d: %s" % (rank, err[-3000:]))
            reports[rank] = json.loads(out.strip().splitlines()[-1])
        return reports

    def check_shards(self, reports, epoch):
        expected = expected_shards(self.source, epoch)
        union = set()
        for rank, report in reports.items():
            # Exactly its shard, in the sampler's order, and nothing else.
            self.assertEqual(report["order"], expected[rank], "rank %d" % rank)
            self.assertEqual(sorted(report["digests"]), sorted(expected[rank]), "rank %d" % rank)
            self.assertEqual(report["sent"], len(expected[rank]), "rank %d's hints" % rank)
            for rel, digest in report["digests"].items():
                self.assertEqual(digest, self.digests[rel], rel)
            self.assertFalse(union & set(expected[rank]), "shards overlap")
            union |= set(expected[rank])
        self.assertEqual(union, set(self.digests))  # together: the whole dataset
        return expected

    def test_two_nodes_four_ranks_two_epochs_through_the_accelerator(self):
        n = len(self.digests)
        self.assertEqual(n % WORLD, 0)  # no padding: every rank's shard is distinct
        self.origin.reset_stats()
        self.accel.reset_stats()
        mounts = []
        try:
            for k in range(NODES):
                mounts.append(NodeMount(self.nodes, k, self.mount_command, self.origin.env()))
            host_net = os.readlink("/proc/self/ns/net")
            for k, m in enumerate(mounts):
                # The daemon runs in node k's network namespace, and its mount is a mount of
                # the host (shared mount namespace): visible here and to every node.
                self.assertNotEqual(os.readlink("/proc/%d/ns/net" % m.proc.pid), host_net)
                self.assertTrue(harness.is_mounted(m.mountpoint))
                self.assertEqual(len(os.listdir(m.mountpoint)), 8)
            start = self.origin.stats()
            # No node listed the bucket: the tree came from the manifest object, which the
            # accelerator fetched from the origin once (HEAD and GET of both nodes).
            self.assertEqual(start["LIST"], 0, start)
            self.assertEqual(start["HEAD"], 0, start)
            gets = get_json(self.origin, "object-gets")
            self.assertEqual(gets["keys"], {BUCKET + "/" + MANIFEST_KEY: 1}, gets)

            # Epoch 0: a cold accelerator. Each object from the origin at most once; the
            # shards are disjoint, so exactly once.
            self.origin.reset_stats()
            self.accel.reset_stats()
            reports = self.run_epoch(mounts, 0)
            first = self.check_shards(reports, 0)
            gets = get_json(self.origin, "object-gets")
            self.assertEqual(gets["max"], 1, {k: v for k, v in gets["keys"].items() if v > 1})
            self.assertEqual(gets["objects"], n)
            origin = self.origin.stats()
            self.assertEqual(origin["LIST"], 0, origin)
            self.assertEqual(origin["HEAD"], 0, origin)
            acc = get_json(self.accel, "accelerator")
            self.assertEqual(acc["misses"] + acc["merged"], n, acc)
            self.assertEqual(acc["origin_errors"], 0, acc)
            self.assertEqual(acc["cached_objects"], n + 1, acc)  # and the manifest

            # Epoch 1: a new shuffle sends most objects to another node. The origin serves
            # nothing; the accelerator answers from memory. A node may read an object it
            # read in epoch 0 from its own page cache (keep_cache), so the accelerator sees
            # at least the objects that moved to another node, and only hits.
            self.origin.reset_stats()
            self.accel.reset_stats()
            reports = self.run_epoch(mounts, 1)
            second = self.check_shards(reports, 1)
            origin = self.origin.stats()
            self.assertEqual(origin["GET"], 0, origin)
            self.assertEqual(origin["LIST"], 0, origin)
            self.assertEqual(get_json(self.origin, "object-gets")["objects"], 0)
            node_of = lambda shards: {rel: r // RANKS_PER_NODE
                                      for r, paths in shards.items() for rel in paths}
            before, after = node_of(first), node_of(second)
            moved = sum(1 for rel in after if after[rel] != before[rel])
            self.assertGreater(moved, n // 4)  # the test means something: data changed nodes
            acc = get_json(self.accel, "accelerator")
            self.assertEqual(acc["misses"], 0, acc)
            self.assertEqual(acc["merged"], 0, acc)
            self.assertGreaterEqual(acc["hits"], moved, acc)
            self.assertEqual(self.accel.stats()["GET"], acc["hits"])

            for k, m in enumerate(mounts):
                # A clean unmount: the daemon in its namespace exits 0.
                subprocess.run(["fusermount3", "-u", m.mountpoint], check=True)
                self.assertEqual(m.proc.wait(30), 0, "node %d: %s" % (k, m.output()[-2000:]))
        finally:
            for m in mounts:
                m.close()

    def test_a_missing_manifest_object_fails_the_start_without_listing(self):
        self.origin.reset_stats()
        mountpoint = tempfile.mkdtemp(prefix="ossmount-missing-")
        cmd = self.mount_command(mountpoint)
        cmd[cmd.index("--manifest") + 1] = "oss://%s/manifests/none.tsv" % BUCKET
        r = subprocess.run(self.nodes.command(0, cmd), env=self.origin.env(),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("manifest oss://%s/manifests/none.tsv: no such object" % BUCKET,
                      r.stdout + r.stderr)
        self.assertFalse(harness.is_mounted(mountpoint))
        self.assertEqual(self.origin.stats()["LIST"], 0)


if __name__ == "__main__":
    reason = netns_nodes.unsupported_reason()
    if reason:
        print("SKIPPED: simulated nodes need network namespaces: %s" % reason)
        harness.remove_run_dir()
        sys.exit(harness.SKIP_EXIT)
    harness.main()
