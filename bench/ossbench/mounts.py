"""Mounting ossmount and its peers on fresh mount points against the same server.

Each Mount is a context manager: __enter__ mounts (raising MountError on failure, with the
daemon's log tail) and __exit__ always unmounts (fusermount3 -u, then -uz, then kills the
daemon by its own pid), so no mount outlives the step that made it, even on a failure.
Every daemon runs in the foreground as our child, so its pid is known and its peak RSS
(VmHWM) and CPU seconds (utime+stime) are read just before unmounting.

The peer options are the fair ones (docs/BENCHMARKS.md, "The peers"); PEER_OPTIONS is quoted verbatim in
the report. Credentials are dummy values (the server runs --auth off) and never logged.
"""
import os
import shutil
import subprocess
import tempfile
import time

from .server import proc_cpu_seconds, proc_peak_rss_mib, serving_pid

DUMMY_ID = "bench-access-key"
DUMMY_SECRET = "bench-access-secret"

S3FS_OPTS = ("use_path_request_style,sigv4,endpoint=us-east-1,url={endpoint},ro,"
             "stat_cache_expire=3600,enable_noobj_cache,parallel_count=8,multireq_max=32")
RCLONE_FLAGS = ["--read-only", "--no-modtime", "--no-checksum", "--dir-cache-time", "1h",
                "--attr-timeout", "1h", "--poll-interval", "0"]

# Writable peers, for the checkpoint benchmark (bench/checkpoints.py): s3fs stages a file on
# disk and uploads it at close (multipart, parallel_count parts at once); rclone's
# --vfs-cache-mode writes stages it and uploads after close (--vfs-write-back 0s: at once).
S3FS_RW_OPTS = ("use_path_request_style,sigv4,endpoint=us-east-1,url={endpoint},"
                "parallel_count=16,multipart_size=8,max_dirty_data=-1")
RCLONE_RW_FLAGS = ["--no-modtime", "--no-checksum", "--dir-cache-time", "1h", "--attr-timeout",
                   "1h", "--poll-interval", "0", "--vfs-write-back", "0s",
                   "--s3-upload-concurrency", "16", "--s3-chunk-size", "8M"]

PEER_OPTIONS = {
    "ossmount": "ossmount BUCKET MNT --endpoint http://127.0.0.1:PORT --path-style "
                "--region cn-bench --metadata-ttl indefinite -f [--cache DIR] "
                "[--fuse-io-uring off | --fuse-io-uring on --no-supervise] (OSS API, V4 signatures; other options at their "
                "defaults; the transport is said at the top)",
    "s3fs": "s3fs BUCKET MNT -f -o passwd_file=F," + S3FS_OPTS.format(endpoint="http://127.0.0.1:PORT"),
    "rclone-off": "rclone mount bench:BUCKET MNT " + " ".join(RCLONE_FLAGS) +
                  " --vfs-cache-mode off (S3 remote: provider Other, force_path_style true, "
                  "region us-east-1; AWS_CA_BUNDLE unset)",
    "rclone-full": "rclone mount bench:BUCKET MNT " + " ".join(RCLONE_FLAGS) +
                   " --vfs-cache-mode full --cache-dir EMPTY_DIR",
    "ossmount-rw": "ossmount BUCKET MNT --endpoint http://127.0.0.1:PORT --path-style "
                   "--region cn-bench --metadata-ttl indefinite -f --allow-writes "
                   "--upload-journal DIR --max-memory 1GiB (other options at their defaults)",
    "s3fs-rw": "s3fs BUCKET MNT -f -o passwd_file=F," +
               S3FS_RW_OPTS.format(endpoint="http://127.0.0.1:PORT"),
    "rclone-writes": "rclone mount bench:BUCKET MNT " + " ".join(RCLONE_RW_FLAGS) +
                     " --vfs-cache-mode writes --cache-dir EMPTY_DIR",
}


class MountError(Exception):
    pass


