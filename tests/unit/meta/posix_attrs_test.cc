// PosixAttrs: the mode, owner and time ossfs and s3fs keep in user metadata, read and written.
#include "meta/posix_attrs.h"

#include <sys/stat.h>
#include <catch2/catch.hpp>

using namespace ossmount;
using namespace ossmount::meta;

TEST_CASE("PosixFromMetadata reads ossfs's and s3fs's names, and skips what does not parse") {
  const UserMetadata meta = {{"mode", "33261"},
                             {"uid", "1000"},
                             {"gid", "100"},
                             {"mtime", "1700000000.123456789"},
                             {"owner-team", "vision"}};
  const PosixAttrs a = PosixFromMetadata(meta);
  CHECK(a.mode == (S_IFREG | 0755));
  CHECK(a.uid == 1000u);
  CHECK(a.gid == 100u);
  CHECK(a.mtime_sec == 1700000000);
  const PosixAttrs bad = PosixFromMetadata({{"mode", "rwx"}, {"uid", "-1"}, {"mtime", ""}});
  CHECK_FALSE(bad.mode);
  CHECK_FALSE(bad.uid);
  CHECK_FALSE(bad.mtime_sec);
  CHECK(PosixFromMetadata({}) == PosixAttrs{});
}

TEST_CASE("WithPosix writes over its own names and keeps the others, MergePosix overlays") {
  PosixAttrs change;
  change.mode = S_IFREG | 0700;
  const UserMetadata out = WithPosix({{"mode", "33188"}, {"owner-team", "vision"}}, change);
  REQUIRE(out.size() == 2);
  CHECK(out[0] == std::pair<std::string, std::string>{"mode", "33216"});
  CHECK(out[1] == std::pair<std::string, std::string>{"owner-team", "vision"});
  PosixAttrs base;
  base.mode = S_IFREG | 0644;
  base.uid = 5;
  PosixAttrs merged = MergePosix(base, change);
  CHECK(merged.mode == (S_IFREG | 0700));
  CHECK(merged.uid == 5u);
  CHECK(PosixFromMetadata(WithPosix({}, merged)) == merged);
}
