#!/usr/bin/python3
"""Multi-node reads through a shared accelerator, with N simulated nodes on this machine.

  bench/cluster.py [--nodes 1,2,4] [--ranks-per-node 2] [--workers 2] [--origin-ttfb-ms 35]
                   [--accel-ttfb-ms 0] [--files N]

For each N: a bridge and N network namespaces (tests/mount/netns_nodes.py); an origin
ossmount-testserver over the benchmark's image bucket (bench/ossbench/datasets.py: 5,000
JPEGs of 110-120 KB) paced with --ttfb-ms (per request, as bench/ossbench paces its server);
an accelerator ossmount-testserver in front of it (--origin), unpaced unless told; one
manifest object in the bucket, written with `ossmount-client manifest`. Each node runs one
daemon (--endpoint origin, --data-endpoint accelerator, --manifest oss://...) and R reader
ranks: DistributedSampler(num_replicas=N*R) shards over torchvision ImageFolder with a
loader that reads each file's bytes, DataLoader workers, sampler-order hints
(python/ossmount_hints.py). Two epochs: the first with a cold accelerator, the second (new
mounts, so no node's page cache helps) with the accelerator holding every object.

Reported per N and epoch: files/s per node and in total, origin GETs per object (mean and
max), accelerator hit ratio, CPU seconds of the daemons, the servers and the whole machine.
Writes bench/results/cluster-<UTC timestamp>.md (and .json). Needs root. Waits while
/tmp/bench-running exists and holds it while it runs.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(REPO, "tests", "mount"))
from ossbench import datasets  # noqa: E402
from ossbench.server import proc_cpu_seconds, stop_process  # noqa: E402
import netns_nodes  # noqa: E402

BUILD = os.environ.get("BUILD_DIR", os.path.join(REPO, "build"))
OSSMOUNT = os.path.join(BUILD, "daemon", "ossmount")
TESTSERVER = os.path.join(BUILD, "tests", "server", "ossmount-testserver")
CLIENT = os.path.join(BUILD, "tools", "ossmount-client")
DATA_ROOT = os.path.join(BENCH, "data", "root")
BUCKET = "img"
MANIFEST_KEY = "manifests/cluster-train.tsv"
LOCK = "/tmp/bench-running"
SEED = 5

# One reader rank for one epoch: argv = python dir, dataset root, rank, world, epoch,
# workers, meeting dir, files limit. Builds its shard, says it is ready, waits for "go" (so
# every rank of every node starts together), reads, prints JSON.
RANK_SCRIPT = r"""
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[1])
import torch, torchvision
import ossmount_hints
root = sys.argv[2]
rank, world, epoch, workers = map(int, sys.argv[3:7])
meet, limit = sys.argv[7], int(sys.argv[8])

def load(path):
    with open(path, "rb") as f:
        return len(f.read())

dataset = torchvision.datasets.ImageFolder(root, loader=load)
if limit and limit < len(dataset):
    dataset = torch.utils.data.Subset(dataset, range(limit))
    paths = [dataset.dataset.samples[i][0] for i in range(limit)]
else:
    paths = [p for p, _ in dataset.samples]
shard = torch.utils.data.distributed.DistributedSampler(
    dataset, num_replicas=world, rank=rank, shuffle=True, seed=%d)
sampler = ossmount_hints.HintedSampler(shard, paths=paths)
sampler.set_epoch(epoch)
data = torch.utils.data.DataLoader(dataset, sampler=sampler, batch_size=16,
                                   num_workers=workers, collate_fn=lambda b: b,
                                   persistent_workers=False)
open(os.path.join(meet, "ready.%%d" %% rank), "w").close()
while not os.path.exists(os.path.join(meet, "go")):
    time.sleep(0.005)
def cpu():
    return sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF,
               resource.RUSAGE_CHILDREN) for f in ("ru_utime", "ru_stime"))

cpu0 = cpu()  # the epoch's cost only, not torch's import or the dataset's scan
start = time.monotonic()
files = nbytes = 0
for batch in data:
    for n, _ in batch:
        files += 1
        nbytes += n
elapsed = time.monotonic() - start
del data  # joins the workers, so that their CPU is counted as this process's children's
print(json.dumps({"rank": rank, "files": files, "bytes": nbytes, "seconds": elapsed,
                  "sent": sampler.sent, "cpu_s": cpu() - cpu0}))
