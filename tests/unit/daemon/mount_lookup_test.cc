// How `ossmount warmup` finds the mount of a path and names the path to its daemon, from
// mountinfo text: the daemon's own mount, a bind mount of one of its directories (a
// container's volume), and the longest of nested mounts.
#include <catch2/catch.hpp>

#include "warmup_command.h"

namespace ossmount::daemon {

TEST_CASE("mount lookup: the longest ossmount mount point containing the path, with its root") {
  const std::string info =
      "22 1 0:21 / / rw - ext4 /dev/sda1 rw\n"
      "50 22 0:45 / /mnt/oss rw,nosuid - fuse.ossmount ossmount:bucket rw,user_id=0\n"
      "51 22 0:45 /train /data rw,nosuid - fuse.ossmount ossmount:bucket rw,user_id=0\n"
      "52 22 0:46 /a\\040b /space\\040dir rw - fuse.ossmount ossmount:other rw\n"
      "53 22 0:47 / /mnt/sshfs rw - fuse.sshfs host:/ rw\n";

  OssmountMount own = FindOssmountMount("/mnt/oss/train/n01/x.JPEG", info);
  CHECK(own.mountpoint == "/mnt/oss");
  CHECK(own.root == "/");
  CHECK(own.DaemonPath("/mnt/oss/train/n01/x.JPEG") == "train/n01/x.JPEG");
  CHECK(own.DaemonPath("/mnt/oss") == "");

  OssmountMount bind = FindOssmountMount("/data/n01/x.JPEG", info);
  CHECK(bind.mountpoint == "/data");
  CHECK(bind.root == "/train");
  CHECK(bind.DaemonPath("/data/n01/x.JPEG") == "train/n01/x.JPEG");
  CHECK(bind.DaemonPath("/data") == "train");

  OssmountMount spaced = FindOssmountMount("/space dir/c", info);
  CHECK(spaced.mountpoint == "/space dir");
  CHECK(spaced.DaemonPath("/space dir/c") == "a b/c");

  CHECK(FindOssmountMount("/mnt/sshfs/x", info).mountpoint.empty());
  CHECK(FindOssmountMount("/mnt/ossx/y", info).mountpoint.empty());
}

TEST_CASE("mount lookup: of two mounts on one point the later (on top) counts") {
  const std::string info =
      "50 22 0:45 / /mnt/oss rw - fuse.ossmount ossmount:old rw\n"
      "60 50 0:48 /sub /mnt/oss rw - fuse.ossmount ossmount:new rw\n";
  OssmountMount top = FindOssmountMount("/mnt/oss/f", info);
  CHECK(top.root == "/sub");
  CHECK(top.DaemonPath("/mnt/oss/f") == "sub/f");
}

}  // namespace ossmount::daemon
