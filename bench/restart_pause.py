#!/usr/bin/python3
"""What a crash of the daemon costs the readers of a supervised mount.

  bench/restart_pause.py [--build build] [--crashes 20] [--classes 8] [--per-class 200]

Against one ossmount-testserver at 35 ms to first byte, over a generated ImageFolder tree:
  - pauses: 4 reader threads read the tree's files in a loop while the daemon (the
    supervisor's child) is killed with SIGKILL --crashes times, --spacing (11) s apart. A crash's pause
    is the longest read that was in flight at the kill (open to last byte), beside the median
    read. From the daemon's log, each restart's parts: the new child's start (kill to its
    first log line), recovery (to "resuming the mount": nodes and handles restored), resend
    (to the kernel's resend) and serving (to the supervisor's "served again").
  - take-overs: the same readers while --take-overs new supervisors (`ossmount ...
    --take-over`) take the mount over one after another, 2 s apart: each pause, and the new
    daemon's time to serve after the hand-over (from its log).
  - epochs: one ImageFolder epoch (8 DataLoader workers, fresh mount) without a crash, one
    with 5 crashes spread over it, and one with --no-supervise (no crash).
Results: bench/results/restart-<timestamp>.json and .md.
"""
import argparse
import datetime
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ossbench.mounts import Mount  # noqa: E402
from ossbench.server import TestServer, serving_pid  # noqa: E402

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
BUCKET = "restart"


