#include "fuse/uring_protocol.h"

#include "fuse/fuse_wire.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ossmount::fuse::uring {
namespace {

using wire::kInitOutFlags;
using wire::kInitOutMaxPages;
using wire::kInitOutMaxWrite;
using wire::kMaxPages;
using wire::LoadU32;
constexpr size_t kDefaultMaxPages = 32;  // the kernel's FUSE_DEFAULT_MAX_PAGES_PER_REQ

}  // namespace

size_t RebuildRequest(const RequestHeader& header, const char* payload, size_t payload_capacity,
                      char* out, size_t out_capacity) {
  const uint32_t len = LoadU32(header.in_out);  // fuse_in_header.len
  const size_t payload_size = header.ent_in_out.payload_sz;
  // len counts the header and every argument; the first argument came in op_in, the rest
  // in the payload.
  if (len < kInHeaderSize + payload_size || payload_size > payload_capacity || len > out_capacity) {
    return 0;
  }
  const size_t op_size = len - kInHeaderSize - payload_size;
  if (op_size > sizeof(header.op_in)) return 0;
  std::memcpy(out, header.in_out, kInHeaderSize);
  std::memcpy(out + kInHeaderSize, header.op_in, op_size);
  std::memcpy(out + kInHeaderSize + op_size, payload, payload_size);
  return len;
}

bool WriteReply(const ::iovec* iov, int count, RequestHeader* header, char* payload,
                size_t payload_capacity) {
  // fuse_out_header: len, error, unique.
  struct {
    uint32_t len;
    int32_t error;
    uint64_t unique;
  } out;
  static_assert(sizeof(out) == kOutHeaderSize);
  std::memcpy(&out, iov[0].iov_base, sizeof(out));
  size_t total = 0;
  for (int i = 1; i < count; ++i) total += iov[i].iov_len;
  const bool fits = total <= payload_capacity;
  if (fits) {
    size_t at = 0;
    for (int i = 1; i < count; ++i) {
      std::memcpy(payload + at, iov[i].iov_base, iov[i].iov_len);
      at += iov[i].iov_len;
    }
  } else {
    out.error = -EIO;
    total = 0;
  }
  out.len = static_cast<uint32_t>(kOutHeaderSize + total);
  std::memcpy(header->in_out, &out, sizeof(out));
  header->ent_in_out.payload_sz = static_cast<uint32_t>(total);
  return fits;
}

size_t PayloadSizeOfInitReply(const char* init_out, size_t size, size_t page_size) {
  size_t pages = kDefaultMaxPages;
  size_t max_write = 4096;
  if (size >= kInitOutMaxPages + 2) {
    max_write = std::max<size_t>(max_write, LoadU32(init_out + kInitOutMaxWrite));
    if (LoadU32(init_out + kInitOutFlags) & kMaxPages) {
      uint16_t p;
      std::memcpy(&p, init_out + kInitOutMaxPages, sizeof(p));
      pages = std::max<size_t>(p, 1);
    }
  }
  return std::max({kMinReadBuffer, max_write, pages * page_size});
}

}  // namespace ossmount::fuse::uring
