"""The object server every client in a run talks to (ossmount-testserver, --auth off).

One server process per run; the time to first byte is changed between cases through the
control API, and request counters are reset before and read after every measured step, so
requests per file are counted by the server, not estimated by the clients.
Not thread-safe: the harness runs one thing at a time.
"""
import json
import os
import re
import subprocess
import time
import urllib.request


class TestServer:
    def __init__(self, binary, root, log_dir, threads=2, memory_cache_mb=2048):
        self.binary = binary
        self.root = root
        self.log_dir = log_dir
        self.threads = threads
        self.memory_cache_mb = memory_cache_mb
        self.proc = None
        self.port = None

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self):
        out = open(os.path.join(self.log_dir, "server.out"), "w")
        err = open(os.path.join(self.log_dir, "server.log"), "w")
        self.proc = subprocess.Popen(
            [self.binary, "--root", self.root, "--port", "0", "--auth", "off",
             "--threads", str(self.threads), "--memory-cache-mb", str(self.memory_cache_mb)],
            stdout=out, stderr=err)
        deadline = time.monotonic() + 120  # scanning 100k keys takes a moment
        path = os.path.join(self.log_dir, "server.out")
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("ossmount-testserver exited with %d" % self.proc.returncode)
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", open(path).read())
            if m:
                self.port = int(m.group(1))
                return
            time.sleep(0.1)
        raise RuntimeError("ossmount-testserver did not start")

    def _call(self, method, path):
        req = urllib.request.Request(self.endpoint + path, method=method,
                                     data=b"" if method == "POST" else None)
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read()
        return json.loads(body) if body.strip() else {}

    def set_ttfb(self, ms):
        self._call("POST", "/_ossmount/faults?clear&ttfb-ms=%d" % ms)
        got = self._call("GET", "/_ossmount/faults")
        if int(got.get("ttfb-ms", -1)) != ms:
            raise RuntimeError("server did not take ttfb-ms=%d: %r" % (ms, got))

    def set_bandwidth(self, mbps):
        """Paces every connection's bodies to `mbps` megabits per second (0: unlimited)."""
        self._call("POST", "/_ossmount/faults?bandwidth-mbps=%d" % mbps)

    def set_condition(self, name, paced):
        """"paced": `paced` ({"ttfb": ms, "mbps": per connection}) on uploads and downloads
        alike (the writable-mount benches); anything else: no fault, loopback speed."""
        if name == "paced":
            self._call("POST", "/_ossmount/faults?clear&fault-ops=get,put&ttfb-ms=%d"
                       "&bandwidth-mbps=%d" % (paced["ttfb"], paced["mbps"]))
        else:
            self._call("POST", "/_ossmount/faults?clear")

    def reset(self):
        self._call("POST", "/_ossmount/reset")

    def stats(self):
        """Request counts since the last reset: GET (whole and ranged), HEAD, LIST, bytes."""
        s = self._call("GET", "/_ossmount/stats")
        return {"GET": s.get("GET", 0), "GET_RANGE": s.get("GET_RANGE", 0),
                "HEAD": s.get("HEAD", 0), "LIST": s.get("LIST", 0),
                "other": s.get("BUCKET", 0) + s.get("OTHER", 0),
                "bytes_sent": s.get("bytes_sent", 0)}

    def cpu_seconds(self):
        return proc_cpu_seconds(self.proc.pid)

    def stop(self):
        stop_process(self.proc)


def stop_process(proc, timeout=10):
    """SIGTERM, then SIGKILL if `proc` has not exited within `timeout` s; waits for it."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def serving_pid(pid):
    """The process that serves a mount started as `pid`: an ossmount supervisor's one child
    (the daemon proper, whose memory and CPU are the mount's), else `pid` itself. The
    supervisor's own share is a few MiB and no CPU while it waits."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read().split(b"\0")
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            children = [int(c) for c in f.read().split()]
    except OSError:
        return pid
    if argv and argv[0].endswith(b"ossmount") and len(children) == 1:
        return children[0]
    return pid


def proc_cpu_seconds(pid):
    """utime+stime of a live process, seconds (None when it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def proc_peak_rss_mib(pid):
    """VmHWM of a live process, MiB (None when it is gone)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024.0, 1)
    except OSError:
        pass
    return None
