// ControlRequests: collecting a directory handle's request from ioctl chunks, handing the
// answer out in pieces, and the bounds on what a caller can make the daemon hold. No kernel:
// the answerer is a test double that records requests and answers when told.
#include "fuse/control_requests.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ossmount::fuse {
namespace {

// Records each request and its caller; answers only when the test calls Finish.
struct FakeAnswerer {
  std::vector<std::string> requests;
  std::vector<ControlCaller> callers;
  std::vector<std::function<void(std::string)>> pending;

  ControlAnswerer Fn() {
    return
        [this](std::string request, ControlCaller caller, std::function<void(std::string)> done) {
          requests.push_back(std::move(request));
          callers.push_back(caller);
          pending.push_back(std::move(done));
        };
  }
  void Finish(size_t i, std::string answer) { pending.at(i)(std::move(answer)); }
};

// What one Receive call gave.
struct Received {
  bool called = false;
  int error = -1;
  std::string piece;
};

ControlRequests::ReceiveDone Into(Received& r) {
  return [&r](int error, std::string_view piece) {
    r.called = true;
    r.error = error;
    r.piece = std::string(piece);
  };
}

// Every remaining piece of an answered exchange, until the empty one.
std::string DrainAnswer(ControlRequests& control, uint64_t handle, size_t max) {
  std::string all;
  for (int i = 0; i < 10000; ++i) {
    Received r;
    control.Receive(handle, max, {}, Into(r));
    REQUIRE(r.called);
    REQUIRE(r.error == 0);
    if (r.piece.empty()) return all;
    all += r.piece;
  }
  FAIL("the answer never ended");
  return all;
}

}  // namespace

TEST_CASE("control requests: chunks make one request, answered in pieces, then the exchange ends") {
  FakeAnswerer answerer;
  auto control = std::make_shared<ControlRequests>(answerer.Fn(), 1 << 20, 4 << 20);
  REQUIRE(control->Send(7, R"({"command":)") == 0);
  REQUIRE(control->Send(7, R"("stats"})") == 0);
  CHECK(control->pending_bytes() == 19);

  Received first;
  control->Receive(7, 4, ControlCaller{1234, 1000}, Into(first));
  REQUIRE(answerer.requests.size() == 1);
  CHECK(answerer.requests[0] == R"({"command":"stats"})");
  CHECK(answerer.callers[0].pid == 1234);
  CHECK(answerer.callers[0].uid == 1000);
  CHECK(control->pending_bytes() == 0);
  CHECK_FALSE(first.called);  // waits for the answer

  answerer.Finish(0, "0123456789\n");
  REQUIRE(first.called);
  CHECK(first.error == 0);
  CHECK(first.piece == "0123");
  CHECK(DrainAnswer(*control, 7, 4) == "456789\n");

  // The handle takes a new request after the answer was handed out whole.
  REQUIRE(control->Send(7, "second") == 0);
  Received again;
  control->Receive(7, 100, {}, Into(again));
  REQUIRE(answerer.requests.size() == 2);
  CHECK(answerer.requests[1] == "second");
  answerer.Finish(1, "ok\n");
  CHECK(again.piece == "ok\n");
}

TEST_CASE("control requests: directory handles do not share requests or answers") {
  FakeAnswerer answerer;
  auto control = std::make_shared<ControlRequests>(answerer.Fn(), 1 << 20, 4 << 20);
  REQUIRE(control->Send(1, "one") == 0);
  REQUIRE(control->Send(2, "two") == 0);
  Received r2, r1;
  control->Receive(2, 100, {}, Into(r2));
  control->Receive(1, 100, {}, Into(r1));
  REQUIRE(answerer.requests == std::vector<std::string>{"two", "one"});
  answerer.Finish(1, "answer one\n");
  answerer.Finish(0, "answer two\n");
  CHECK(r1.piece == "answer one\n");
  CHECK(r2.piece == "answer two\n");
}

