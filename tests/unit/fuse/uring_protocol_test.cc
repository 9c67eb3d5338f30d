// The FUSE-over-io_uring layout conversions, byte for byte, without a kernel: a ring
// entry's request rebuilt in the /dev/fuse layout libfuse 3.14 dispatches, a reply written
// into an entry, and the entry size an INIT reply implies (include/uapi/linux/fuse.h 7.42).
#include "fuse/uring_protocol.h"

#include "fuse/uring_transport.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace {

namespace uring = ossmount::fuse::uring;

// fuse_in_header: len, opcode, unique, nodeid, uid, gid, pid, total_extlen, padding.
struct InHeader {
  uint32_t len;
  uint32_t opcode;
  uint64_t unique;
  uint64_t nodeid;
  uint32_t uid, gid, pid;
  uint16_t total_extlen, padding;
};
static_assert(sizeof(InHeader) == uring::kInHeaderSize);

struct Entry {
  uring::RequestHeader header{};
  std::vector<char> payload = std::vector<char>(4096, '\x55');
};

// An entry as the kernel fills it: `op` in op_in, `rest` in the payload, len = the total.
Entry KernelRequest(uint32_t opcode, uint64_t unique, const std::string& op,
                    const std::string& rest) {
  Entry e;
  InHeader in{};
  in.len = static_cast<uint32_t>(uring::kInHeaderSize + op.size() + rest.size());
  in.opcode = opcode;
  in.unique = unique;
  in.nodeid = 42;
  std::memcpy(e.header.in_out, &in, sizeof(in));
  std::memcpy(e.header.op_in, op.data(), op.size());
  std::memcpy(e.payload.data(), rest.data(), rest.size());
  e.header.ent_in_out.payload_sz = static_cast<uint32_t>(rest.size());
  e.header.ent_in_out.commit_id = unique;
  return e;
}

std::string Rebuild(const Entry& e, size_t out_capacity = 8192) {
  std::vector<char> out(out_capacity, 0);
  const size_t n =
      uring::RebuildRequest(e.header, e.payload.data(), e.payload.size(), out.data(), out.size());
  return std::string(out.data(), n);
}

uint32_t Get32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

TEST_CASE("uring: a request is rebuilt as header, operation header, then the payload") {
  SECTION("LOOKUP: no operation header, the name in the payload") {
    const std::string name("n01440764", 10);  // with its NUL, as the kernel sends it
    Entry e = KernelRequest(1, 77, "", name);
    const std::string req = Rebuild(e);
    REQUIRE(req.size() == uring::kInHeaderSize + name.size());
    CHECK(Get32(req.data()) == req.size());
    CHECK(std::memcmp(req.data(), e.header.in_out, uring::kInHeaderSize) == 0);
    CHECK(req.substr(uring::kInHeaderSize) == name);
  }
  SECTION("READ: a 40-byte fuse_read_in in op_in and an empty payload") {
    const std::string read_in(40, '\x07');
    Entry e = KernelRequest(15, 78, read_in, "");
    const std::string req = Rebuild(e);
    REQUIRE(req.size() == uring::kInHeaderSize + 40);
    CHECK(req.substr(uring::kInHeaderSize) == read_in);
  }
  SECTION("IOCTL: fuse_ioctl_in, then the caller's bytes") {
    const std::string ioctl_in(32, '\x01');
    const std::string data(3000, 'd');
    Entry e = KernelRequest(39, 79, ioctl_in, data);
    const std::string req = Rebuild(e);
    REQUIRE(req.size() == uring::kInHeaderSize + 32 + 3000);
    CHECK(req.substr(uring::kInHeaderSize, 32) == ioctl_in);
    CHECK(req.substr(uring::kInHeaderSize + 32) == data);
  }
}

TEST_CASE("uring: an inconsistent entry is not rebuilt") {
  Entry e = KernelRequest(15, 80, std::string(40, 'x'), "abc");
  InHeader in;
  std::memcpy(&in, e.header.in_out, sizeof(in));
  SECTION("len shorter than the header and the payload") {
    in.len = static_cast<uint32_t>(uring::kInHeaderSize + 2);
    std::memcpy(e.header.in_out, &in, sizeof(in));
    CHECK(Rebuild(e).empty());
  }
  SECTION("an operation header longer than op_in") {
    in.len = static_cast<uint32_t>(uring::kInHeaderSize + 129 + 3);
    std::memcpy(e.header.in_out, &in, sizeof(in));
    CHECK(Rebuild(e).empty());
  }
  SECTION("a payload larger than the entry's buffer") {
    e.header.ent_in_out.payload_sz = 5000;
    in.len = static_cast<uint32_t>(uring::kInHeaderSize + 5000);
    std::memcpy(e.header.in_out, &in, sizeof(in));
    CHECK(Rebuild(e).empty());
  }
  SECTION("a request larger than the output buffer") { CHECK(Rebuild(e, 50).empty()); }
  SECTION("consistent: rebuilt") { CHECK(Rebuild(e).size() == uring::kInHeaderSize + 43); }
}