class Mount:
    """kind: ossmount | s3fs | rclone-off | rclone-full. bucket: a server bucket name.
    build: the build directory holding daemon/ossmount. metadata_ttl: ossmount's
    --metadata-ttl (the harness's "indefinite" unless a workload measures another)."""

    def __init__(self, kind, build, work, endpoint, bucket, cache_dir=None, extra=None,
                 timeout=60, metadata_ttl="indefinite"):
        self.kind = kind
        self.build = build
        self.endpoint = endpoint
        self.bucket = bucket
        self.cache_dir = cache_dir
        self.extra = list(extra or [])
        self.timeout = timeout
        self.metadata_ttl = metadata_ttl
        self.dir = tempfile.mkdtemp(prefix="%s-" % kind, dir=work)
        self.mnt = os.path.join(self.dir, "mnt")
        os.mkdir(self.mnt)
        self.log_path = os.path.join(self.dir, "daemon.log")
        self.proc = None
        self.usage = {}

    def _command(self):
        env = dict(os.environ)
        if self.kind in ("ossmount", "ossmount-rw"):
            env.update(OSS_ACCESS_KEY_ID=DUMMY_ID, OSS_ACCESS_KEY_SECRET=DUMMY_SECRET)
            cmd = [os.path.join(self.build, "daemon", "ossmount"), self.bucket, self.mnt,
                   "--endpoint", self.endpoint, "--path-style", "--region", "cn-bench",
                   "--metadata-ttl", self.metadata_ttl, "-f"]
            if self.cache_dir:
                cmd += ["--cache", self.cache_dir]
            if self.kind == "ossmount-rw":
                cmd += ["--allow-writes", "--upload-journal", os.path.join(self.dir, "journal")]
            return cmd + self.extra, env
        if self.kind in ("s3fs", "s3fs-rw"):
            passwd = os.path.join(self.dir, "passwd")
            with open(passwd, "w") as f:
                f.write("%s:%s\n" % (DUMMY_ID, DUMMY_SECRET))
            os.chmod(passwd, 0o600)
            template = S3FS_RW_OPTS if self.kind == "s3fs-rw" else S3FS_OPTS
            opts = "passwd_file=%s,%s" % (passwd, template.format(endpoint=self.endpoint))
            return ["s3fs", self.bucket, self.mnt, "-f", "-o", opts] + self.extra, env
        if self.kind.startswith("rclone"):
            env.pop("AWS_CA_BUNDLE", None)
            env.update(RCLONE_CONFIG_BENCH_TYPE="s3", RCLONE_CONFIG_BENCH_PROVIDER="Other",
                       RCLONE_CONFIG_BENCH_ENDPOINT=self.endpoint,
                       RCLONE_CONFIG_BENCH_FORCE_PATH_STYLE="true",
                       RCLONE_CONFIG_BENCH_REGION="us-east-1",
                       RCLONE_CONFIG_BENCH_ACCESS_KEY_ID=DUMMY_ID,
                       RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY=DUMMY_SECRET)
            conf = os.path.join(self.dir, "rclone.conf")
            open(conf, "w").close()
            mode = {"rclone-full": "full", "rclone-writes": "writes"}.get(self.kind, "off")
            flags = RCLONE_RW_FLAGS if self.kind == "rclone-writes" else RCLONE_FLAGS
            cache = self.cache_dir or os.path.join(self.dir, "rclone-cache")
            return (["rclone", "mount", "bench:" + self.bucket, self.mnt, "--config", conf,
                     "--cache-dir", cache, "--vfs-cache-mode", mode] + flags + self.extra,
                    env)
        raise ValueError("unknown mount kind %r" % self.kind)

    def __enter__(self):
        cmd, env = self._command()
        log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if os.path.ismount(self.mnt):
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self._teardown()
        raise MountError("%s did not mount (exit %s): %s" %
                         (self.kind, self.proc.returncode, self.log_tail()))

    def __exit__(self, *exc):
        self._teardown()
        return False

    def log_tail(self, n=5):
        try:
            with open(self.log_path, errors="replace") as f:
                return " | ".join(line.strip() for line in f.readlines()[-n:])
        except OSError:
            return ""

    def _teardown(self):
        if self.proc and self.proc.poll() is None:
            pid = serving_pid(self.proc.pid)
            self.usage = {"peak_rss_mib": proc_peak_rss_mib(pid), "cpu_s": proc_cpu_seconds(pid)}
        for args in (["fusermount3", "-u", self.mnt], ["fusermount3", "-uz", self.mnt]):
            if not os.path.ismount(self.mnt):
                break
            subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=30)
            time.sleep(0.2)
        if self.proc:
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def cleanup(self):
        """Removes the mount point, logs and any private cache (after __exit__)."""
        if not os.path.ismount(self.mnt):
            shutil.rmtree(self.dir, ignore_errors=True)
