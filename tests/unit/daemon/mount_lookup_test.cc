// How `ossmount warmup` finds the mount of a path and names the path in its request, from
// mountinfo text: the daemon's own mount, a bind mount of one of its directories (a
// container's volume), and the longest of nested mounts.
#include <catch2/catch.hpp>

#include "warmup_command.h"

namespace ossmount::daemon {

TEST_CASE("mount lookup: the longest ossmount mount point containing the path") {
  const std::string info =
      "22 1 0:21 / / rw - ext4 /dev/sda1 rw\n"
      "50 22 0:45 / /mnt/oss rw,nosuid - fuse.ossmount ossmount:bucket rw,user_id=0\n"
      "51 22 0:45 /train /data rw,nosuid - fuse.ossmount ossmount:bucket rw,user_id=0\n"
      "52 50 0:46 / /mnt/oss/inner\\040dir rw - fuse.ossmount ossmount:other rw\n"
      "53 22 0:47 / /mnt/sshfs rw - fuse.sshfs host:/ rw\n";
  CHECK(FindOssmountMount("/mnt/oss/train/n01/x.JPEG", info) == "/mnt/oss");
  CHECK(FindOssmountMount("/mnt/oss", info) == "/mnt/oss");
  CHECK(FindOssmountMount("/data/n01/x.JPEG", info) == "/data");  // a bind mount counts
  CHECK(FindOssmountMount("/mnt/oss/inner dir/c", info) == "/mnt/oss/inner dir");
  CHECK(FindOssmountMount("/mnt/sshfs/x", info).empty());
  CHECK(FindOssmountMount("/mnt/ossx/y", info).empty());
}

TEST_CASE("mount lookup: a request names paths relative to the mount point it goes through") {
  CHECK(RelativeToMount("/mnt/oss/train/n01/x.JPEG", "/mnt/oss") == "train/n01/x.JPEG");
  CHECK(RelativeToMount("/data/n01/x.JPEG", "/data") == "n01/x.JPEG");
  CHECK(RelativeToMount("/data", "/data") == "");
  CHECK(RelativeToMount("/train/x", "/") == "train/x");
}

}  // namespace ossmount::daemon
