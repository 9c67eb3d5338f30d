// The control socket: the protocol, stale sockets, permissions, and the client's errors.
#include <rapidjson/document.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "control/control_server.h"

namespace ossmount::control {
namespace {

using Catch::Matchers::Contains;
using namespace std::chrono_literals;

// An io_context run by one thread for the test's lifetime, and a private directory.
struct Fixture {
  Fixture() : work(io.get_executor()), commands(std::make_shared<CommandTable>(io, geteuid())) {
    char tmpl[] = "/tmp/ossmount-control-test-XXXXXX";
    dir = mkdtemp(tmpl);
    thread = std::thread([this] { io.run(); });
  }
  ~Fixture() {
    work.reset();
    io.stop();
    thread.join();
    std::filesystem::remove_all(dir);
  }
  std::string Socket() const { return dir + "/sock/m.sock"; }

  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work;
  std::shared_ptr<CommandTable> commands;
  std::string dir;
  std::thread thread;
};

rapidjson::Document ParseReply(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  REQUIRE(doc.IsObject());
  return doc;
}

TEST_CASE("control: a registered command answers with ok and its fields") {
  Fixture f;
  auto server = ControlServer::Start(f.io, f.Socket(), f.commands);
  REQUIRE(server.ok());
  f.commands->Register("echo", [](const rapidjson::Document& req) -> Result<std::string> {
    return std::string(R"({"value":)") + std::to_string(req["n"].GetInt() * 2) + "}";
  });
  auto reply = Call(f.Socket(), R"({"command":"echo","n":21})", 5s);
  REQUIRE(reply.ok());
  auto doc = ParseReply(*reply);
  CHECK(doc["ok"].GetBool());
  CHECK(doc["value"].GetInt() == 42);
}

TEST_CASE("control: a command registered with the peer learns the client's pid and uid") {
  Fixture f;
  auto server = ControlServer::Start(f.io, f.Socket(), f.commands);
  REQUIRE(server.ok());
  f.commands->RegisterWithPeer(
      "who", [](const rapidjson::Document&, const Peer& peer) -> Result<std::string> {
        return R"({"pid":)" + std::to_string(peer.pid) + R"(,"uid":)" + std::to_string(peer.uid) +
               "}";
      });
  auto reply = Call(f.Socket(), R"({"command":"who"})", 5s);
  REQUIRE(reply.ok());
  auto doc = ParseReply(*reply);
  CHECK(doc["pid"].GetInt() == static_cast<int>(getpid()));  // from the kernel, not the client
  CHECK(doc["uid"].GetUint() == geteuid());
}

TEST_CASE("control: an empty result object gives just ok") {
  Fixture f;
  auto server = ControlServer::Start(f.io, f.Socket(), f.commands);
  REQUIRE(server.ok());
  f.commands->Register(
      "nop", [](const rapidjson::Document&) -> Result<std::string> { return std::string("{}"); });
  auto reply = Call(f.Socket(), R"({"command":"nop"})", 5s);
  REQUIRE(reply.ok());
  CHECK(*reply == R"({"ok":true})");
}

TEST_CASE("control: a handler error becomes ok false with its message") {
  Fixture f;
  auto server = ControlServer::Start(f.io, f.Socket(), f.commands);
  REQUIRE(server.ok());
  f.commands->Register("fail", [](const rapidjson::Document&) -> Result<std::string> {
    return Status(ErrorCode::kInvalidArgument, "bad \"path\" given");
  });
  auto reply = Call(f.Socket(), R"({"command":"fail"})", 5s);
  REQUIRE(reply.ok());
  auto doc = ParseReply(*reply);
  CHECK_FALSE(doc["ok"].GetBool());
  CHECK(std::string(doc["error"].GetString()) == "bad \"path\" given");
}

TEST_CASE("control: unknown commands, bad JSON and a missing command are refused") {
  Fixture f;
  auto server = ControlServer::Start(f.io, f.Socket(), f.commands);
  REQUIRE(server.ok());
  f.commands->Register(
      "stats", [](const rapidjson::Document&) -> Result<std::string> { return std::string("{}"); });
  auto unknown = ParseReply(*Call(f.Socket(), R"({"command":"nosuch"})", 5s));
  CHECK_FALSE(unknown["ok"].GetBool());
  CHECK_THAT(unknown["error"].GetString(), Contains("unknown command 'nosuch'"));
  CHECK_THAT(unknown["error"].GetString(), Contains("stats"));

  auto bad = ParseReply(*Call(f.Socket(), "not json", 5s));
  CHECK_FALSE(bad["ok"].GetBool());
  CHECK_THAT(bad["error"].GetString(), Contains("not a JSON object"));

  auto missing = ParseReply(*Call(f.Socket(), R"({"cmd":"stats"})", 5s));
  CHECK_FALSE(missing["ok"].GetBool());
  CHECK_THAT(missing["error"].GetString(), Contains("command"));
}

TEST_CASE("control: a malformed handler result is reported, not sent") {
  Fixture f;
  auto server = ControlServer::Start(f.io, f.Socket(), f.commands);
  REQUIRE(server.ok());
  f.commands->Register("broken", [](const rapidjson::Document&) -> Result<std::string> {
    return std::string("[1,2]");
  });
  auto doc = ParseReply(*Call(f.Socket(), R"({"command":"broken"})", 5s));
  CHECK_FALSE(doc["ok"].GetBool());
  CHECK_THAT(doc["error"].GetString(), Contains("malformed"));
}

TEST_CASE("control: a large request within the limit is accepted") {
  Fixture f;
  auto server = ControlServer::Start(f.io, f.Socket(), f.commands);
  REQUIRE(server.ok());
  f.commands->Register("count", [](const rapidjson::Document& req) -> Result<std::string> {
    return std::string(R"({"paths":)") + std::to_string(req["paths"].Size()) + "}";
  });
  std::string request = R"({"command":"count","paths":[)";
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    if (i) request += ",";
    request += "\"train/class/image_" + std::to_string(i) + ".jpg\"";
  }
  request += "]}";
  REQUIRE(request.size() > (4u << 20));
  auto doc = ParseReply(*Call(f.Socket(), request, 30s));
  REQUIRE(doc["ok"].GetBool());
  CHECK(doc["paths"].GetInt() == n);
}

TEST_CASE("control: a request over 64 MiB is refused") {
  Fixture f;
  auto server = ControlServer::Start(f.io, f.Socket(), f.commands);
  REQUIRE(server.ok());
  std::string request(kMaxRequestBytes + 16, 'x');
  auto reply = Call(f.Socket(), request, 60s);
  // The server answers before reading everything and closes; the client then sees either
  // the refusal or a reset while sending. Both must say it did not go through.
  if (reply.ok()) {
    auto doc = ParseReply(*reply);
    CHECK_FALSE(doc["ok"].GetBool());
    CHECK_THAT(doc["error"].GetString(), Contains("64 MiB"));
  } else {
    CHECK_THAT(reply.status().message(), Contains("failed"));
  }
}

TEST_CASE("control: the socket and its directory are private") {
  Fixture f;
  auto server = ControlServer::Start(f.io, f.Socket(), f.commands);
  REQUIRE(server.ok());
  struct stat st {};
  REQUIRE(stat(f.Socket().c_str(), &st) == 0);
  CHECK(S_ISSOCK(st.st_mode));
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(stat((f.dir + "/sock").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
}

TEST_CASE("control: destroying the server unlinks the socket and calls then fail plainly") {
  Fixture f;
  {
    auto server = ControlServer::Start(f.io, f.Socket(), f.commands);
    REQUIRE(server.ok());
    REQUIRE(std::filesystem::exists(f.Socket()));
  }
  CHECK_FALSE(std::filesystem::exists(f.Socket()));
  auto reply = Call(f.Socket(), R"({"command":"stats"})", 5s);
  REQUIRE_FALSE(reply.ok());
  CHECK_THAT(reply.status().message(), Contains("no ossmount daemon answers"));
  CHECK_THAT(reply.status().message(), Contains(f.Socket()));
}

TEST_CASE("control: a stale socket of a dead daemon is replaced") {
  Fixture f;
  std::filesystem::create_directory(f.dir + "/sock");
  // A bound socket with nobody listening any more: what a killed daemon leaves.
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", f.Socket().c_str());
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  close(fd);
  REQUIRE(std::filesystem::exists(f.Socket()));
  auto stale = Call(f.Socket(), R"({"command":"x"})", 5s);
  CHECK_FALSE(stale.ok());

  auto server = ControlServer::Start(f.io, f.Socket(), f.commands);
  REQUIRE(server.ok());
  f.commands->Register(
      "x", [](const rapidjson::Document&) -> Result<std::string> { return std::string("{}"); });
  CHECK(Call(f.Socket(), R"({"command":"x"})", 5s).ok());
}

TEST_CASE("control: a second server on a live socket is refused") {
  Fixture f;
  auto first = ControlServer::Start(f.io, f.Socket(), f.commands);
  REQUIRE(first.ok());
  auto second = ControlServer::Start(f.io, f.Socket(), f.commands);
  REQUIRE_FALSE(second.ok());
  CHECK_THAT(second.status().message(), Contains("already answers"));
}

TEST_CASE("control: a path that is not a socket is left alone") {
  Fixture f;
  std::filesystem::create_directory(f.dir + "/sock");
  {
    FILE* file = std::fopen(f.Socket().c_str(), "w");
    std::fclose(file);
  }
  auto server = ControlServer::Start(f.io, f.Socket(), f.commands);
  REQUIRE_FALSE(server.ok());
  CHECK_THAT(server.status().message(), Contains("not a socket"));
  CHECK(std::filesystem::is_regular_file(f.Socket()));
}

TEST_CASE("control: a client that sends nothing does not block others") {
  Fixture f;
  auto server = ControlServer::Start(f.io, f.Socket(), f.commands);
  REQUIRE(server.ok());
  f.commands->Register("x", [](const rapidjson::Document&) -> Result<std::string> {
    return std::string(R"({"y":1})");
  });
  int idle = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", f.Socket().c_str());
  REQUIRE(connect(idle, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  CHECK(Call(f.Socket(), R"({"command":"x"})", 5s).ok());
  close(idle);
}

TEST_CASE("control: socket paths are per mount point, private and short enough") {
  std::string a = SocketPathForMountpoint("/mnt/dataset");
  std::string b = SocketPathForMountpoint("/mnt/dataset2");
  std::string c = SocketPathForMountpoint("/mnt/data set");
  CHECK(a != b);
  CHECK(a != c);
  CHECK(a == SocketPathForMountpoint("/mnt/dataset"));
  CHECK(a == SocketPathForMountpoint("/mnt/./x/../dataset/"));
  CHECK_THAT(a, Contains("mnt-dataset-"));
  CHECK(a.rfind(SocketDirectory() + "/", 0) == 0);
  std::string long_mountpoint = "/" + std::string(300, 'x');
  CHECK(SocketPathForMountpoint(long_mountpoint).size() < sizeof(sockaddr_un{}.sun_path));
  if (geteuid() == 0) CHECK(SocketDirectory() == "/run/ossmount");
}

TEST_CASE("control: OkReply merges fields and ErrorReply escapes") {
  CHECK(*OkReply(R"({"a":1,"b":"x"})") == R"({"ok":true,"a":1,"b":"x"})");
  CHECK(*OkReply(" { } ") == R"({"ok":true})");
  CHECK_FALSE(OkReply("nope").ok());
  CHECK_FALSE(OkReply(R"({"ok":false})").ok());
  CHECK(ErrorReply("a\"b\n") == R"({"ok":false,"error":"a\"b\n"})");
}

}  // namespace
}  // namespace ossmount::control
