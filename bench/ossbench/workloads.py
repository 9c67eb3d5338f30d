"""The measured steps. Each runs as a child process with a timeout and returns a dict:
{"ok": True, ...figures} or {"ok": False, "error": "..."}; a failure is a result, never an
exception, so a peer that fails is reported as failed instead of being dropped.
"""
import json
import os
import subprocess
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"


def _run(cmd, timeout, **kw):
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           text=True, **kw)
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s" % timeout, time.monotonic() - start
    secs = time.monotonic() - start
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        return p, "exit %d: %s" % (p.returncode, " | ".join(tail)), secs
    return p, None, secs


def imagefolder(root, workers, epochs, stats_url, timeout, limit=0, hints=False):
    """{"ok", "list": {...}, "epochs": [{epoch, files, files_per_s, MB_per_s, requests}]}"""
    cmd = [PY, os.path.join(BENCH_DIR, "epoch_runner.py"), root, "--workers", str(workers),
           "--epochs", str(epochs), "--stats-url", stats_url or ""]
    if hints:
        cmd.append("--hints")
    if limit:
        cmd += ["--limit", str(limit)]
    p, err, _ = _run(cmd, timeout)
    if err:
        return {"ok": False, "error": err}
    recs = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    out = {"ok": True, "limit": limit, "list": recs[0],
           "epochs": [r for r in recs if r["phase"] == "epoch"]}
    for e in out["epochs"]:
        if e["files"] and e.get("requests"):
            e["per_file"] = {k: round(v / e["files"], 3) for k, v in e["requests"].items()}
    return out


def threaded_files(root, threads, timeout, limit=0):
    cmd = [PY, os.path.join(BENCH_DIR, "threaded_reader.py"), "files", root,
           "--threads", str(threads)]
    if limit:
        cmd += ["--limit", str(limit)]
    p, err, _ = _run(cmd, timeout)
    if err:
        return {"ok": False, "error": err}
    return dict(json.loads(p.stdout), ok=True, limit=limit)


def threaded_offsets(path, threads, timeout):
    p, err, _ = _run([PY, os.path.join(BENCH_DIR, "threaded_reader.py"), "offsets", path,
                      "--threads", str(threads)], timeout)
    if err:
        return {"ok": False, "error": err}
    return dict(json.loads(p.stdout), ok=True)


def dd(path, timeout):
    """Sequential read with dd bs=1M; MB/s from our own clock."""
    p, err, secs = _run(["dd", "if=" + path, "of=/dev/null", "bs=1M"], timeout)
    if err:
        return {"ok": False, "error": err}
    size = os.stat(path).st_size
    return {"ok": True, "bytes": size, "seconds": round(secs, 3),
            "MB_per_s": round(size / secs / 1e6, 1)}


def curl_single(url, timeout):
    p, err, secs = _run(["curl", "-sS", "-f", "-o", "/dev/null", "-w", "%{size_download}", url],
                        timeout)
    if err:
        return {"ok": False, "error": err}
    size = int(p.stdout.strip())
    return {"ok": True, "bytes": size, "seconds": round(secs, 3),
            "MB_per_s": round(size / secs / 1e6, 1)}


def warm_file(path):
    """Reads a local file once (into the page cache), unmeasured."""
    with open(path, "rb") as f:
        while f.read(8 << 20):
            pass


def curl_parallel(urls, parallel, timeout):
    """curl --parallel --parallel-max N over the URL list (one process, N transfers)."""
    with tempfile.NamedTemporaryFile("w", suffix=".curl", delete=False) as cfg:
        for u in urls:
            cfg.write('url = "%s"\noutput = "/dev/null"\n' % u)
    try:
        p, err, secs = _run(["curl", "-sS", "-f", "--parallel", "--parallel-max", str(parallel),
                             "-w", "%{size_download}\n", "-K", cfg.name], timeout)
    finally:
        os.unlink(cfg.name)
    if err:
        return {"ok": False, "error": err}
    sizes = [int(x) for x in p.stdout.split()]
    return {"ok": True, "files": len(sizes), "bytes": sum(sizes), "seconds": round(secs, 3),
            "files_per_s": round(len(sizes) / secs, 1),
            "MB_per_s": round(sum(sizes) / secs / 1e6, 1)}


# torchvision's ImageFolder scan of ROOT (every file a sample, as with images), timed inside
# the interpreter so that importing torch is not counted: prints seconds and samples.
IMAGEFOLDER_SCAN = """
import sys, time, torchvision
start = time.monotonic()
ds = torchvision.datasets.ImageFolder(sys.argv[1], loader=len, is_valid_file=lambda p: True)
print(time.monotonic() - start, len(ds.samples))
"""


def tree_walk(root, tool, timeout):
    """find ROOT -type f, ls -lR ROOT, or (scan) torchvision's ImageFolder(ROOT) built;
    seconds and entries (lines printed, or samples)."""
    if tool == "scan":
        p, err, _ = _run([PY, "-c", IMAGEFOLDER_SCAN, root], timeout)
        if err:
            return {"ok": False, "error": err}
        secs, samples = p.stdout.split()
        return {"ok": True, "seconds": round(float(secs), 3), "lines": int(samples)}
    cmd = ["find", root, "-type", "f"] if tool == "find" else ["ls", "-lR", root]
    p, err, secs = _run(cmd, timeout)
    if err:
        return {"ok": False, "error": err}
    return {"ok": True, "seconds": round(secs, 3), "lines": len(p.stdout.splitlines())}
