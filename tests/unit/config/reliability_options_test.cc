// The reliability options (--retry-budget, --stall-timeout) and the dead-mount detection
// (mountinfo parsing, what counts as ours, the "not a dead mount" path).
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "config/mount_config.h"
#include "config/mountpoint_check.h"
#include "unit/config/base_args.h"

using namespace ossmount;
using namespace ossmount::config;
using namespace std::chrono_literals;

using ossmount::config::testing::With;

TEST_CASE("Options retry-budget and stall-timeout land in the client options") {
  auto defaults = ParseCommandLine(With({}));
  REQUIRE(defaults.ok());
  CHECK(defaults->config.client.retry.total_budget == 120s);
  CHECK(defaults->config.client.timeouts.low_speed_time == 15s);

  auto set = ParseCommandLine(With({"--retry-budget", "3s", "--stall-timeout", "2s"}));
  REQUIRE(set.ok());
  CHECK(set->config.client.retry.total_budget == 3s);
  CHECK(set->config.client.timeouts.low_speed_time == 2s);

  auto fstab = ParseCommandLine(With({"-o", "retry_budget=500ms,stall_timeout=1m"}));
  REQUIRE(fstab.ok());
  CHECK(fstab->config.client.retry.total_budget == 500ms);
  CHECK(fstab->config.client.timeouts.low_speed_time == 60s);
}

TEST_CASE("Options retry-budget and stall-timeout: errors name the option") {
  struct Case {
    std::vector<std::string> args;
    const char* needle;
  } cases[] = {
      {{"--retry-budget", "0"}, "--retry-budget: must be more than 0"},
      {{"--retry-budget", "soon"}, "--retry-budget"},
      {{"--stall-timeout", "500ms"}, "--stall-timeout: give whole seconds"},
      {{"--stall-timeout", "1500ms"}, "--stall-timeout: give whole seconds"},
      {{"--stall-timeout", "0"}, "--stall-timeout"},
      {{"--stall-timeout", "x"}, "--stall-timeout"},
  };
  for (const auto& c : cases) {
    INFO(c.args[0] << " " << c.args[1]);
    auto r = ParseCommandLine(With(c.args));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find(c.needle) != std::string::npos);
  }
}

TEST_CASE("FindMountEntry reads mountinfo: escapes, optional fields, the top mount wins") {
  const std::string info =
      "22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw\n"
      "90 29 0:45 / /tmp/a\\040b rw,nosuid,nodev,relatime shared:50 master:3 - fuse.ossmount "
      "ossmount:bkt ro,user_id=1000\n"
      "91 29 0:46 / /tmp/other rw - fuse.sshfs host:/x rw\n"
      "92 90 0:47 / /tmp/a\\040b ro - tmpfs tmpfs rw\n"
      "garbage line\n";
  auto a = FindMountEntry(info, "/tmp/a b");
  REQUIRE(a.has_value());
  CHECK(a->fstype == "tmpfs");  // mounted on top of the FUSE one
  auto only_fuse = FindMountEntry(info.substr(0, info.find("92 90")), "/tmp/a b");
  REQUIRE(only_fuse.has_value());
  CHECK(only_fuse->fstype == "fuse.ossmount");
  CHECK(only_fuse->source == "ossmount:bkt");
  CHECK(IsOssmountEntry(*only_fuse));
  auto sshfs = FindMountEntry(info, "/tmp/other");
  REQUIRE(sshfs.has_value());
  CHECK_FALSE(IsOssmountEntry(*sshfs));
  CHECK_FALSE(FindMountEntry(info, "/tmp").has_value());
  CHECK_FALSE(FindMountEntry(info, "/tmp/a").has_value());
  CHECK(IsOssmountEntry(MountEntry{"/m", "fuse", "ossmount:b"}));  // older fuse, no subtype
}

TEST_CASE("RecoverDeadMount leaves a live directory alone") {
  auto dir = std::filesystem::temp_directory_path() / "ossmount-recover-test";
  std::filesystem::create_directories(dir);
  auto r = RecoverDeadMount(dir.string(), "/nonexistent-mountinfo");
  REQUIRE(r.ok());
  CHECK(r->empty());
  std::filesystem::remove(dir);
}

TEST_CASE("/dev/fd/N names a passed /dev/fuse descriptor, and anything else is refused") {
  CHECK(FuseFdMountPoint("/dev/fd/3") == std::optional<int>(3));
  CHECK(FuseFdMountPoint("/dev/fd/17") == std::optional<int>(17));
  CHECK_FALSE(FuseFdMountPoint("/dev/fd/"));
  CHECK_FALSE(FuseFdMountPoint("/dev/fd/3a"));
  CHECK_FALSE(FuseFdMountPoint("/mnt/dev/fd/3"));
  CHECK_FALSE(FuseFdMountPoint("/dev/fd/99999999999"));
  // An open file that is not /dev/fuse, and a descriptor that is not open.
  const int null_fd = open("/dev/null", O_RDONLY);
  REQUIRE(null_fd >= 0);
  Status not_fuse = CheckFuseFd(null_fd);
  close(null_fd);
  CHECK(not_fuse.code() == ErrorCode::kInvalidArgument);
  CHECK_THAT(not_fuse.message(), Catch::Contains("is not an open /dev/fuse"));
  CHECK(CheckFuseFd(null_fd).code() == ErrorCode::kInvalidArgument);  // closed now
  const int fuse_fd = open("/dev/fuse", O_RDWR);
  if (fuse_fd < 0) {
    WARN("no /dev/fuse here: the check of an open /dev/fuse descriptor is skipped");
  } else {
    CHECK(CheckFuseFd(fuse_fd).ok());
    close(fuse_fd);
  }
}
