// Passthrough's amendment of the INIT reply, byte for byte, without a kernel: the request
// and reply layouts are those of the FUSE protocol 7.40 (include/uapi/linux/fuse.h).
#include "fuse/passthrough.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

namespace {

using ossmount::fuse::Passthrough;

constexpr uint32_t kInitExt = 1u << 30;
constexpr uint32_t kPassthroughFlags2 = 1u << 5;

void Put32(std::vector<char>& b, size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); }
void Put64(std::vector<char>& b, size_t at, uint64_t v) { std::memcpy(b.data() + at, &v, 8); }
uint32_t Get32(const std::vector<char>& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

// fuse_in_header (40 bytes) + fuse_init_in (64 bytes).
std::vector<char> InitRequest(uint64_t unique, uint32_t flags, uint32_t flags2) {
  std::vector<char> b(40 + 64, 0);
  Put32(b, 0, static_cast<uint32_t>(b.size()));
  Put32(b, 4, 26);  // FUSE_INIT
  Put64(b, 8, unique);
  Put32(b, 40 + 0, 7);
  Put32(b, 40 + 4, 40);
  Put32(b, 40 + 12, flags);
  Put32(b, 40 + 16, flags2);
  return b;
}

struct Reply {
  std::vector<char> header = std::vector<char>(16, 0);  // fuse_out_header
  std::vector<char> body = std::vector<char>(64, 0);    // fuse_init_out
  iovec iov[2];
  Reply(uint64_t unique, uint32_t flags) {
    Put32(header, 0, 16 + 64);
    Put64(header, 8, unique);
    Put32(body, 12, flags);
    iov[0] = {header.data(), header.size()};
    iov[1] = {body.data(), body.size()};
  }
};

// The kernel's INIT (unique 3) with `flags`/`flags2`, then `reply` written and delivered.
void Negotiate(Passthrough& p, uint32_t flags, uint32_t flags2, Reply& reply) {
  auto request = InitRequest(3, flags, flags2);
  p.OnRequestRead(request.data(), request.size());
  p.OnReplyWrite(reply.iov, 2);
  p.OnReplyWritten(true);
}

}  // namespace

TEST_CASE("Passthrough: the INIT reply gets the flag and a stack depth when offered") {
  Passthrough p("");
  auto request = InitRequest(7, kInitExt | 1, kPassthroughFlags2);
  p.OnRequestRead(request.data(), request.size());
  Reply reply(7, kInitExt | 1);
  p.OnReplyWrite(reply.iov, 2);
  CHECK(Get32(reply.body, 32) == kPassthroughFlags2);  // flags2
  CHECK(Get32(reply.body, 36) == 1);                   // max_stack_depth
  CHECK(Get32(reply.body, 12) == (kInitExt | 1));      // flags untouched
  CHECK_FALSE(p.enabled());                            // not before it was delivered
  p.OnReplyWritten(true);
  CHECK(p.enabled());
  CHECK(p.off_reason().empty());

  // Later replies are left alone, even one that looks like an INIT reply.
  Reply later(8, kInitExt);
  p.OnReplyWrite(later.iov, 2);
  CHECK(Get32(later.body, 32) == 0);
}

TEST_CASE("Passthrough: nothing is changed when the kernel does not offer it") {
  SECTION("no FUSE_PASSTHROUGH in flags2") {
    Passthrough p("");
    Reply reply(3, kInitExt);
    Negotiate(p, kInitExt, 0, reply);
    CHECK(Get32(reply.body, 32) == 0);
    CHECK(Get32(reply.body, 36) == 0);
    CHECK_FALSE(p.enabled());
    CHECK_THAT(p.off_reason(), Catch::Contains("does not offer"));
  }
  SECTION("flags2 not valid (no FUSE_INIT_EXT from the kernel)") {
    Passthrough p("");
    Reply reply(3, 0);
    Negotiate(p, 0, kPassthroughFlags2, reply);
    CHECK(Get32(reply.body, 32) == 0);
    CHECK_FALSE(p.enabled());
  }
  SECTION("a reply to another request is not the INIT reply") {
    Passthrough p("");
    Reply other(4, kInitExt);
    Negotiate(p, kInitExt, kPassthroughFlags2, other);
    CHECK(Get32(other.body, 32) == 0);
    CHECK_FALSE(p.enabled());
  }
  SECTION("turned off by the user") {
    Passthrough p("turned off (--no-passthrough)");
    CHECK(p.off_reason() == "turned off (--no-passthrough)");
    CHECK_FALSE(p.enabled());
  }
}

TEST_CASE("Passthrough: opens are answered normally while it is off") {
  Passthrough p("");
  CHECK(p.BeginOpen(5, 100, /*backing_fd=*/0) == 0);  // not enabled: no ioctl, no id
  p.EndOpen(5, 100);
  p.EndOpen(5, 100);  // a second release of the same handle is ignored
}
