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
sends the corresponding paths to the daemon, then yields the indices. With no ossmount mount
behind the paths (or no daemon answering) it warns once and simply yields: training never
fails because of hints.

The paths reach the daemon through the mount itself (ioctls on its directory, see
include/ossmount/control_ioctl.h), so hints work wherever the mount is seen: in a container
given the mount (or one of its directories) as a volume, under another user than the
daemon's (with --allow-other), and through bind mounts. A daemon older than that channel is
reached through its control socket instead. Paths are sent relative to the mount point this
process sees, and the daemon takes them from the directory the request came through.

Only the Python standard library is used (torch is needed only for the Sampler base class
when it is available).
"""

import errno
import fcntl
import json
import os
import socket
import struct
import warnings

try:  # torch is optional for send_hints(); HintedSampler subclasses its Sampler if present.
    from torch.utils.data import Sampler as _SamplerBase
except Exception:  # pragma: no cover - torch missing
    _SamplerBase = object

__all__ = ["HintedSampler", "send_hints", "find_mount", "socket_path_for_mountpoint",
           "dataset_paths"]

# struct ControlChunk and its ioctl numbers, include/ossmount/control_ioctl.h. The _IOC
# layout is that of x86-64 and arm64 (direction in bits 30-31, size in bits 16-29).
_CHUNK_DATA = 16368
_CHUNK_SIZE = 8 + _CHUNK_DATA


def _ioc(direction, nr, size):
    return (direction << 30) | (size << 16) | (ord("O") << 8) | nr


# Bytes of paths per hints request, well within the daemon's 64 MiB per request
# (kMaxControlRequestBytes); a longer list goes in several.
_REQUEST_PATH_BYTES = 32 << 20
# Paths per hints request, well within the daemon's 4,194,304 values per request.
_REQUEST_PATHS = 1 << 20

_CONTROL_SEND = _ioc(1, 0x61, _CHUNK_SIZE)     # _IOW('O', 0x61, ControlChunk)
_CONTROL_RECEIVE = _ioc(2, 0x62, _CHUNK_SIZE)  # _IOR('O', 0x62, ControlChunk)

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
    """The ossmount mount point containing `path` (longest match; a bind mount of one of its
    directories, such as a container's volume, counts), or None."""
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


def _call_through_mount(directory: str, data: bytes) -> bytes:
    """Sends `data` by ioctl on `directory` and returns the answer (OSError on failure;
    ENOTTY from a daemon without this channel)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        chunk = bytearray(_CHUNK_SIZE)
        for start in range(0, len(data), _CHUNK_DATA):
            piece = data[start:start + _CHUNK_DATA]
            struct.pack_into("=II", chunk, 0, len(piece), 0)
            chunk[8:8 + len(piece)] = piece
            fcntl.ioctl(fd, _CONTROL_SEND, chunk, True)
        answer = []
        while True:
            n = fcntl.ioctl(fd, _CONTROL_RECEIVE, chunk, True)
            if n <= 0:
                break
            answer.append(bytes(chunk[8:8 + n]))
        return b"".join(answer)
    finally:
        os.close(fd)


def _call_socket(mountpoint: str, data: bytes, timeout: float) -> bytes:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(socket_path_for_mountpoint(mountpoint))
        sock.sendall(data)
        chunks = []
        while True:
            received = sock.recv(65536)
            if not received:
                break
            chunks.append(received)
            if received.endswith(b"\n"):
                break
    finally:
        sock.close()
    return b"".join(chunks)


def _call(mountpoint: str, request: dict, timeout: float = 60.0) -> dict:
    data = json.dumps(request, separators=(",", ":")).encode() + b"\n"
    try:
        raw = _call_through_mount(mountpoint, data)
    except OSError as e:
        if e.errno not in (errno.ENOTTY, errno.ENOSYS):
            raise RuntimeError("ossmount daemon on %s: %s" % (mountpoint, os.strerror(e.errno)))
        raw = _call_socket(mountpoint, data, timeout)  # a daemon older than the ioctls
    reply = json.loads(raw.decode() or "{}")
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
    # Relative to the mount point as this process sees it: the daemon takes them from the
    # directory the request comes through (a bind mount's shows one of its directories).
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
    # The daemon tells senders apart by pid; one that cannot see this process (a daemon in
    # another container's pid namespace) goes by this name instead.
    sender = "%s:%d" % (socket.gethostname(), os.getpid())
    taken = 0
    # A list over one request's limit goes in pieces, in order: the first replaces this
    # process's list, the others extend it.
    for i, batch in enumerate(_batches(relative, _REQUEST_PATH_BYTES, _REQUEST_PATHS)):
        request = {"command": "hints", "paths": batch, "sender": sender}
        if i > 0:
            request["append"] = True
        taken += int(_call(mountpoint, request).get("files", 0))
    return taken


def _batches(paths, budget, max_paths=_REQUEST_PATHS):
    """`paths` in consecutive pieces of at most `budget` bytes of JSON and `max_paths` paths
    each (a path longer than `budget` alone in its piece); one empty piece for an empty list
    (it clears the list)."""
    batch, size = [], 0
    for p in paths:
        if p.isascii() and p.isprintable() and '"' not in p and "\\" not in p:
            cost = len(p) + 3  # quotes and comma
        else:
            cost = len(json.dumps(p)) + 1
        if batch and (size + cost > budget or len(batch) >= max_paths):
            yield batch
            batch, size = [], 0
        batch.append(p)
        size += cost
    if batch or not paths:
        yield batch


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
