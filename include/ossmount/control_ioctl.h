// The control channel through the mount itself: ioctls on any directory of the mount carry
// the same requests as the control socket (src/control/command_table.h). This header is the
// contract between the daemon and its clients (src/control/mount_call.h,
// python/ossmount_hints.py).
//
// Why: the socket lives in the daemon's runtime directory, which a process in a container,
// a process of another user, or one that sees the mount only through a bind mount of one of
// its directories can neither reach nor name. Every process that can open a directory of
// the mount can send an ioctl on it, and the kernel says who sent it. The mount is
// read-only, so a writable control file is not possible; an ioctl on a directory needs no
// name in the tree either, so no object is ever hidden.
//
// Protocol, per open directory (one request at a time; the kernel checks nothing but the
// size encoded in the command):
//   fd = open(DIRECTORY, O_RDONLY | O_DIRECTORY)
//   ioctl(fd, kControlSend, &chunk) once per piece of the request (chunk.length bytes of
//     chunk.data); returns 0. A request may be up to kMaxControlRequestBytes.
//   n = ioctl(fd, kControlReceive, &chunk): the first call runs the request and waits for
//     the answer; each call fills chunk with the next piece of the answer (chunk.length
//     bytes) and returns that length; 0 once the whole answer has been handed out. The next
//     kControlSend starts a new request.
// Errors (errno): ENOTTY from a daemon without this channel, or on a file rather than a
// directory; EINVAL for a chunk.length over kControlChunkData; EFBIG for a request over
// kMaxControlRequestBytes; ENOBUFS when the requests pending on all the mount's directories
// would pass kControlPendingBytes; EBUSY for a second kControlReceive while the first waits.
//
// Paths in a request are relative to the directory the ioctls are sent on, and cannot
// leave it ('..' and absolute paths are refused): a process that sees only a bind mount of
// one directory of the mount names paths as it sees them, and can name nothing outside it.
#pragma once

#include <sys/ioctl.h>

#include <cstddef>
#include <cstdint>

namespace ossmount::control {

// The largest request accepted, newline included (hint lists of millions of paths fit).
inline constexpr std::size_t kMaxControlRequestBytes = 64u << 20;

inline constexpr std::size_t kControlChunkData = 16368;

// The ioctl argument for both commands; 16 KiB - 8 (the size an ioctl number can encode is
// under 16 KiB). Layout shared with python/ossmount_hints.py.
struct ControlChunk {
  uint32_t length = 0;    // bytes of data that count
  uint32_t reserved = 0;  // 0
  char data[kControlChunkData];
};
static_assert(sizeof(ControlChunk) == 16376);

inline constexpr unsigned kControlSend = _IOW('O', 0x61, ControlChunk);
inline constexpr unsigned kControlReceive = _IOR('O', 0x62, ControlChunk);

// Bytes of requests being received on all directories of a mount at once.
inline constexpr std::size_t kControlPendingBytes = 128u << 20;

}  // namespace ossmount::control