def log(msg):
    print("[restart %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def log_times(path):
    """(seconds since midnight, thread id, text) of each line of an ossmount log."""
    out = []
    for line in open(path, errors="replace"):
        m = re.match(r"\d{4}-\d\d-\d\d (\d\d):(\d\d):(\d\d\.\d+) \w+ \[(\d+)\] (.*)", line)
        if m:
            h, mi, s, tid, text = m.groups()
            out.append((int(h) * 3600 + int(mi) * 60 + float(s), int(tid), text))
    return out


def restart_parts(path, supervisor_pid):
    """Per restart: start, recovery, resend and serving, in ms from the death."""
    lines = log_times(path)
    parts = []
    for i, (t, tid, text) in enumerate(lines):
        if tid != supervisor_pid or "starting another on the same mount" not in text:
            continue
        child = {}
        for t2, tid2, text2 in lines[i + 1:]:
            if tid2 != supervisor_pid and "start" not in child:
                child["start"] = t2
            if "resuming the mount" in text2 and "recovery" not in child:
                child["recovery"] = t2
            if "asked the kernel to resend" in text2 and "resend" not in child:
                child["resend"] = t2
            if tid2 == supervisor_pid and "served again" in text2:
                child["serving"] = t2
                break
        if len(child) == 4:
            parts.append({k: round((v - t) * 1000, 1) for k, v in child.items()})
    return parts


class Run:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="restart-bench-", dir="/var/tmp")
        self.root = os.path.join(self.work, "root")
        os.makedirs(self.root)
        self.tree = os.path.join(self.root, BUCKET)
        subprocess.run(["/usr/bin/python3", os.path.join(REPO, "scripts", "gen_dataset.py"),
                        "imagefolder", self.tree, "--classes", str(args.classes),
                        "--per-class", str(args.per_class)], check=True,
                       stdout=subprocess.DEVNULL)
        self.files = sorted(os.path.relpath(os.path.join(d, n), self.tree)
                            for d, _, names in os.walk(self.tree) for n in names
                            if n.lower().endswith((".jpg", ".jpeg")))
        if not self.files:
            raise RuntimeError("no images generated under %s" % self.tree)
        self.server = TestServer(os.path.join(args.build, "tests", "server",
                                              "ossmount-testserver"), self.root, self.work,
                                 threads=2, memory_cache_mb=0)
        self.server.start()
        self.server.set_ttfb(35)
        self.result = {"date": datetime.datetime.utcnow().isoformat() + "Z",
                       "files": len(self.files), "crashes": args.crashes}

    def mount(self, extra=()):
        return Mount("ossmount", self.args.build, self.work, self.server.endpoint, BUCKET,
                     extra=["--log-level", "info"] + list(extra))

    def kill(self, m, served):
        """SIGKILL to the serving child; waits until the supervisor serves again."""
        pid = serving_pid(m.proc.pid)
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while open(m.log_path).read().count("served again") < served:
            if time.monotonic() > deadline:
                raise RuntimeError("no restart after a kill: %s" % m.log_tail())
            time.sleep(0.005)

    def with_readers(self, m, events, count, spacing):
        """Reads the tree in 4 threads while `events(n)` happens `count` times, `spacing` s
        apart; returns (event times, reads as (start, end), errors)."""
        reads, errors, stop = [], [], threading.Event()
        lock = threading.Lock()

        def reader(offset):
            i = offset
            while not stop.is_set():
                path = os.path.join(m.mnt, self.files[i % len(self.files)])
                start = time.monotonic()
                try:
                    with open(path, "rb") as f:
                        f.read()
                except OSError as e:
                    errors.append(repr(e))
                with lock:
                    reads.append((start, time.monotonic()))
                i += 7

        os.listdir(os.path.join(m.mnt, "train"))
        threads = [threading.Thread(target=reader, args=(k * 997,)) for k in range(4)]
        for t in threads:
            t.start()
        time.sleep(2)
        times = []
        for n in range(1, count + 1):
            times.append(time.monotonic())
            events(n)
            time.sleep(spacing)
        stop.set()
        for t in threads:
            t.join()
        return times, reads, errors

    @staticmethod
    def summarize(times, reads, errors, parts):
        pauses = []
        for k in times:
            spanning = [end - start for start, end in reads if start <= k <= end]
            pauses.append(max(spanning) * 1000 if spanning else 0.0)
        normal = statistics.median(end - start for start, end in reads) * 1000
        summary = {"errors": errors, "reads": len(reads), "median_read_ms": round(normal, 1),
                   "pause_ms": [round(p, 1) for p in pauses], "parts_ms": parts}
        for name, values in [("pause", pauses)] + [
                (key, [p[key] for p in parts if key in p])
                for key in ("start", "recovery", "resend", "serving")]:
            if values:
                summary[name] = {"median": round(statistics.median(values), 1),
                                 "p99": round(percentile(values, 0.99), 1),
                                 "max": round(max(values), 1)}
        return summary

    def pauses(self):
        with self.mount() as m:
            # Apart by more than the supervisor's steady run (10 s), so that each is a crash of
            # its own and not a crash loop, which it meets with growing delays.
            times, reads, errors = self.with_readers(m, lambda n: self.kill(m, n),
                                                     self.args.crashes, self.args.spacing)
            parts = restart_parts(m.log_path, m.proc.pid)
        summary = self.summarize(times, reads, errors, parts)
        self.result["pauses"] = summary
        log("pauses: %s" % json.dumps({k: v for k, v in summary.items()
                                        if k not in ("pause_ms", "parts_ms")}))

    def take_overs(self):
        """--take-over-count take-overs, each by a new supervisor of the same build."""
        supervisors = []
        with self.mount() as m:
            cmd, env = m._command()

            def take_over(n):
                log_path = os.path.join(self.work, "take-over-%d.log" % n)
                with open(log_path, "w") as out:
                    proc = subprocess.Popen(cmd + ["--take-over"], stdout=out,
                                            stderr=subprocess.STDOUT, env=env,
                                            stdin=subprocess.DEVNULL)
                supervisors.append((proc, log_path))
                deadline = time.monotonic() + 120
                while "took over; the mount is served again" not in open(log_path).read():
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("take-over %d failed: %s" % (n, open(log_path).read()))
                    time.sleep(0.005)

            times, reads, errors = self.with_readers(m, take_over, self.args.take_overs, 2.0)
            served = []
            for proc, log_path in supervisors:
                found = re.search(r"served again (\d+) ms after the connection was handed over",
                                  open(log_path).read())
                if found:
                    served.append({"serving": float(found.group(1))})
        # The last supervisor unmounted with the mount (Mount's teardown): each exits.
        for proc, _ in supervisors:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        summary = self.summarize(times, reads, errors, served)
        self.result["take_overs"] = summary
        log("take-overs: %s" % json.dumps({k: v for k, v in summary.items()
                                            if k not in ("pause_ms", "parts_ms")}))

    def epoch(self, crashes, expected_s, extra=()):
        with self.mount(extra) as m:
            runner = subprocess.Popen(
                ["/usr/bin/python3", os.path.join(BENCH, "epoch_runner.py"),
                 os.path.join(m.mnt, "train"), "--workers", "8", "--epochs", "1"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for n in range(1, crashes + 1):
                time.sleep(expected_s / (crashes + 1))
                self.kill(m, n)
            out, err = runner.communicate(timeout=1800)
        if runner.returncode != 0:
            raise RuntimeError("the epoch failed: %s" % err[-2000:])
        epoch = [json.loads(line) for line in out.splitlines()
                 if json.loads(line)["phase"] == "epoch"][0]
        return epoch

    def epochs(self):
        clean = self.epoch(0, 0)
        crashed = self.epoch(5, clean["seconds"])
        # The same epoch from one process (cloned descriptors, FUSE over io_uring where the
        # kernel's switch is on): what supervision costs when nothing dies.
        alone = self.epoch(0, 0, extra=["--no-supervise"])
        self.result["epochs"] = {"no_crash": clean, "five_crashes": crashed,
                                 "unsupervised": alone}
        log("epoch without a crash %.2f s, with 5 crashes %.2f s (%d and %d files)" %
            (clean["seconds"], crashed["seconds"], clean["files"], crashed["files"]))

    def save(self):
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        out = os.path.join(BENCH, "results", "restart-%s" % stamp)
        with open(out + ".json", "w") as f:
            json.dump(self.result, f, indent=1)
        p, e = self.result["pauses"], self.result["epochs"]
        lines = ["# Restarts of a supervised mount (%s)" % self.result["date"], "",
                 "%d files at 35 ms TTFB; %d crashes (SIGKILL of the daemon), 4 readers; "
                 "median read %.1f ms; reader errors: %d." % (
                     self.result["files"], self.result["crashes"], p["median_read_ms"],
                     len(p["errors"])), "",
                 "| ms | median | p99 | max |", "|---|---|---|---|"]
        for key, label in [("pause", "pause a reader saw"), ("start", "new child's first log line"),
                           ("recovery", "records restored"), ("resend", "kernel resend"),
                           ("serving", "serving again")]:
            if key in p:
                lines.append("| %s | %s | %s | %s |" % (label, p[key]["median"], p[key]["p99"],
                                                        p[key]["max"]))
        t = self.result.get("take_overs")
        if t:
            lines += ["", "%d take-overs (`--take-over`, 2 s apart), the same readers; reader "
                      "errors: %d." % (len(t["pause_ms"]), len(t["errors"])), "",
                      "| ms | median | p99 | max |", "|---|---|---|---|"]
            for key, label in [("pause", "pause a reader saw"),
                               ("serving", "served again after the hand-over")]:
                if key in t:
                    lines.append("| %s | %s | %s | %s |" % (label, t[key]["median"],
                                                            t[key]["p99"], t[key]["max"]))
        lines += ["", "| epoch (8 workers) | files | seconds | files/s |", "|---|---|---|---|"]
        for key, label in [("no_crash", "supervised, no crash"),
                           ("five_crashes", "supervised, five crashes"),
                           ("unsupervised", "--no-supervise, no crash")]:
            lines.append("| %s | %d | %.2f | %.0f |" % (label, e[key]["files"], e[key]["seconds"],
                                                        e[key]["files_per_s"]))
        with open(out + ".md", "w") as f:
            f.write("\n".join(lines) + "\n")
        print("\n".join(lines))
        log("results in %s.{json,md}" % out)

    def close(self):
        self.server.stop()
        subprocess.run(["rm", "-rf", self.work])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.path.join(REPO, "build"))
    p.add_argument("--crashes", type=int, default=20)
    p.add_argument("--spacing", type=float, default=11.0, help="seconds between crashes")
    p.add_argument("--take-overs", type=int, default=20,
                   help="take-overs by a new supervisor, 2 s apart (0: none)")
    p.add_argument("--classes", type=int, default=8)
    p.add_argument("--per-class", type=int, default=200)
    args = p.parse_args()
    run = Run(args)
    try:
        run.pauses()
        if args.take_overs:
            run.take_overs()
        run.epochs()
        run.save()
    finally:
        run.close()
    failed = run.result.get("pauses", {}).get("errors") or \
        run.result.get("take_overs", {}).get("errors")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
