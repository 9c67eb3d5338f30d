"""Sampler-order hints for ossmount: tell the mount which files the DataLoader reads next.

A DataLoader worker reads one file at a time, so N workers keep at most N requests in
flight. Given the epoch's order, the ossmount daemon fetches ahead of the readers with
many requests in flight (--hint-concurrency, default 256), keeping --hint-ahead-files /
--hint-ahead-bytes ahead, and each read is then served from memory without a GET.

Usage (see examples/train_imagefolder.py):

    from ossmount_hints import HintedSampler
    dataset = torchvision.datasets.ImageFolder("/mnt/oss/train", transform=...)
    sampler = HintedSampler(torch.utils.data.RandomSampler(dataset), dataset)
    loader = torch.utils.data.DataLoader(dataset, sampler=sampler, num_workers=16, ...)

HintedSampler wraps any sampler: at each __iter__ it materialises the epoch's indices,
sends the corresponding paths to the daemon over the mount's control socket, then yields
the indices. With no ossmount mount behind the paths (or no daemon answering) it warns
once and simply yields: training never fails because of hints.

Only the Python standard library is used (torch is needed only for the Sampler base class
when it is available).
"""

import json
import os
import socket
import warnings

try:  # torch is optional for send_hints(); HintedSampler subclasses its Sampler if present.
    from torch.utils.data import Sampler as _SamplerBase
except Exception:  # pragma: no cover - torch missing
    _SamplerBase = object

__all__ = ["HintedSampler", "send_hints", "find_mount", "socket_path_for_mountpoint",
           "dataset_paths"]

_CRC64_POLY = 0xC96C5795D7870F42  # CRC-64/XZ, reflected
_CRC64_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ _CRC64_POLY if _c & 1 else _c >> 1
    _CRC64_TABLE.append(_c)


def _crc64(data: bytes) -> int:
    crc = 0xFFFFFFFFFFFFFFFF
    for b in data:
        crc = _CRC64_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFFFFFFFFFF


def _socket_directory() -> str:
    uid = os.geteuid()
    if uid == 0:
        return "/run/ossmount"
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if xdg.startswith("/"):
        try:
            st = os.stat(xdg)
            import stat as _stat
            if _stat.S_ISDIR(st.st_mode) and st.st_uid == uid:
                return xdg + "/ossmount"
        except OSError:
            pass
    return "/tmp/ossmount-%d" % uid


def socket_path_for_mountpoint(mountpoint: str) -> str:
    """The control socket of the mount on `mountpoint` (absolute): the same rule as the
    daemon's control::SocketPathForMountpoint."""
    directory = _socket_directory()
    raw = mountpoint.encode()
    digest = "%016x" % _crc64(raw)
    readable = []
    for ch in raw:
        c = chr(ch)
        if c.isascii() and (c.isalnum() or c in "._-"):
            readable.append(c)
        elif readable and readable[-1] != "-":
            readable.append("-")
    text = "".join(readable).rstrip("-")
    limit = 107  # sizeof(sun_path) - 1
    fixed = len(directory.encode()) + 1 + 1 + 16 + 5
    room = limit - fixed if fixed < limit else 0
    if len(text) > room:
        text = text[len(text) - room:] if room > 0 else ""
    return directory + "/" + text + ("-" if text else "") + digest + ".sock"


