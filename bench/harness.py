#!/usr/bin/python3
"""Runs ossmount and its peers side by side against one object server (see bench/run.sh).

  harness.py [--quick|--full] [--only WORKLOAD...]

Workloads: capacity imagefolder remount threaded seqread metadata memory.
One thing runs at a time (2 shared cores). Every step has a timeout; every mount is
unmounted in a finally; a failed peer is recorded as failed. Results go to
bench/results/<timestamp>.json and bench/results/<timestamp>.md.
"""
import argparse
import datetime
import json
import os
import platform
import random
import shutil
import statistics
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ossbench import datasets, report, workloads  # noqa: E402
from ossbench.mounts import Mount, MountError  # noqa: E402
from ossbench.server import TestServer  # noqa: E402

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
WORKLOADS = ["capacity", "imagefolder", "remount", "threaded", "seqread", "metadata", "memory",
             "prefetch"]
REMOUNT_ROUNDS = 3
MOUNT_PEERS = ("ossmount", "s3fs", "rclone-off", "rclone-full")
MEMORY_BUDGET_MIB = 256
# A walk of the 100,000-key tree: ossmount and rclone take seconds; s3fs's `ls -lR` sends a
# HEAD per key one after another (over 20 minutes at 35 ms, measured), so the walk stops
# here and the report says it timed out.
METADATA_TIMEOUT_S = 300


