#include "common/write_all.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

namespace ossmount {

TEST_CASE("WriteAll writes every byte of a buffer 256 times the pipe's capacity", "[write_all]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  REQUIRE(::fcntl(fds[1], F_SETPIPE_SZ, 4096) > 0);
  std::string data(1 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + i / 4096);
  std::string got;
  std::thread reader([&] {
    char buf[1000];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
  });
  bool ok = WriteAll(fds[1], data);
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  CHECK(ok);
  CHECK(got == data);
}

TEST_CASE("WriteAll reports a failed write with its errno", "[write_all]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  ::close(fds[0]);  // no reader: the write fails with EPIPE (SIGPIPE ignored here)
  auto old = std::signal(SIGPIPE, SIG_IGN);
  errno = 0;
  CHECK_FALSE(WriteAll(fds[1], "abc"));
  CHECK(errno == EPIPE);
  std::signal(SIGPIPE, old);
  ::close(fds[1]);

  errno = 0;
  CHECK_FALSE(WriteAll(-1, "abc"));
  CHECK(errno == EBADF);
  CHECK(WriteAll(-1, ""));  // nothing to write: nothing fails
}

}  // namespace ossmount
