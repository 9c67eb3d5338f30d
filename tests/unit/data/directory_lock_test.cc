// LockDirectory and FlockHolder against real directories and /proc/locks samples.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/read_file.h"
#include "common/unique_fd.h"
#include "data/directory_lock.h"
#include "support/temp_dir.h"

namespace {

using ossmount::UniqueFd;
using ossmount::data::FlockHolder;
using ossmount::data::LockDirectory;
using ossmount::testing::TempDir;

UniqueFd OpenDir(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(fd);
  return fd;
}

}  // namespace

TEST_CASE("FlockHolder finds the holder of a flock on an inode in /proc/locks text") {
  const dev_t dev = makedev(0xfe, 1);
  const std::string text =
      "1: POSIX  ADVISORY  WRITE 111 fe:01:500 0 EOF\n"     // a POSIX lock, same inode
      "2: FLOCK  ADVISORY  WRITE 222 fe:01:501 0 EOF\n"     // another inode
      "3: FLOCK  ADVISORY  WRITE 333 fe:02:500 0 EOF\n"     // another device
      "3: -> FLOCK  ADVISORY  WRITE 444 fe:01:500 0 EOF\n"  // a waiter, not the holder
      "4: FLOCK  ADVISORY  WRITE 555 fe:01:500 0 EOF\n";    // the holder
  CHECK(FlockHolder(text, dev, 500) == 555);
  CHECK(FlockHolder(text, dev, 502) == std::nullopt);
  CHECK(FlockHolder("", dev, 500) == std::nullopt);
  CHECK(FlockHolder("4: FLOCK ADVISORY WRITE -1 fe:01:500 0 EOF\n", dev, 500) == std::nullopt);
  CHECK(FlockHolder("garbage\n\n5: FLOCK\n", dev, 500) == std::nullopt);
}

TEST_CASE("LockDirectory: one holder at a time, named in the refusal, free once closed") {
  TempDir tmp;
  const std::string dir = tmp.path();
  auto first = OpenDir(dir);
  REQUIRE(LockDirectory(first.get(), dir, std::chrono::milliseconds(0)).ok());

  auto second = OpenDir(dir);  // another open file description, as another process has
  std::vector<std::string> notes;
  ossmount::Status refused =
      LockDirectory(second.get(), dir, std::chrono::milliseconds(250),
                    [&notes](const std::string& note) { notes.push_back(note); });
  // The wait was announced once, with the holder, before the refusal.
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("'" + dir + "' is in use by pid " + std::to_string(::getpid()) +
                      ", data_test") != std::string::npos);
  CHECK(notes[0].find("waiting up to 250 ms") != std::string::npos);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.code() == ossmount::ErrorCode::kInvalidArgument);
  const std::string pid = std::to_string(::getpid());
  CHECK(refused.message().find("'" + dir + "' is in use by pid " + pid) != std::string::npos);
  CHECK(refused.message().find("was not released within 250 ms") != std::string::npos);

  // The holder as /proc/locks lists it is this process.
  struct stat st;
  REQUIRE(::fstat(first.get(), &st) == 0);
  CHECK(FlockHolder(ossmount::ReadFileOrEmpty("/proc/locks"), st.st_dev, st.st_ino) == ::getpid());

  first.reset();  // closing the last descriptor of the description drops the lock
  CHECK(LockDirectory(second.get(), dir, std::chrono::milliseconds(0)).ok());
}