def log(msg):
    print("[bench %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


class Plan:
    """What a mode runs. quick: 35 ms for the peers (ossmount and curl also at 12 and 0 ms),
    16 workers (ossmount also 4), subsets for the slowest peers; full: everything."""

    def __init__(self, full):
        self.full = full
        self.ttfbs = [35, 12, 0]
        self.step_timeout = 1200 if full else 300

    def imagefolder_cases(self):
        cases = []
        for ttfb in self.ttfbs:
            for workers in (16, 4):
                for peer in ("ossmount", "s3fs", "rclone-off", "rclone-full", "local", "curl"):
                    c = self._imagefolder_case(peer, ttfb, workers)
                    if c:
                        cases.append(c)
        return cases

    def _imagefolder_case(self, peer, ttfb, workers):
        c = {"peer": peer, "ttfb": ttfb, "workers": workers, "epochs": 2, "limit": 0}
        if peer == "local" and ttfb != 35:
            return None  # no server involved: measured once, compared at every TTFB
        if peer == "curl":
            c["epochs"] = 1
        if self.full:
            return c
        if workers == 4:
            return dict(c, epochs=1) if peer in ("ossmount", "local") and ttfb == 35 else None
        if ttfb != 35:
            return c if peer in ("ossmount", "curl") else None
        if peer == "s3fs":
            return dict(c, epochs=1, limit=1000)
        if peer == "rclone-full":
            return dict(c, limit=2000)
        return c

    def remount_ttfbs(self):
        return self.ttfbs if self.full else [35]

    def threaded_cases(self):
        peers = {"ossmount": 0, "s3fs": 1000, "rclone-off": 2000, "local": 0}
        ttfbs = [35, 0] if self.full else [35]
        return [{"peer": p, "ttfb": t, "threads": 16, "limit": 0 if self.full and p != "s3fs" else l}
                for t in ttfbs for p, l in peers.items()]

    def seqread_cases(self):
        ttfbs = self.ttfbs if self.full else [35]
        return [{"peer": p, "ttfb": t} for t in ttfbs
                for p in ("ossmount", "s3fs", "rclone-off", "curl")]

    def prefetch_cases(self):
        """Issue 5: epoch 1, 16 workers, ossmount plain / with sampler-order hints / with a
        warm-up started at mount time (into a fresh --cache), at 35 and 12 ms."""
        return [{"peer": "ossmount", "ttfb": t, "workers": 16, "mode": mode}
                for t in (35, 12) for mode in ("plain", "hints", "warmup")
                if self.full or t == 35 or mode != "warmup"]

    def metadata_cases(self):
        peers = ("ossmount", "rclone-off", "s3fs") if self.full else ("ossmount", "rclone-off")
        ttfbs = [35, 0] if self.full else [35]
        return [{"peer": p, "ttfb": t} for t in ttfbs for p in peers]


def uring_available():
    """Whether ossmount can take FUSE requests through io_uring rings here: a kernel with
    the switch (Linux 6.14+, CONFIG_FUSE_IO_URING) and root to turn it on."""
    try:
        open("/dev/fuse", "rb").close()  # loads the fuse module, whose parameters then exist
    except OSError:
        return False
    return os.geteuid() == 0 and os.path.exists("/sys/module/fuse/parameters/enable_uring")


def remove_caches(caches):
    """Deletes a workload's --cache directories after its last case, never between two:
    on ext4 without a journal (this machine's root), each file created within 60-360 s of
    a mass delete makes the inode allocator step over every recently freed inode of its
    group, and the next case would measure that (a warm-up at 12 ms right after the 35 ms
    case's cache was deleted: 1,931 files/s and 6.8 CPU s, where a fresh disk gives
    thousands of files/s)."""
    for cache in caches:
        shutil.rmtree(cache, ignore_errors=True)


class Harness:
    def __init__(self, args):
        self.args = args
        self.plan = Plan(args.full)
        self.build = os.path.abspath(args.build)
        self.data_root = os.path.join(BENCH, "data", "root")
        self.work = tempfile.mkdtemp(prefix="ossmount-bench-")
        self.server = None
        self.cases = []
        self.stamp = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
        # ossmount's FUSE transport: /dev/fuse by default, as a supervised mount (the
        # product's default) serves; with --fuse-io-uring on, an unsupervised mount over the
        # rings (the daemon turns the kernel's switch on, as root), and the remount and hints
        # cases also measure /dev/fuse beside them.
        self.fuse_io_uring = args.fuse_io_uring or "off"
        if self.fuse_io_uring == "on" and not uring_available():
            raise SystemExit("--fuse-io-uring on: this kernel has no FUSE over io_uring, or "
                             "this is not root")

    # ---- helpers -------------------------------------------------------------------
    def record(self, workload, params, result, daemon=None):
        case = {"workload": workload, **params, "result": result}
        if daemon is not None:
            case["daemon"] = daemon
        self.cases.append(case)
        status = "ok" if result.get("ok") else "FAILED: %s" % result.get("error")
        log("%s %s -> %s" % (workload, json.dumps(params), status))
        self.save()

    def mount(self, peer, bucket, cache_dir=None, extra=None):
        if peer == "ossmount" and not any(a == "--fuse-io-uring" for a in extra or []):
            extra = ["--fuse-io-uring", self.fuse_io_uring] + list(extra or [])
        if peer == "ossmount" and self.fuse_io_uring == "on":
            extra = list(extra) + ["--no-supervise"]  # rings only without a supervisor
        return Mount(peer, self.build, self.work, self.server.endpoint, bucket,
                     cache_dir=cache_dir, extra=extra)

    def stats_around(self, fn):
        self.server.reset()
        cpu0 = self.server.cpu_seconds()
        out = fn()
        out["requests"] = self.server.stats()
        out["server_cpu_s"] = round(self.server.cpu_seconds() - cpu0, 2)
        return out

    def with_mount(self, peer, bucket, fn, cache_dir=None, extra=None):
        """Runs fn(mountpoint) inside a fresh mount; returns (result, daemon usage)."""
        m = self.mount(peer, bucket, cache_dir, extra)
        try:
            with m:
                result = fn(m.mnt)
        except MountError as e:
            return {"ok": False, "error": str(e)}, None
        except Exception as e:  # a harness bug in one case must not lose the others
            return {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}, m.usage or None
        finally:
            m.cleanup()
        return result, m.usage

    def warm_server(self):
        """Reads every image once through the server, unmeasured, so its memory cache holds
        them before the first case: otherwise whichever peer runs first pays the server's
        disk reads and the ones after it do not."""
        self.server.set_ttfb(0)
        urls = ["%s/img/%s" % (self.server.endpoint, k) for k in datasets.image_keys(self.data_root)]
        res = workloads.curl_parallel(urls, 64, self.plan.step_timeout)
        self.meta_info["server_warmup"] = {k: res.get(k) for k in ("ok", "files", "seconds")}
        log("server warmed: %s" % json.dumps(self.meta_info["server_warmup"]))

    # ---- workloads -----------------------------------------------------------------
    def run_capacity(self):
        log("server capacity (bench/server_capacity.sh, about 40 s)")
        p = subprocess.run([os.path.join(BENCH, "server_capacity.sh"), self.build],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=600)
        self.capacity = {"ok": p.returncode == 0, "table": p.stdout}
        self.save()

    def run_imagefolder(self):
        stats_url = self.server.endpoint
        keys = datasets.image_keys(self.data_root)
        for c in self.plan.imagefolder_cases():
            self.server.set_ttfb(c["ttfb"])
            params = dict(c)
            t = self.plan.step_timeout
            if c["peer"] == "local":
                res = workloads.imagefolder(os.path.join(self.data_root, "img", "train"),
                                            c["workers"], c["epochs"], "", t)
                self.record("imagefolder", params, res)
            elif c["peer"] == "curl":
                urls = ["%s/img/%s" % (self.server.endpoint, k) for k in keys]
                random.Random(1).shuffle(urls)
                res = self.stats_around(lambda: workloads.curl_parallel(urls, c["workers"], t))
                self.record("imagefolder", params, res)
            else:
                res, usage = self.with_mount(
                    c["peer"], "img", lambda mnt: workloads.imagefolder(
                        os.path.join(mnt, "train"), c["workers"], c["epochs"], stats_url, t,
                        c["limit"]))
                self.record("imagefolder", params, res, usage)

    def run_remount(self):
        """Epoch 1 with --cache DIR, unmount, remount with the same DIR, epoch 2."""
        if not any(c["workload"] == "imagefolder" and c["peer"] == "local" and c["workers"] == 16
                   for c in self.cases):  # the ceiling the target compares with
            res = workloads.imagefolder(os.path.join(self.data_root, "img", "train"), 16, 2, "",
                                        self.plan.step_timeout)
            self.record("imagefolder", {"peer": "local", "ttfb": 35, "workers": 16, "epochs": 2,
                                        "limit": 0}, res)
        caches = []
        for ttfb in self.plan.remount_ttfbs():
            self.server.set_ttfb(ttfb)
            cache = tempfile.mkdtemp(prefix="cache-", dir=self.work)
            caches.append(cache)
            t = self.plan.step_timeout
            run = lambda mnt: workloads.imagefolder(os.path.join(mnt, "train"), 16, 1,
                                                    self.server.endpoint, t)
            first, u1 = self.with_mount("ossmount", "img", run, cache_dir=cache)
            # An epoch of 5,000 files lasts half a second on local disk, so one sample of each
            # side is mostly noise: REMOUNT_ROUNDS rounds of (remount + epoch, then the same
            # epoch on the local copy), back to back, and the medians are compared.
            # With the rings, each round also remounts over /dev/fuse (--fuse-io-uring off),
            # so the two transports are compared in the same minutes.
            both = self.fuse_io_uring == "on"
            rounds, usages = [], []
            for _ in range(REMOUNT_ROUNDS if first.get("ok") else 0):
                second, u2 = self.with_mount("ossmount", "img", run, cache_dir=cache)
                local = workloads.imagefolder(os.path.join(self.data_root, "img", "train"), 16,
                                              1, "", t)
                rnd = {"ossmount": second, "local": local}
                if both:
                    rnd["dev_fuse"], u3 = self.with_mount(
                        "ossmount", "img", run, cache_dir=cache,
                        extra=["--fuse-io-uring", "off"])
                    rnd["dev_fuse_cpu_s"] = (u3 or {}).get("cpu_s")
                rnd["ossmount_cpu_s"] = (u2 or {}).get("cpu_s")
                rounds.append(rnd)
                usages.append(u2)
                if not (second.get("ok") and local.get("ok")):
                    break
            du = subprocess.run(["du", "-sm", cache], stdout=subprocess.PIPE, text=True).stdout
            good = bool(rounds) and all(r["ossmount"].get("ok") and r["local"].get("ok")
                                        for r in rounds)
            res = {"ok": bool(first.get("ok") and good), "before": first,
                   "cache_mib": int(du.split()[0]) if du else None}
            if good:
                rate = lambda r, side: r[side]["epochs"][0]["files_per_s"]
                by_rate = sorted(rounds, key=lambda r: rate(r, "ossmount"))
                res["after_remount"] = by_rate[len(by_rate) // 2]["ossmount"]  # the median round
                res["local_median"] = statistics.median(rate(r, "local") for r in rounds)
                res["rounds"] = [{"ossmount": rate(r, "ossmount"), "local": rate(r, "local"),
                                  "ossmount_gets": r["ossmount"]["epochs"][0]["requests"].get("GET"),
                                  "ossmount_cpu_s": r.get("ossmount_cpu_s"),
                                  "dev_fuse": rate(r, "dev_fuse") if r.get("dev_fuse", {}).get("ok")
                                  else None,
                                  "dev_fuse_cpu_s": r.get("dev_fuse_cpu_s")}
                                 for r in rounds]
                res["fuse_io_uring"] = self.fuse_io_uring
            else:
                res["error"] = first.get("error") or next(
                    (r[k].get("error") for r in rounds for k in ("ossmount", "local")
                     if not r[k].get("ok")), "no remount round ran")
            self.record("remount", {"peer": "ossmount", "ttfb": ttfb, "workers": 16}, res,
                        {"first": u1, "second": usages[0] if usages else None})
        remove_caches(caches)

    def run_threaded(self):
        for c in self.plan.threaded_cases():
            self.server.set_ttfb(c["ttfb"])
            t = self.plan.step_timeout
            if c["peer"] == "local":
                res = workloads.threaded_files(os.path.join(self.data_root, "img", "train"),
                                               c["threads"], t, c["limit"])
                self.record("threaded", c, res)
                continue
            fn = lambda mnt: self.stats_around(lambda: workloads.threaded_files(
                os.path.join(mnt, "train"), c["threads"], t, c["limit"]))
            res, usage = self.with_mount(c["peer"], "img", fn)
            self.record("threaded", c, res, usage)

    def run_seqread(self):
        for c in self.plan.seqread_cases():
            self.server.set_ttfb(c["ttfb"])
            t = self.plan.step_timeout
            # The server streams 1g.bin from its file (too large for its memory cache): read it
            # into the page cache first, so no peer pays the disk for the ones after it.
            workloads.warm_file(os.path.join(self.data_root, "big", "1g.bin"))
            if c["peer"] == "curl":
                url = "%s/big/1g.bin" % self.server.endpoint
                self.record("seqread", c, self.stats_around(lambda: workloads.curl_single(url, t)))
                continue
            fn = lambda mnt: self.stats_around(
                lambda: workloads.dd(os.path.join(mnt, "1g.bin"), t))
            res, usage = self.with_mount(c["peer"], "big", fn)
            self.record("seqread", c, res, usage)

    def run_metadata(self):
        for c in self.plan.metadata_cases():
            self.server.set_ttfb(c["ttfb"])
            t = min(self.plan.step_timeout, METADATA_TIMEOUT_S)
            for tool in ("find", "ls", "scan"):
                def fn(mnt, tool=tool):
                    root = os.path.join(mnt, "meta")
                    cold = self.stats_around(lambda: workloads.tree_walk(root, tool, t))
                    warm = self.stats_around(lambda: workloads.tree_walk(root, tool, t)) \
                        if cold.get("ok") else {"ok": False, "error": "cold run failed"}
                    return {"ok": bool(cold.get("ok") and warm.get("ok")), "cold": cold,
                            "warm": warm, "error": cold.get("error") or warm.get("error")}
                res, usage = self.with_mount(c["peer"], "meta", fn)
                self.record("metadata", dict(c, tool=tool), res, usage)

    def run_memory(self):
        self.server.set_ttfb(35)
        t = self.plan.step_timeout
        fn = lambda mnt: self.stats_around(
            lambda: workloads.threaded_offsets(os.path.join(mnt, "1g.bin"), 64, t))
        res, usage = self.with_mount("ossmount", "big", fn,
                                     extra=["--max-memory", "%dMiB" % MEMORY_BUDGET_MIB])
        self.record("memory", {"peer": "ossmount", "ttfb": 35, "threads": 64,
                               "max_memory_mib": MEMORY_BUDGET_MIB}, res, usage)

    def run_prefetch(self):
        """Dataset prefetch (issue 5), side by side in one run: the same ImageFolder epoch
        without help, with HintedSampler, and with `ossmount warmup --detach` started right
        after the mount; plus the local-disk reader as the ceiling."""
        t = self.plan.step_timeout
        limit = self.args.prefetch_limit
        if not any(c["workload"] == "prefetch" and c["peer"] == "local" for c in self.cases):
            # Three epochs of the local reader, the median one recorded: one sub-second epoch
            # is mostly noise (see run_remount).
            runs = [workloads.imagefolder(os.path.join(self.data_root, "img", "train"), 16, 1,
                                          "", t, limit) for _ in range(3)]
            good = [r for r in runs if r.get("ok")]
            res = sorted(good, key=lambda r: r["epochs"][0]["files_per_s"])[len(good) // 2] \
                if len(good) == 3 else next(r for r in runs if not r.get("ok"))
            res["local_rounds"] = [r["epochs"][0]["files_per_s"] for r in good]
            self.record("prefetch", {"peer": "local", "ttfb": 35, "workers": 16,
                                     "mode": "local", "limit": limit}, res)
        ossmount_bin = os.path.join(self.build, "daemon", "ossmount")
        caches = []
        cases = self.plan.prefetch_cases()
        if self.fuse_io_uring == "on":  # the same hinted epoch over /dev/fuse, beside
            cases.append({"peer": "ossmount", "ttfb": 35, "workers": 16, "mode": "hints",
                          "transport": "dev_fuse"})
        for c in cases:
            self.server.set_ttfb(c["ttfb"])
            params = dict(c, limit=limit)
            cache = tempfile.mkdtemp(prefix="cache-", dir=self.work) \
                if c["mode"] == "warmup" else None

            def fn(mnt, c=c):
                warm = None
                if c["mode"] == "warmup":
                    warm = subprocess.run([ossmount_bin, "warmup", "--detach",
                                           os.path.join(mnt, "train")],
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          text=True, timeout=60)
                    if warm.returncode != 0:
                        return {"ok": False, "error": "warmup: " + warm.stdout.strip()}
                return workloads.imagefolder(os.path.join(mnt, "train"), c["workers"], 1,
                                             self.server.endpoint, t, limit,
                                             hints=c["mode"] == "hints")
            extra = ["--fuse-io-uring", "off"] if c.get("transport") == "dev_fuse" else None
            res, usage = self.with_mount("ossmount", "img", fn, cache_dir=cache, extra=extra)
            self.record("prefetch", params, res, usage)
            if cache:
                caches.append(cache)
        remove_caches(caches)

    # ---- driver --------------------------------------------------------------------
    def meta(self):
        commit = subprocess.run(["git", "-C", REPO, "log", "-1", "--format=%h %s"],
                                stdout=subprocess.PIPE, text=True).stdout.strip()
        daemon = os.path.join(self.build, "daemon", "ossmount")
        cpu = ""
        try:
            cpu = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                   if l.startswith("model name")][0]
        except (OSError, IndexError):
            pass
        return {"timestamp": self.stamp, "mode": "full" if self.args.full else "quick",
                "only": self.args.only, "commit": commit, "kernel": platform.release(),
                "cpu": cpu, "cores": os.cpu_count(),
                "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
                "loadavg_start": open("/proc/loadavg").read().split()[:3],
                "ossmount_binary": "%s (built %s UTC)" % (
                    daemon, time.strftime("%Y-%m-%d %H:%M", time.gmtime(os.stat(daemon).st_mtime))),
                "server": "ossmount-testserver --auth off --threads 2 --memory-cache-mb 2048",
                "fuse_io_uring": self.fuse_io_uring}

    def save(self):
        os.makedirs(os.path.join(BENCH, "results"), exist_ok=True)
        doc = {"meta": self.meta_info, "server_capacity": getattr(self, "capacity", None),
               "cases": self.cases}
        base = os.path.join(BENCH, "results", self.stamp)
        with open(base + ".json.tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(base + ".json.tmp", base + ".json")
        with open(base + ".md", "w") as f:
            f.write(report.markdown(doc))
        return base

    def run(self):
        self.meta_info = self.meta()
        only = self.args.only or WORKLOADS
        datasets.ensure(REPO, self.data_root, log)
        try:
            if "capacity" in only:
                self.run_capacity()
            self.server = TestServer(os.path.join(self.build, "tests/server/ossmount-testserver"),
                                     self.data_root, self.work)
            self.server.start()
            log("object server at %s" % self.server.endpoint)
            if set(only) & {"imagefolder", "remount", "threaded", "prefetch"}:
                self.warm_server()
            for w in WORKLOADS[1:]:
                if w in only:
                    getattr(self, "run_" + w)()
        finally:
            if self.server:
                self.server.stop()
            self.meta_info["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
            base = self.save()
            shutil.rmtree(self.work, ignore_errors=True)
        log("results: %s.json and %s.md" % (base, base))
        return 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="a few minutes (default)")
    g.add_argument("--full", action="store_true", help="every peer, TTFB and worker count")
    p.add_argument("--build", default=os.path.join(REPO, "build"),
                   help="build directory with daemon/ossmount and tests/server/ossmount-testserver")
    p.add_argument("--only", nargs="+", choices=WORKLOADS, metavar="WORKLOAD",
                   help="run only these: " + " ".join(WORKLOADS))
    p.add_argument("--prefetch-limit", type=int, default=0, metavar="K",
                   help="prefetch workload: read a random subset of K images per epoch "
                        "(0 = all; for a small indicative run)")
    p.add_argument("--fuse-io-uring", choices=["on", "off"],
                   help="ossmount's FUSE transport: off (/dev/fuse, the default: a supervised "
                        "mount) or on (io_uring rings, unsupervised: --no-supervise)")
    p.add_argument("--report", metavar="RESULTS_JSON",
                   help="only re-render RESULTS_JSON's Markdown report (next to it, .md)")
    args = p.parse_args()
    # SIGTERM/SIGHUP unwind like Ctrl-C, so every finally (unmount, server stop) still runs.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: sys.exit(128 + signum))
    if args.report:
        with open(args.report) as f:
            doc = json.load(f)
        with open(os.path.splitext(args.report)[0] + ".md", "w") as f:
            f.write(report.markdown(doc))
        return 0
    return Harness(args).run()


if __name__ == "__main__":
    sys.exit(main())
