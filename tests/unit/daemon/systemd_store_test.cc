// systemd's descriptor store without systemd: which passed descriptor is ours, the unit of a
// cgroup, whether a job list shows a restart, and a stored descriptor as a notify socket
// receives it.
#include "systemd_store.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace ossmount::daemon {
namespace {

TEST_CASE("FindPassedDescriptor finds the named descriptor passed to this process",
          "[systemd_store]") {
  // Descriptors start at 3, in LISTEN_FDNAMES's order.
  CHECK(FindPassedDescriptor("42", "1", "ossmount-fuse", 42, "ossmount-fuse") == 3);
  CHECK(FindPassedDescriptor("42", "3", "a:ossmount-fuse:b", 42, "ossmount-fuse") == 4);
  CHECK(FindPassedDescriptor("42", "3", "a:b:ossmount-fuse", 42, "ossmount-fuse") == 5);
  // Passed to another process (a parent that did not clear the variables), or not at all.
  CHECK_FALSE(FindPassedDescriptor("41", "1", "ossmount-fuse", 42, "ossmount-fuse"));
  CHECK_FALSE(FindPassedDescriptor(nullptr, nullptr, nullptr, 42, "ossmount-fuse"));
  CHECK_FALSE(FindPassedDescriptor("42", "1", nullptr, 42, "ossmount-fuse"));
  // A name past LISTEN_FDS, a prefix of ours, or malformed numbers.
  CHECK_FALSE(FindPassedDescriptor("42", "1", "a:ossmount-fuse", 42, "ossmount-fuse"));
  CHECK_FALSE(FindPassedDescriptor("42", "1", "ossmount-fuse-old", 42, "ossmount-fuse"));
  CHECK_FALSE(FindPassedDescriptor("42x", "1", "ossmount-fuse", 42, "ossmount-fuse"));
  CHECK_FALSE(FindPassedDescriptor("42", "-1", "ossmount-fuse", 42, "ossmount-fuse"));
}

TEST_CASE("TakePassedDescriptor takes ours, closes the others and clears the variables",
          "[systemd_store]") {
  // Two descriptors at 3 and 4, as systemd passes them.
  int a[2], b[2];
  REQUIRE(pipe(a) == 0);
  REQUIRE(pipe(b) == 0);
  const int saved3 = dup(3), saved4 = dup(4);  // whatever the test runner has there
  REQUIRE(dup2(a[0], 3) == 3);
  REQUIRE(dup2(b[0], 4) == 4);
  setenv("LISTEN_PID", std::to_string(getpid()).c_str(), 1);
  setenv("LISTEN_FDS", "2", 1);
  setenv("LISTEN_FDNAMES", "stranger:ossmount-fuse", 1);
  std::optional<UniqueFd> fd = TakePassedDescriptor(kStoredFuseName);
  REQUIRE(fd);
  CHECK(fd->get() == 4);
  CHECK(fcntl(3, F_GETFD) == -1);  // the stranger's is closed
  CHECK((fcntl(4, F_GETFD) & FD_CLOEXEC) != 0);
  CHECK(std::getenv("LISTEN_PID") == nullptr);
  CHECK(std::getenv("LISTEN_FDS") == nullptr);
  CHECK(std::getenv("LISTEN_FDNAMES") == nullptr);
  // Ours is the pipe b: what is written to b[1] comes out of it.
  REQUIRE(write(b[1], "x", 1) == 1);
  char c = 0;
  CHECK(read(fd->get(), &c, 1) == 1);
  CHECK(c == 'x');
  fd->reset();
  CHECK_FALSE(TakePassedDescriptor(kStoredFuseName));  // the variables are gone
  for (int f : {a[0], a[1], b[0], b[1]}) close(f);
  if (saved3 >= 0) dup2(saved3, 3), close(saved3);
  if (saved4 >= 0) dup2(saved4, 4), close(saved4);
}

TEST_CASE("UnitOfCgroup names the service a process runs in", "[systemd_store]") {
  CHECK(UnitOfCgroup("0::/system.slice/system-ossmount.slice/ossmount@data.service\n") ==
        "ossmount@data.service");
  // A hybrid layout: the name=systemd hierarchy, controllers ignored.
  CHECK(UnitOfCgroup("12:pids:/system.slice/other.service\n"
                     "1:name=systemd:/system.slice/system-ossmount.slice/ossmount@x.service\n"
                     "0::/system.slice/system-ossmount.slice/ossmount@x.service\n") ==
        "ossmount@x.service");
  // A sub-cgroup the service made under itself.
  CHECK(UnitOfCgroup("0::/system.slice/ossmount@x.service/daemon\n") == "ossmount@x.service");
  CHECK(UnitOfCgroup("0::/user.slice/user-0.slice/session-3.scope\n").empty());
  CHECK(UnitOfCgroup("0::/\n").empty());
  CHECK(UnitOfCgroup("").empty());
}

TEST_CASE("ListsRestartOf finds a restart job of the unit", "[systemd_store]") {
  const std::string restart = "1234 ossmount@data.service restart running\n";
  CHECK(ListsRestartOf(restart, "ossmount@data.service"));
  CHECK(
      ListsRestartOf("77 other.service start waiting\n"
                     "78 ossmount@data.service try-restart running\n",
                     "ossmount@data.service"));
  CHECK_FALSE(ListsRestartOf("1234 ossmount@data.service stop running\n", "ossmount@data.service"));
  CHECK_FALSE(ListsRestartOf(restart, "ossmount@other.service"));
  CHECK_FALSE(ListsRestartOf("", "ossmount@data.service"));
  CHECK_FALSE(ListsRestartOf("No jobs running.\n", "ossmount@data.service"));
}

TEST_CASE("StoreDescriptor sends FDSTORE with the descriptor attached", "[systemd_store]") {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("notify-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/notify";
  UniqueFd sock(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  REQUIRE(bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);

  const std::string file = dir + "/stored";
  UniqueFd stored(open(file.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
  REQUIRE(stored);
  setenv("NOTIFY_SOCKET", path.c_str(), 1);
  REQUIRE(StoreDescriptor(stored.get(), kStoredFuseName).ok());
  REQUIRE(RemoveStoredDescriptor(kStoredFuseName).ok());
  unsetenv("NOTIFY_SOCKET");

  char buf[256];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  iovec iov{buf, sizeof buf};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = recvmsg(sock.get(), &msg, 0);
  REQUIRE(n > 0);
  CHECK(std::string(buf, static_cast<size_t>(n)) == "FDSTORE=1\nFDNAME=ossmount-fuse");
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  REQUIRE(cmsg != nullptr);
  REQUIRE(cmsg->cmsg_type == SCM_RIGHTS);
  int received = -1;
  std::memcpy(&received, CMSG_DATA(cmsg), sizeof received);
  UniqueFd got(received);
  struct stat a {
  }, b{};
  REQUIRE(fstat(got.get(), &a) == 0);
  REQUIRE(fstat(stored.get(), &b) == 0);
  CHECK(a.st_ino == b.st_ino);  // the same file
  CHECK(a.st_dev == b.st_dev);

  msg.msg_controllen = sizeof control;
  n = recvmsg(sock.get(), &msg, 0);
  REQUIRE(n > 0);
  CHECK(std::string(buf, static_cast<size_t>(n)) == "FDSTOREREMOVE=1\nFDNAME=ossmount-fuse");
  CHECK(msg.msg_controllen == 0);  // nothing attached
  std::filesystem::remove_all(dir);
}

TEST_CASE("Outside systemd nothing is stored and no restart is seen", "[systemd_store]") {
  unsetenv("NOTIFY_SOCKET");
  CHECK(StoreDescriptor(0, kStoredFuseName).ok());
  std::string why;
  // This test runs in no service with a restart job (CI runs it from a shell or a container).
  CHECK_FALSE(SystemdRestartsThisUnit(&why));
  CHECK_FALSE(why.empty());
}

}  // namespace
}  // namespace ossmount::daemon
