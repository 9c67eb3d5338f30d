// Byte-level access to FUSE protocol messages, and the offsets and flags of the messages
// the daemon amends by hand (include/uapi/linux/fuse.h, protocol 7.42), which Debian 12's
// kernel headers and libfuse 3.14 predate. One place for them, so that the files that read
// INIT agree (and a unity build sees each name once).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ossmount::fuse::wire {

inline uint32_t LoadU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void StoreU32(char* p, uint32_t v) { std::memcpy(p, &v, sizeof(v)); }

constexpr uint32_t kOpcodeInit = 26;   // FUSE_INIT
constexpr size_t kInHeaderSize = 40;   // struct fuse_in_header
constexpr size_t kOutHeaderSize = 16;  // struct fuse_out_header

// struct fuse_init_in, after the in header.
constexpr size_t kInitInFlags = kInHeaderSize + 12;
constexpr size_t kInitInFlags2 = kInHeaderSize + 16;

// struct fuse_init_out.
constexpr size_t kInitOutFlags = 12;
constexpr size_t kInitOutMaxWrite = 20;
constexpr size_t kInitOutMaxPages = 28;  // u16
constexpr size_t kInitOutFlags2 = 32;
constexpr size_t kInitOutMaxStackDepth = 36;

// FUSE_NOTIFY_RESEND (Linux 6.9): the kernel sends again every request it had handed out
// and not had answered; a notification is an out header with unique 0 and this as error.
constexpr int32_t kNotifyResend = 7;

// INIT flags (flags), and flags2 bits (the flag's bit minus 32).
constexpr uint32_t kParallelDirops = 1u << 18;    // FUSE_PARALLEL_DIROPS
constexpr uint32_t kMaxPages = 1u << 22;          // FUSE_MAX_PAGES
constexpr uint32_t kInitExt = 1u << 30;           // FUSE_INIT_EXT: flags2 is valid
constexpr uint32_t kPassthroughFlags2 = 1u << 5;  // FUSE_PASSTHROUGH (1ULL << 37)
constexpr uint32_t kOverIoUringFlags2 = 1u << 9;  // FUSE_OVER_IO_URING (1ULL << 41)

}  // namespace ossmount::fuse::wire
