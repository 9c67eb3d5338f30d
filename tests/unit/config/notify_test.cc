// notify_test: the sd_notify datagram protocol (daemon/notify.cc) against sockets the test
// owns, path and abstract; when and what ossmount sends is tested with a real mount in
// tests/mount/test_systemd.py.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "notify.h"

using ossmount::daemon::NotifySocket;
using ossmount::daemon::NotifySystemd;

namespace {

// A datagram socket bound to `name` (a path, or '@' + abstract name).
struct Listener {
  int fd = -1;
  explicit Listener(const std::string& name) {
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, name.data(), name.size());
    if (name[0] == '@') addr.sun_path[0] = '\0';
    socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0);
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Listener() { close(fd); }
  std::string Receive() {
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    return n < 0 ? std::string("<nothing>") : std::string(buf, static_cast<size_t>(n));
  }
};

}  // namespace

TEST_CASE("NotifySocket sends one datagram to a socket path") {
  std::string dir =
      (std::filesystem::temp_directory_path() / ("ossmount-notify-" + std::to_string(getpid())))
          .string();
  std::filesystem::create_directories(dir);
  std::string path = dir + "/notify.sock";
  {
    Listener l(path);
    REQUIRE(NotifySocket(path, "READY=1\nSTATUS=x").ok());
    CHECK(l.Receive() == "READY=1\nSTATUS=x");
    REQUIRE(NotifySocket(path, "STOPPING=1").ok());
    CHECK(l.Receive() == "STOPPING=1");
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("NotifySocket reaches an abstract socket named with @") {
  std::string name = "@ossmount-notify-test-" + std::to_string(getpid());
  Listener l(name);
  REQUIRE(NotifySocket(name, "READY=1").ok());
  CHECK(l.Receive() == "READY=1");
}

TEST_CASE("NotifySystemd uses NOTIFY_SOCKET and does nothing without it") {
  std::string name = "@ossmount-notify-env-" + std::to_string(getpid());
  Listener l(name);
  setenv("NOTIFY_SOCKET", name.c_str(), 1);
  REQUIRE(NotifySystemd("STOPPING=1").ok());
  CHECK(l.Receive() == "STOPPING=1");
  unsetenv("NOTIFY_SOCKET");
  CHECK(NotifySystemd("READY=1").ok());
}

TEST_CASE("NotifySocket reports a bad or absent socket") {
  CHECK(NotifySocket("", "READY=1").ok());  // nothing to do
  auto st = NotifySocket("relative/path", "READY=1");
  REQUIRE_FALSE(st.ok());
  CHECK(st.message().find("relative/path") != std::string::npos);
  st = NotifySocket("/nonexistent-dir-ossmount/notify", "READY=1");
  REQUIRE_FALSE(st.ok());
  CHECK(st.message().find("/nonexistent-dir-ossmount/notify") != std::string::npos);
}
