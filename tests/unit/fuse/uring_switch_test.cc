// The kernel's FUSE io_uring switch, read and turned on, against files standing in for
// /sys/module/fuse/parameters/enable_uring.
#include "fuse/uring_switch.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

using ossmount::fuse::ReadUringSwitch;
using ossmount::fuse::TurnOnUringSwitch;
using ossmount::fuse::UringSwitch;
using ossmount::fuse::UringSwitchProblem;

struct SwitchFile {
  std::string dir;
  std::string path;
  explicit SwitchFile(const char* content) {
    char tmpl[] = "/tmp/ossmount-switch-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    path = dir + "/enable_uring";
    if (content != nullptr) std::ofstream(path) << content;
  }
  ~SwitchFile() {
    unlink(path.c_str());
    rmdir(dir.c_str());
  }
  std::string Content() const {
    std::ifstream in(path);
    std::string s;
    in >> s;
    return s;
  }
};

}  // namespace

TEST_CASE("uring switch: read as the kernel writes it") {
  CHECK(ReadUringSwitch(SwitchFile("Y\n").path) == UringSwitch::kOn);
  CHECK(ReadUringSwitch(SwitchFile("1\n").path) == UringSwitch::kOn);
  CHECK(ReadUringSwitch(SwitchFile("N\n").path) == UringSwitch::kOff);
  CHECK(ReadUringSwitch(SwitchFile("0\n").path) == UringSwitch::kOff);
  CHECK(ReadUringSwitch(SwitchFile(nullptr).path) == UringSwitch::kAbsent);
}

TEST_CASE("uring switch: what the log and the errors say") {
  const std::string path = "/sys/module/fuse/parameters/enable_uring";
  CHECK(UringSwitchProblem(UringSwitch::kOn, path).empty());
  const std::string off = UringSwitchProblem(UringSwitch::kOff, path);
  CHECK_THAT(off, Catch::Contains("echo Y > " + path));
  CHECK_THAT(off, Catch::Contains("--fuse-io-uring on"));
  const std::string absent = UringSwitchProblem(UringSwitch::kAbsent, path);
  CHECK_THAT(absent, Catch::Contains("6.14"));
  CHECK_THAT(absent, Catch::Contains("CONFIG_FUSE_IO_URING"));
}

TEST_CASE("uring switch: turned on when off, left alone when on, an error when absent") {
  SECTION("off") {
    SwitchFile f("N\n");
    REQUIRE(TurnOnUringSwitch(f.path).ok());
    CHECK(f.Content() == "Y");
  }
  SECTION("on") {
    SwitchFile f("Y\n");
    REQUIRE(TurnOnUringSwitch(f.path).ok());
    CHECK(f.Content() == "Y");
  }
  SECTION("absent") {
    SwitchFile f(nullptr);
    auto s = TurnOnUringSwitch(f.path);
    CHECK_FALSE(s.ok());
    CHECK_THAT(s.message(), Catch::Contains("no FUSE io_uring support"));
  }
}
