// The INIT negotiation through the device hooks, byte for byte, without a kernel: the
// amendments for FUSE passthrough, FUSE over io_uring and parallel dirops, and when each
// takes effect. The request and reply layouts are those of the FUSE protocol 7.42
// (include/uapi/linux/fuse.h).
#include "fuse/device_hooks.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "fuse/passthrough.h"
#include "fuse/uring_transport.h"

namespace {

using ossmount::fuse::DeviceHooks;
using ossmount::fuse::Passthrough;
using ossmount::fuse::UringTransport;

constexpr uint32_t kInitExt = 1u << 30;
constexpr uint32_t kParallelDirops = 1u << 18;
constexpr uint32_t kPassthroughFlags2 = 1u << 5;
constexpr uint32_t kUringFlags2 = 1u << 9;

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
void Negotiate(DeviceHooks& hooks, uint32_t flags, uint32_t flags2, Reply& reply) {
  auto request = InitRequest(3, flags, flags2);
  hooks.OnRequestRead(request.data(), request.size());
  CHECK_FALSE(hooks.OnReplyWrite(reply.iov, 2));  // INIT goes to /dev/fuse
  hooks.OnReplyWritten(true);
}

}  // namespace

TEST_CASE("Passthrough: the INIT reply gets the flag and a stack depth when offered") {
  Passthrough p("");
  DeviceHooks hooks(&p, nullptr);
  auto request = InitRequest(7, kInitExt | 1, kPassthroughFlags2);
  hooks.OnRequestRead(request.data(), request.size());
  Reply reply(7, kInitExt | 1);
  hooks.OnReplyWrite(reply.iov, 2);
  CHECK(Get32(reply.body, 32) == kPassthroughFlags2);  // flags2
  CHECK(Get32(reply.body, 36) == 1);                   // max_stack_depth
  CHECK(Get32(reply.body, 12) == (kInitExt | 1));      // flags untouched
  CHECK_FALSE(p.enabled());                            // not before it was delivered
  hooks.OnReplyWritten(true);
  CHECK(p.enabled());
  CHECK(p.off_reason().empty());

  // Later replies are left alone, even one that looks like an INIT reply.
  Reply later(8, kInitExt);
  hooks.OnReplyWrite(later.iov, 2);
  CHECK(Get32(later.body, 32) == 0);
}

TEST_CASE("Passthrough: nothing is changed when the kernel does not offer it") {
  SECTION("no FUSE_PASSTHROUGH in flags2") {
    Passthrough p("");
    DeviceHooks hooks(&p, nullptr);
    Reply reply(3, kInitExt);
    Negotiate(hooks, kInitExt, 0, reply);
    CHECK(Get32(reply.body, 32) == 0);
    CHECK(Get32(reply.body, 36) == 0);
    CHECK_FALSE(p.enabled());
    CHECK_THAT(p.off_reason(), Catch::Contains("does not offer"));
  }
  SECTION("flags2 not valid (no FUSE_INIT_EXT from the kernel)") {
    Passthrough p("");
    DeviceHooks hooks(&p, nullptr);
    Reply reply(3, 0);
    Negotiate(hooks, 0, kPassthroughFlags2, reply);
    CHECK(Get32(reply.body, 32) == 0);
    CHECK_FALSE(p.enabled());
  }
  SECTION("a reply to another request is not the INIT reply") {
    Passthrough p("");
    DeviceHooks hooks(&p, nullptr);
    Reply other(4, kInitExt);
    Negotiate(hooks, kInitExt, kPassthroughFlags2, other);
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

TEST_CASE("Parallel dirops: passed on when the kernel offers them") {
  SECTION("offered") {
    DeviceHooks hooks(nullptr, nullptr);
    Reply reply(3, kInitExt);
    Negotiate(hooks, kInitExt | kParallelDirops, 0, reply);
    CHECK(Get32(reply.body, 12) == (kInitExt | kParallelDirops));
  }
  SECTION("not offered") {
    DeviceHooks hooks(nullptr, nullptr);
    Reply reply(3, kInitExt);
    Negotiate(hooks, kInitExt, 0, reply);
    CHECK(Get32(reply.body, 12) == kInitExt);
  }
}

TEST_CASE("io_uring: the INIT reply asks for rings only when wanted and offered") {
  SECTION("offered and wanted: the flag is set, beside passthrough's") {
    Passthrough p("");
    UringTransport uring("", 4);
    DeviceHooks hooks(&p, &uring);
    auto request = InitRequest(3, kInitExt, kUringFlags2 | kPassthroughFlags2);
    hooks.OnRequestRead(request.data(), request.size());
    Reply reply(3, kInitExt);
    hooks.OnReplyWrite(reply.iov, 2);
    CHECK(Get32(reply.body, 32) == (kUringFlags2 | kPassthroughFlags2));
    CHECK(uring.off_reason().empty());
    CHECK_FALSE(uring.active());  // nothing starts before the reply is delivered
  }
  SECTION("not offered: no flag, and the reason names the kernel's switch") {
    UringTransport uring("", 4);
    DeviceHooks hooks(nullptr, &uring);
    Reply reply(3, kInitExt);
    Negotiate(hooks, kInitExt, 0, reply);
    CHECK(Get32(reply.body, 32) == 0);
    CHECK_FALSE(uring.active());
    CHECK_THAT(uring.off_reason(), Catch::Contains("enable_uring"));
  }
  SECTION("not wanted: no flag, the reason kept") {
    UringTransport uring("turned off (--fuse-io-uring off)", 4);
    DeviceHooks hooks(nullptr, &uring);
    Reply reply(3, kInitExt);
    Negotiate(hooks, kInitExt, kUringFlags2, reply);
    CHECK(Get32(reply.body, 32) == 0);
    CHECK_FALSE(uring.active());
    CHECK(uring.off_reason() == "turned off (--fuse-io-uring off)");
  }
  SECTION("rings that cannot register fall back to /dev/fuse, saying why") {
    // No connection behind the device fd (-1): the kernel refuses every entry.
    UringTransport uring("", 4);
    DeviceHooks hooks(nullptr, &uring);
    Reply reply(3, kInitExt);
    Negotiate(hooks, kInitExt, kUringFlags2, reply);
    CHECK(Get32(reply.body, 32) == kUringFlags2);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (uring.off_reason().empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    CHECK_THAT(uring.off_reason(), Catch::Contains("refused a ring entry"));
    CHECK_FALSE(uring.active());
    // A reply to a request no ring carried still goes to /dev/fuse.
    Reply other(9, 0);
    CHECK_FALSE(hooks.OnReplyWrite(other.iov, 2));
  }
}