TEST_CASE(
    "uring: a reply lands as fuse_out_header in the header and its arguments in the payload") {
  uring::RequestHeader header{};
  std::vector<char> payload(64, 0);
  struct {
    uint32_t len;
    int32_t error;
    uint64_t unique;
  } out{0, 0, 91};
  const std::string open_out("0123456789abcdef");
  const std::string extra("XYZ");
  iovec iov[3] = {{&out, sizeof(out)},
                  {const_cast<char*>(open_out.data()), open_out.size()},
                  {const_cast<char*>(extra.data()), extra.size()}};
  REQUIRE(uring::WriteReply(iov, 3, &header, payload.data(), payload.size()));
  CHECK(header.ent_in_out.payload_sz == 19);
  CHECK(std::string(payload.data(), 19) == open_out + extra);
  CHECK(Get32(header.in_out) == uring::kOutHeaderSize + 19);  // len
  int32_t error;
  uint64_t unique;
  std::memcpy(&error, header.in_out + 4, 4);
  std::memcpy(&unique, header.in_out + 8, 8);
  CHECK(error == 0);
  CHECK(unique == 91);

  SECTION("an error reply has no arguments") {
    out.error = -ENOENT;
    REQUIRE(uring::WriteReply(iov, 1, &header, payload.data(), payload.size()));
    CHECK(header.ent_in_out.payload_sz == 0);
    std::memcpy(&error, header.in_out + 4, 4);
    CHECK(error == -ENOENT);
  }
  SECTION("a reply larger than the buffer becomes EIO, nothing copied") {
    std::vector<char> small(10, 'z');
    CHECK_FALSE(uring::WriteReply(iov, 3, &header, small.data(), small.size()));
    CHECK(header.ent_in_out.payload_sz == 0);
    CHECK(std::string(small.data(), small.size()) == std::string(10, 'z'));
    std::memcpy(&error, header.in_out + 4, 4);
    std::memcpy(&unique, header.in_out + 8, 8);
    CHECK(error == -EIO);
    CHECK(unique == 91);
  }
}

TEST_CASE("uring: the entry size follows the INIT reply") {
  std::vector<char> init_out(64, 0);
  auto put32 = [&](size_t at, uint32_t v) { std::memcpy(init_out.data() + at, &v, 4); };
  auto put16 = [&](size_t at, uint16_t v) { std::memcpy(init_out.data() + at, &v, 2); };
  put32(20, 1u << 20);  // max_write 1 MiB
  put16(28, 256);       // max_pages
  SECTION("max_pages counts only with FUSE_MAX_PAGES") {
    CHECK(uring::PayloadSizeOfInitReply(init_out.data(), init_out.size(), 4096) == (1u << 20));
    put32(20, 4096);
    CHECK(uring::PayloadSizeOfInitReply(init_out.data(), init_out.size(), 4096) == 32 * 4096);
    put32(12, 1u << 22);
    CHECK(uring::PayloadSizeOfInitReply(init_out.data(), init_out.size(), 4096) == 256 * 4096);
  }
  SECTION("never below FUSE_MIN_READ_BUFFER") {
    put32(20, 0);
    put32(12, 1u << 22);
    put16(28, 1);
    CHECK(uring::PayloadSizeOfInitReply(init_out.data(), init_out.size(), 4096) == 8192);
  }
  SECTION("a reply too short to say: the kernel's defaults") {
    CHECK(uring::PayloadSizeOfInitReply(init_out.data(), 16, 4096) == 32 * 4096);
  }
}

TEST_CASE("uring: one queue per possible CPU, counted as the kernel counts them") {
  using ossmount::fuse::UringTransport;
  CHECK(UringTransport::CountCpuList("0-1") == 2);
  CHECK(UringTransport::CountCpuList("0") == 1);
  CHECK(UringTransport::CountCpuList("0-3,8-11") == 8);
  CHECK(UringTransport::CountCpuList("0,2,4-5") == 4);
  CHECK(UringTransport::CountCpuList("") == 0);
  CHECK(UringTransport::CountCpuList("x-1") == 0);
  CHECK(UringTransport::CountCpuList("3-1") == 0);
  CHECK(UringTransport::PossibleCpus() >= 1);
  // Entries: 32 in all, at least 8 per queue.
  CHECK(UringTransport::EntriesPerQueue(1) == 32);
  CHECK(UringTransport::EntriesPerQueue(2) == 16);
  CHECK(UringTransport::EntriesPerQueue(4) == 8);
  CHECK(UringTransport::EntriesPerQueue(96) == 8);
}