def _unescape(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 3 < len(s) and all(c in "01234567" for c in s[i + 1:i + 4]):
            out.append(chr(int(s[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def find_mount(path: str):
    """The ossmount mount point containing `path` (longest match), or None."""
    real = os.path.realpath(path)
    best = None
    try:
        with open("/proc/self/mountinfo") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if "-" not in fields[6:]:
            continue
        dash = fields.index("-", 6)
        if dash + 2 >= len(fields):
            continue
        fstype, source = fields[dash + 1], _unescape(fields[dash + 2])
        if not fstype.startswith("fuse") or not source.startswith("ossmount:"):
            continue
        mp = _unescape(fields[4])
        inside = real == mp or mp == "/" or real.startswith(mp.rstrip("/") + "/")
        if inside and (best is None or len(mp) > len(best)):
            best = mp
    return best


def _call(mountpoint: str, request: dict, timeout: float = 60.0) -> dict:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(socket_path_for_mountpoint(mountpoint))
        sock.sendall(json.dumps(request, separators=(",", ":")).encode() + b"\n")
        chunks = []
        while True:
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
            if data.endswith(b"\n"):
                break
    finally:
        sock.close()
    reply = json.loads(b"".join(chunks).decode() or "{}")
    if not reply.get("ok"):
        raise RuntimeError("ossmount daemon on %s: %s" % (mountpoint, reply.get("error", "refused")))
    return reply


def send_hints(paths, mountpoint=None) -> int:
    """Sends the list of files in the order they will be read; it replaces the list this
    process sent before (each process, such as each rank of a distributed job, has its own).
    Returns the number of paths the daemon took. All paths must be inside one ossmount mount.

    A path is absolute, or relative: to `mountpoint` when it is given, else to the current
    directory (like open() would take it), which is also how the mount is found."""
    paths = list(paths)
    if mountpoint is None:
        if not paths:
            raise ValueError("send_hints: no paths and no mountpoint")
        paths = [os.path.abspath(p) for p in paths]
        mountpoint = find_mount(paths[0])
        if mountpoint is None:
            raise RuntimeError("%s is not inside an ossmount mount" % paths[0])
    mountpoint = os.path.realpath(mountpoint)
    prefix = mountpoint.rstrip("/") + "/"
    relative = []
    for p in paths:
        if os.path.isabs(p):
            p = os.path.normpath(p)
            if not p.startswith(prefix):
                p = os.path.realpath(p)
                if not p.startswith(prefix):
                    raise ValueError("%s is not inside the mount %s" % (p, mountpoint))
            p = p[len(prefix):]
        relative.append(p)
    return int(_call(mountpoint, {"command": "hints", "paths": relative}).get("files", 0))


def dataset_paths(dataset):
    """The file path of each index of an ImageFolder/DatasetFolder-like dataset (its
    `samples` or `imgs` list of (path, target)), or a dataset's own `paths` list."""
    for attr in ("samples", "imgs"):
        samples = getattr(dataset, attr, None)
        if samples is not None:
            return [s[0] for s in samples]
    paths = getattr(dataset, "paths", None)
    if paths is not None:
        return list(paths)
    raise TypeError("cannot find file paths in %r: give paths=... (a list, one per index)"
                    % type(dataset).__name__)


class HintedSampler(_SamplerBase):
    """Wraps a sampler; at each epoch sends the order's file paths to ossmount, then yields.

    `dataset` gives the path of each index (ImageFolder: dataset.samples); or pass `paths`.
    Relative paths (ImageFolder("data/train")) are taken from the current directory, as the
    loader's open() takes them, and made absolute here, once.
    In a distributed job wrap each rank's DistributedSampler: the daemon keeps one list per
    sending process, so every rank's share is prefetched.
    """

    def __init__(self, sampler, dataset=None, paths=None, mountpoint=None):
        self.sampler = sampler
        raw = list(paths) if paths is not None else dataset_paths(dataset)
        self.paths = [p if os.path.isabs(p) else os.path.abspath(p) for p in raw]
        self.mountpoint = mountpoint
        self.sent = 0  # paths taken by the daemon at the last __iter__
        self._warned = False
        if self.mountpoint is None and self.paths:
            self.mountpoint = find_mount(self.paths[0])

    def __len__(self):
        return len(self.sampler)

    def __iter__(self):
        order = list(iter(self.sampler))
        if self.mountpoint is not None:
            try:
                self.sent = send_hints((self.paths[i] for i in order), self.mountpoint)
            except Exception as e:  # hints only speed things up; never fail training
                if not self._warned:
                    warnings.warn("ossmount hints not sent: %s" % e)
                    self._warned = True
                self.sent = 0
        elif not self._warned:
            warnings.warn("ossmount hints: %s is not inside an ossmount mount"
                          % (self.paths[0] if self.paths else "(no paths)"))
            self._warned = True
        return iter(order)

    def set_epoch(self, epoch):  # DistributedSampler compatibility
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)