""" % SEED


def log(msg):
    print("[cluster %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def machine_busy_seconds():
    """CPU seconds all cores spent busy since boot (user+nice+system+irq+softirq+steal)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    busy = fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]
    return busy / os.sysconf("SC_CLK_TCK")


def control(endpoint, method, what):
    req = urllib.request.Request(endpoint + "/_ossmount/" + what, method=method,
                                 data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


class Server:
    def __init__(self, root, host, args, log_dir, name):
        self.log = open(os.path.join(log_dir, name + ".log"), "w")
        cmd = [TESTSERVER, "--root", root, "--bucket", BUCKET, "--host", host, "--port", "0",
               "--auth", "off", "--threads", "2"] + args
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            self.proc.kill()
            raise RuntimeError("%s did not start: %r" % (name, line))
        self.port = int(line.strip().rsplit(":", 1)[1])
        self.endpoint = "http://%s:%d" % (host, self.port)

    def cpu(self):
        return proc_cpu_seconds(self.proc.pid) or 0.0

    def stop(self):
        stop_process(self.proc)
        self.log.close()


def is_mounted(path):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


class NodeDaemon:
    def __init__(self, nodes, k, origin, accel, work):
        self.mountpoint = tempfile.mkdtemp(prefix="mnt%d-" % k, dir=work)
        self.log = open(os.path.join(work, "ossmount-node%d-%d.log" % (k, time.time_ns())), "w")
        cmd = [OSSMOUNT, BUCKET + ":/train", self.mountpoint, "-f", "--path-style",
               "--region", "cn-hangzhou", "--endpoint", origin.endpoint,
               "--data-endpoint", accel.endpoint, "--anonymous",
               "--manifest", "oss://%s/%s" % (BUCKET, MANIFEST_KEY),
               "--metadata-ttl", "indefinite"]
        self.proc = subprocess.Popen(nodes.command(k, cmd), stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not is_mounted(self.mountpoint):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("node %d's daemon did not mount (log %s)" % (k, self.log.name))
            time.sleep(0.05)
        os.listdir(self.mountpoint)

    def cpu(self):
        return proc_cpu_seconds(self.proc.pid) or 0.0

    def stop(self):
        subprocess.run(["fusermount3", "-u", self.mountpoint], stderr=subprocess.DEVNULL)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            subprocess.run(["umount", "-l", self.mountpoint], stderr=subprocess.DEVNULL)
        self.log.close()


def run_epoch(nodes, daemons, args, epoch, work):
    """All ranks of one epoch; returns per-rank reports and the wall time from 'go' until
    the last rank finished."""
    n = nodes.count
    world = n * args.ranks_per_node
    meet = tempfile.mkdtemp(prefix="meet-", dir=work)
    procs = []
    for rank in range(world):
        k = rank // args.ranks_per_node
        cmd = ["/usr/bin/python3", "-c", RANK_SCRIPT, os.path.join(REPO, "python"),
               daemons[k].mountpoint, str(rank), str(world), str(epoch), str(args.workers),
               meet, str(args.files)]
        procs.append(subprocess.Popen(nodes.command(k, cmd), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    deadline = time.monotonic() + 300
    while len([f for f in os.listdir(meet) if f.startswith("ready.")]) < world:
        if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
            for p in procs:
                p.kill()
            raise RuntimeError("a rank did not get ready: %s" %
                               [p.communicate()[1][-1500:] for p in procs])
        time.sleep(0.02)
    cpu0 = machine_busy_seconds()
    t0 = time.monotonic()
    open(os.path.join(meet, "go"), "w").close()
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=1800)
        if p.returncode != 0:
            raise RuntimeError("rank failed: %s" % err[-3000:])
        reports.append(json.loads(out.strip().splitlines()[-1]))
    # Until the last rank read its last file (not until the processes exited: DataLoader
    # shutdown is no part of the epoch).
    wall = max(r["seconds"] for r in reports)
    machine_cpu = machine_busy_seconds() - cpu0
    busy = machine_cpu / (os.cpu_count() * (time.monotonic() - t0))
    return reports, wall, busy


def measure(n, args, source_root, work):
    log("N=%d: making %d node(s)" % (n, n))
    result = {"nodes": n, "epochs": []}
    with netns_nodes.Nodes(n) as nodes:
        origin = accel = None
        try:
            host = nodes.host_address
            origin = Server(source_root, host, ["--ttfb-ms", str(args.origin_ttfb_ms),
                                                "--memory-cache-mb", "2048"], work, "origin")
            subprocess.run([CLIENT, "--endpoint", origin.endpoint, "--bucket", BUCKET,
                            "--path-style", "--anonymous", "manifest", "train",
                            "-o", os.path.join(work, "train.tsv")], check=True,
                           capture_output=True)
            subprocess.run([CLIENT, "--endpoint", origin.endpoint, "--bucket", BUCKET,
                            "--path-style", "--anonymous", "put", MANIFEST_KEY,
                            os.path.join(work, "train.tsv")], check=True, capture_output=True)
            accel = Server(tempfile.mkdtemp(prefix="accel-", dir=work), host,
                           ["--origin", origin.endpoint, "--ttfb-ms", str(args.accel_ttfb_ms),
                            "--accelerator-cache-mb", "4096"], work, "accelerator")
            for epoch in range(2):
                daemons = [NodeDaemon(nodes, k, origin, accel, work) for k in range(n)]
                try:
                    control(origin.endpoint, "POST", "reset")
                    control(accel.endpoint, "POST", "reset")
                    cpu_before = ([d.cpu() for d in daemons], origin.cpu(), accel.cpu())
                    log("N=%d epoch %d: %s accelerator" %
                        (n, epoch + 1, "cold" if epoch == 0 else "warm"))
                    reports, wall, machine_busy = run_epoch(nodes, daemons, args, epoch, work)
                    gets = control(origin.endpoint, "GET", "object-gets")
                    acc = control(accel.endpoint, "GET", "accelerator")
                    ostats = control(origin.endpoint, "GET", "stats")
                    files = sum(r["files"] for r in reports)
                    per_node = []
                    for k in range(n):
                        mine = [r for r in reports if r["rank"] // args.ranks_per_node == k]
                        per_node.append(sum(r["files"] for r in mine) /
                                        max(r["seconds"] for r in mine))
                    dataset_gets = {key: c for key, c in gets["keys"].items()
                                    if not key.endswith(MANIFEST_KEY)}
                    result["epochs"].append({
                        "epoch": epoch + 1, "files": files, "wall_s": wall,
                        "files_per_s": files / wall, "per_node_files_per_s": per_node,
                        "origin_gets": sum(dataset_gets.values()),
                        "origin_gets_max_per_object": max(dataset_gets.values(), default=0),
                        "origin_list": ostats.get("LIST", 0), "origin_head": ostats.get("HEAD", 0),
                        "accel_hits": acc["hits"], "accel_misses": acc["misses"],
                        "accel_merged": acc["merged"],
                        "daemon_cpu_s": sum(d.cpu() for d in daemons) - sum(cpu_before[0]),
                        "origin_cpu_s": origin.cpu() - cpu_before[1],
                        "accel_cpu_s": accel.cpu() - cpu_before[2],
                        "ranks_cpu_s": sum(r["cpu_s"] for r in reports),
                        "machine_busy": machine_busy,
                    })
                    e = result["epochs"][-1]
                    log("  %d files in %.1f s: %.0f files/s total, per node %s; origin GETs %d "
                        "(max %d/object); accelerator hits %d misses %d" %
                        (files, wall, e["files_per_s"], ["%.0f" % x for x in per_node],
                         e["origin_gets"], e["origin_gets_max_per_object"], acc["hits"],
                         acc["misses"]))
                finally:
                    for d in daemons:
                        d.stop()
        finally:
            for s in (accel, origin):
                if s:
                    s.stop()
    return result


def report_md(doc):
    lines = ["# Multi-node reads through a shared accelerator (bench/cluster.py)", "",
             "Run %s on %s (%d CPUs, load average at start %s). Origin: ossmount-testserver, "
             "TTFB %d ms per request; accelerator: ossmount-testserver --origin, TTFB %d ms. "
             "Each node: one ossmount (`--manifest oss://`, `--metadata-ttl indefinite`, "
             "defaults otherwise) in its own network namespace and %d rank(s) with %d "
             "DataLoader workers each, DistributedSampler shards with sampler-order hints, a "
             "loader that reads each file's bytes (no decode). %d files of %.0f KB average. "
             "Epoch 1: cold accelerator; epoch 2: new mounts, warm accelerator." %
             (doc["time"], doc["host"], doc["cpus"], doc["load_before"], doc["origin_ttfb_ms"],
              doc["accel_ttfb_ms"], doc["ranks_per_node"], doc["workers"], doc["files"],
              doc["avg_kb"]), "",
             "| N | epoch | total files/s | files/s per node | origin GETs per object (mean / max) "
             "| origin LIST | accelerator hit ratio | CPU s: daemons / origin / accelerator / "
             "reader ranks | CPU per file, all of ours | CPU cap (cores / CPU per file) | "
             "machine busy |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["results"]:
        for e in r["epochs"]:
            asked = e["accel_hits"] + e["accel_misses"] + e["accel_merged"]
            ours = e["daemon_cpu_s"] + e["origin_cpu_s"] + e["accel_cpu_s"] + e["ranks_cpu_s"]
            per_file = ours / max(1, e["files"])
            lines.append(
                "| %d | %d | %.0f | %s | %.2f / %d | %d | %s | %.1f / %.1f / %.1f / %.1f | "
                "%.2f ms | %.0f files/s | %.0f%% |" % (
                    r["nodes"], e["epoch"], e["files_per_s"],
                    ", ".join("%.0f" % x for x in e["per_node_files_per_s"]),
                    e["origin_gets"] / max(1, e["files"]), e["origin_gets_max_per_object"],
                    e["origin_list"], "%.3f" % (e["accel_hits"] / asked) if asked else "-",
                    e["daemon_cpu_s"], e["origin_cpu_s"], e["accel_cpu_s"], e["ranks_cpu_s"],
                    1000 * per_file, doc["cpus"] / per_file if per_file else 0,
                    100 * e["machine_busy"]))
    lines += ["", "Total files/s counts from the moment every rank was ready (dataset built, "
              "workers about to start) until the last rank read its last file; per node, "
              "until that node's last rank finished. CPU per file counts every process of the "
              "run (daemons, both servers, reader ranks with their DataLoader workers); the "
              "CPU cap is what all cores could read at that cost per file if nothing else ran. "
              "Machine busy is the share of all cores' time that was busy during the epoch "
              "(/proc/stat), other work on the shared machine included.", "",
              doc.get("notes", "")]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", default="1,2,4")
    ap.add_argument("--ranks-per-node", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--origin-ttfb-ms", type=int, default=35)
    ap.add_argument("--accel-ttfb-ms", type=int, default=0)
    ap.add_argument("--files", type=int, default=0, help="read only the first N files")
    ap.add_argument("--notes", default="", help="text appended to the report")
    args = ap.parse_args()
    reason = netns_nodes.unsupported_reason()
    if reason:
        print("cannot simulate nodes here: " + reason)
        return 77
    datasets.ensure(REPO, DATA_ROOT, log)
    while os.path.exists(LOCK):
        log("waiting for %s" % LOCK)
        time.sleep(20)
    open(LOCK, "w").write("bench/cluster.py %d\n" % os.getpid())
    work = tempfile.mkdtemp(prefix="cluster-run-", dir=os.path.join(BENCH, "data"))
    try:
        # A bucket of our own: hard links of the image bucket, plus the manifest object.
        source_root = os.path.join(work, "root")
        os.makedirs(source_root)
        subprocess.run(["cp", "-al", os.path.join(DATA_ROOT, BUCKET),
                        os.path.join(source_root, BUCKET)], check=True)
        sizes = [os.path.getsize(os.path.join(d, f))
                 for d, _, fs in os.walk(os.path.join(source_root, BUCKET, "train")) for f in fs]
        files = min(len(sizes), args.files) if args.files else len(sizes)
        doc = {"time": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
               "host": platform.node(), "cpus": os.cpu_count(),
               "load_before": "%.1f" % os.getloadavg()[0],
               "origin_ttfb_ms": args.origin_ttfb_ms, "accel_ttfb_ms": args.accel_ttfb_ms,
               "ranks_per_node": args.ranks_per_node, "workers": args.workers, "files": files,
               "avg_kb": sum(sizes) / len(sizes) / 1000, "results": [], "notes": args.notes}
        for n in [int(x) for x in args.nodes.split(",")]:
            doc["results"].append(measure(n, args, source_root, work))
        stamp = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
        out = os.path.join(BENCH, "results", "cluster-%s" % stamp)
        with open(out + ".json", "w") as f:
            json.dump(doc, f, indent=1)
        with open(out + ".md", "w") as f:
            f.write(report_md(doc))
        log("wrote %s.md" % out)
        print(report_md(doc))
    finally:
        for line in open("/proc/self/mountinfo"):
            mnt = line.split()[4]
            if mnt.startswith(work + "/"):
                subprocess.run(["umount", "-l", mnt], stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)
        os.unlink(LOCK)
    return 0


if __name__ == "__main__":
    sys.exit(main())
