// CommandTable: who may run which command, and Answer's framing. The socket's protocol is
// control_server_test.cc's; the ioctl channel is fuse_test's and mount:control's.
#include "control/command_table.h"

#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <future>
#include <string>
#include <thread>

namespace ossmount::control {
namespace {

using Catch::Matchers::Contains;

constexpr unsigned kOwner = 1000;

Result<std::string> Empty(const rapidjson::Document&) { return std::string("{}"); }

}  // namespace

TEST_CASE("command table: owner-only commands refuse other users, naming the owner") {
  boost::asio::io_context io;
  CommandTable table(io, kOwner);
  table.Register("cancel", Empty);  // Access::kOwner by default
  table.Register("status", Empty, Access::kAnyUser);

  CHECK(table.Dispatch(R"({"command":"cancel"})", Peer{10, kOwner, ""}) == R"({"ok":true})");
  CHECK(table.Dispatch(R"({"command":"cancel"})", Peer{10, 0, ""}) == R"({"ok":true})");  // root
  const std::string refused = table.Dispatch(R"({"command":"cancel"})", Peer{10, 65534, ""});
  CHECK_THAT(refused, Contains(R"("ok":false)"));
  CHECK_THAT(refused, Contains("command 'cancel' is for the mount's owner (uid 1000) and root "
                               "only; this request came from uid 65534"));

  CHECK(table.Dispatch(R"({"command":"status"})", Peer{10, 65534, ""}) == R"({"ok":true})");
}

TEST_CASE("command table: a handler registered with the peer sees the caller the channel gave") {
  boost::asio::io_context io;
  CommandTable table(io, kOwner);
  table.RegisterWithPeer(
      "who",
      [](const rapidjson::Document&, const Peer& peer) -> Result<std::string> {
        return R"({"pid":)" + std::to_string(peer.pid) + R"(,"uid":)" + std::to_string(peer.uid) +
               "}";
      },
      Access::kAnyUser);
  CHECK(table.Dispatch("{\"command\":\"who\"}\n", Peer{4321, 7, ""}) ==
        R"({"ok":true,"pid":4321,"uid":7})");
}

TEST_CASE("command table: Answer runs on the io_context and ends the answer with a newline") {
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::thread runner([&io] { io.run(); });
  CommandTable table(io, kOwner);
  std::thread::id handler_thread;
  table.Register("where", [&handler_thread](const rapidjson::Document&) -> Result<std::string> {
    handler_thread = std::this_thread::get_id();
    return std::string(R"({"here":1})");
  });
  std::promise<std::string> answered;
  table.Answer("{\"command\":\"where\"}\n", Peer{1, kOwner, ""},
               [&answered](std::string answer) { answered.set_value(std::move(answer)); });
  auto future = answered.get_future();
  REQUIRE(future.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  CHECK(future.get() == "{\"ok\":true,\"here\":1}\n");
  CHECK(handler_thread == runner.get_id());

  std::promise<std::string> refused;
  table.Answer("not json", Peer{1, kOwner, ""},
               [&refused](std::string answer) { refused.set_value(std::move(answer)); });
  auto refused_future = refused.get_future();
  REQUIRE(refused_future.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  CHECK(refused_future.get() ==
        "{\"ok\":false,\"error\":\"the request is not a JSON object: not valid JSON at offset "
        "1: Invalid value.\"}\n");
  work.reset();
  runner.join();
}

TEST_CASE("command table: a thread's id is taken back to its process") {
  CHECK(ProcessOfThread(getpid()) == getpid());
  int seen = -1;
  std::thread other([&seen] { seen = ProcessOfThread(static_cast<int>(gettid())); });
  other.join();
  CHECK(seen == getpid());
  CHECK(ProcessOfThread(0) == 0);              // not visible from the daemon's namespace
  CHECK(ProcessOfThread(1 << 30) == 1 << 30);  // no such thread: as given
}

TEST_CASE("command table: a deeply nested request is refused by depth and the table serves on") {
  boost::asio::io_context io;
  CommandTable table(io, kOwner);
  table.Register("status", Empty, Access::kAnyUser);
  const Peer stranger{10, 65534, ""};  // any user of an allow_other mount

  // A million '[' (1 MB): the recursive parser overflowed the stack on this.
  const std::string deep = std::string(1'000'000, '[');
  CHECK(table.Dispatch(deep, stranger) ==
        "{\"ok\":false,\"error\":\"the request is not a JSON object: nested deeper than 32 "
        "levels at offset 32\"}");
  // Deep inside an otherwise valid request, closed, newline-terminated.
  const std::string nested =
      R"({"command":"status","x":)" + std::string(40, '[') + std::string(40, ']') + "}\n";
  CHECK_THAT(table.Dispatch(nested, stranger), Contains("nested deeper than 32 levels"));
  CHECK(table.Dispatch(R"({"command":"status"})", stranger) == R"({"ok":true})");

  // The size limit is the channels' own (kMaxRequestBytes).
  const std::string huge =
      R"({"command":"status","pad":")" + std::string(kMaxRequestBytes, 'x') + R"("})";
  CHECK_THAT(table.Dispatch(huge, stranger),
             Contains("bytes, over the " + std::to_string(kMaxRequestBytes) + "-byte limit"));
  CHECK(table.Dispatch("{\"command\":\"status\"}\n", stranger) == R"({"ok":true})");
}

TEST_CASE("command table: a request of more values than kMaxRequestValues is refused") {
  boost::asio::io_context io;
  CommandTable table(io, kOwner);
  table.Register("status", Empty, Access::kAnyUser);
  const Peer stranger{10, 65534, ""};
  // "[0,0,...]" within the size limit: 16 bytes of Document a value, 8 times the text.
  std::string many = R"({"command":"status","x":[)";
  for (std::size_t i = 0; i <= kMaxRequestValues; ++i) many += i ? ",0" : "0";
  many += "]}";
  REQUIRE(many.size() < kMaxRequestBytes);
  CHECK_THAT(table.Dispatch(many, stranger),
             Contains("more than " + std::to_string(kMaxRequestValues) + " values at offset"));
  CHECK(table.Dispatch(R"({"command":"status"})", stranger) == R"({"ok":true})");
}

}  // namespace ossmount::control
