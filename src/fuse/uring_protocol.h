// The FUSE-over-io_uring wire layout (include/uapi/linux/fuse.h, protocol 7.42; Debian 12's
// kernel headers predate it) and the two conversions between a ring entry and the
// /dev/fuse layout libfuse 3.14 speaks. Pure functions on memory, so they are tested
// without a kernel (tests/unit/fuse/uring_protocol_test.cc).
//
// A ring entry is two buffers the daemon registers with the kernel: a header area
// (RingRequestHeader) and a payload buffer at least as large as the largest request or
// reply of the connection. For a request, the kernel writes struct fuse_in_header into
// `in_out`, the operation's first argument (its own header, e.g. fuse_read_in; empty for
// LOOKUP, whose only argument is the name) into `op_in`, and the remaining arguments into
// the payload, whose length it puts in ent_in_out.payload_sz. A reply is struct
// fuse_out_header in `in_out` and all of the reply's arguments in the payload.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

namespace ossmount::fuse::uring {

constexpr uint32_t kCmdRegister = 1;        // FUSE_IO_URING_CMD_REGISTER
constexpr uint32_t kCmdCommitAndFetch = 2;  // FUSE_IO_URING_CMD_COMMIT_AND_FETCH
constexpr size_t kMinReadBuffer = 8192;     // FUSE_MIN_READ_BUFFER
constexpr size_t kInHeaderSize = 40;        // struct fuse_in_header
constexpr size_t kOutHeaderSize = 16;       // struct fuse_out_header

struct EntryInOut {  // struct fuse_uring_ent_in_out
  uint64_t flags;
  uint64_t commit_id;  // the id to commit the reply under (the request's unique)
  uint32_t payload_sz;
  uint32_t padding;
  uint64_t reserved;
};

struct RequestHeader {  // struct fuse_uring_req_header
  char in_out[128];     // fuse_in_header (request) or fuse_out_header (reply)
  char op_in[128];      // the operation's own header, the request's first argument
  EntryInOut ent_in_out;
};
static_assert(sizeof(RequestHeader) == 288);

struct CommandRequest {  // struct fuse_uring_cmd_req: the 80-byte command area of an SQE
  uint64_t flags;
  uint64_t commit_id;
  uint16_t qid;
  uint8_t padding[6];
};
static_assert(sizeof(CommandRequest) <= 80);

// Copies the request in `header` and `payload` into `out` in the /dev/fuse layout
// (fuse_in_header, then every argument back to back), with the header's len set to the
// total. Returns that length, or 0 when the entry is inconsistent (lengths that do not add
// up, an operation header over 128 bytes, a payload over `payload_capacity`, or a total
// over `out_capacity`); nothing is dispatched then.
size_t RebuildRequest(const RequestHeader& header, const char* payload, size_t payload_capacity,
                      char* out, size_t out_capacity);

// Writes a reply given as libfuse hands it to its writev hook (iov[0] a fuse_out_header,
// then the arguments) into `header` and `payload`. A reply larger than `payload_capacity`
// becomes an EIO reply with no arguments; false then.
bool WriteReply(const ::iovec* iov, int count, RequestHeader* header, char* payload,
                size_t payload_capacity);

// The payload buffer the kernel requires of every entry, from the connection's INIT reply
// (struct fuse_init_out): the largest of FUSE_MIN_READ_BUFFER, max_write and
// max_pages pages.
size_t PayloadSizeOfInitReply(const char* init_out, size_t size, size_t page_size);

}  // namespace ossmount::fuse::uring