TEST_CASE("control requests: a second receive while the first waits is EBUSY, and a send too") {
  FakeAnswerer answerer;
  auto control = std::make_shared<ControlRequests>(answerer.Fn(), 1 << 20, 4 << 20);
  REQUIRE(control->Send(3, "x") == 0);
  Received first, second;
  control->Receive(3, 100, {}, Into(first));
  control->Receive(3, 100, {}, Into(second));
  REQUIRE(second.called);
  CHECK(second.error == EBUSY);
  CHECK(control->Send(3, "more") == EBUSY);
  CHECK(answerer.requests.size() == 1);
  answerer.Finish(0, "done\n");
  CHECK(first.piece == "done\n");
}

TEST_CASE("control requests: a request over the limit is refused with EFBIG and its bytes go") {
  FakeAnswerer answerer;
  auto control = std::make_shared<ControlRequests>(answerer.Fn(), 10, 100);
  REQUIRE(control->Send(5, "123456") == 0);
  CHECK(control->Send(5, "78901") == EFBIG);
  CHECK(control->pending_bytes() == 0);
  CHECK(control->Send(5, "1") == EFBIG);  // the rest of a refused request is refused too
  Received r;
  control->Receive(5, 100, {}, Into(r));
  CHECK(r.error == EFBIG);
  CHECK(answerer.requests.empty());  // a refused request is never run
  // The handle starts afresh.
  REQUIRE(control->Send(5, "small") == 0);
  Received ok;
  control->Receive(5, 100, {}, Into(ok));
  REQUIRE(answerer.requests.size() == 1);
  CHECK(answerer.requests[0] == "small");
}

TEST_CASE("control requests: all handles together hold at most max_pending bytes (ENOBUFS)") {
  FakeAnswerer answerer;
  auto control = std::make_shared<ControlRequests>(answerer.Fn(), 10, 25);
  REQUIRE(control->Send(1, "0123456789") == 0);
  REQUIRE(control->Send(2, "0123456789") == 0);
  CHECK(control->Send(3, "0123456789") == ENOBUFS);
  CHECK(control->Send(3, "01234") == 0);
  CHECK(control->pending_bytes() == 25);
  control->Forget(1);  // released: its bytes go
  CHECK(control->pending_bytes() == 15);
  CHECK(control->Send(3, "56789") == 0);
  Received r;
  control->Receive(3, 100, {}, Into(r));
  REQUIRE(answerer.requests.size() == 1);
  CHECK(answerer.requests[0] == "0123456789");
  CHECK(control->pending_bytes() == 10);
}

TEST_CASE("control requests: an answer arriving after the handle was released still replies") {
  FakeAnswerer answerer;
  std::weak_ptr<ControlRequests> weak;
  Received r;
  {
    auto control = std::make_shared<ControlRequests>(answerer.Fn(), 1 << 20, 4 << 20);
    weak = control;
    REQUIRE(control->Send(9, "req") == 0);
    control->Receive(9, 4, {}, Into(r));
    control->Forget(9);
  }
  CHECK_FALSE(weak.expired());  // the pending answer keeps the object
  answerer.Finish(0, "late answer\n");
  REQUIRE(r.called);
  CHECK(r.error == 0);
  CHECK(r.piece == "late");
  answerer.pending.clear();
  CHECK(weak.expired());
}

TEST_CASE("control requests: a receive with nothing sent runs an empty request") {
  FakeAnswerer answerer;
  auto control = std::make_shared<ControlRequests>(answerer.Fn(), 1 << 20, 4 << 20);
  Received r;
  control->Receive(4, 100, {}, Into(r));
  REQUIRE(answerer.requests.size() == 1);
  CHECK(answerer.requests[0].empty());
  answerer.Finish(0, "{\"ok\":false}\n");
  CHECK(r.piece == "{\"ok\":false}\n");
}

}  // namespace ossmount::fuse
