// PosixAttrs: the mode, owner and time ossfs and s3fs keep in user metadata, read and written.
#include "meta/posix_attrs.h"
#include "meta/xattr_header.h"

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

TEST_CASE("Extended attributes are read from and written to s3fs's \"xattr\" header") {
  // What s3fs stores for `setfattr -n user.origin -v imagenet`.
  const UserMetadata s3fs = {{"mode", "33188"},
                             {"xattr", "%7B%22user.origin%22%3A%22aW1hZ2VuZXQ%3D%22%7D"}};
  PosixAttrs a = PosixFromMetadata(s3fs);
  REQUIRE(a.xattrs.size() == 1);
  CHECK(a.xattrs["user.origin"] == std::optional<std::string>("imagenet"));
  CHECK(EncodeXattrHeader({{"user.origin", "imagenet"}}) == s3fs[1].second);
  // Binary values, quotes in a name: what one writes, the other reads.
  const Xattrs odd = {{"user.bin", std::string("\0\x01\xfe", 3)}, {"user.\"q\"", ""}};
  CHECK(DecodeXattrHeader(EncodeXattrHeader(odd)) == std::optional<Xattrs>(odd));
  // A header that is not such an object is skipped, the rest read.
  for (const char* bad :
       {"%7B", "not-json", "%5B%5D", "%7B%22a%22%3A1%7D", "%7B%22a%22%3A%22%2A%22%7D"}) {
    INFO(bad);
    const PosixAttrs skipped = PosixFromMetadata({{"mode", "33188"}, {"xattr", bad}});
    CHECK(skipped.xattrs.empty());
    CHECK(skipped.mode == (S_IFREG | 0644));
  }
}

TEST_CASE("A change sets and removes attributes by name, and the header goes with the last") {
  PosixAttrs change;
  change.xattrs["user.b"] = "2";
  change.xattrs["user.a"] = std::nullopt;  // removed
  const UserMetadata before = {{"xattr", EncodeXattrHeader({{"user.a", "1"}})}, {"team", "v"}};
  const PosixAttrs now = MergePosix(PosixFromMetadata(before), change);
  CHECK(PresentXattrs(now) == Xattrs{{"user.b", "2"}});
  const UserMetadata after = WithPosix(before, now);
  CHECK(PosixFromMetadata(after).xattrs ==
        std::map<std::string, std::optional<std::string>>{{"user.b", "2"}});
  PosixAttrs remove_all;
  remove_all.xattrs["user.b"] = std::nullopt;
  const UserMetadata none = WithPosix(after, MergePosix(PosixFromMetadata(after), remove_all));
  REQUIRE(none.size() == 1);
  CHECK(none[0].first == "team");
  // A change that names no attribute leaves the header as it was.
  PosixAttrs mode_only;
  mode_only.mode = S_IFREG | 0600;
  CHECK(WithPosix(after, mode_only)[0] == after[0]);
  CHECK(UserMetadataBytes({{"ab", "cde"}, {"f", ""}}) == 6);
}
