#include "meta/dir_snapshot.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

using namespace ossmount::meta;

namespace {

NodeAttr FileAttr(uint64_t size, int64_t mtime, std::string etag,
                  std::optional<uint64_t> crc64 = std::nullopt) {
  NodeAttr a;
  a.size = size;
  a.mtime_sec = mtime;
  a.etag = std::move(etag);
  a.crc64 = crc64;
  return a;
}

void CheckSame(const DirSnapshot::Child& got, const DirChild& want) {
  CHECK(got.name == want.name);
  CHECK(got.kind == want.attr.kind);
  CHECK(got.is_dir() == want.attr.is_dir());
  CHECK(got.size == want.attr.size);
  CHECK(got.mtime_sec == want.attr.mtime_sec);
  CHECK(got.etag == want.attr.etag);
  CHECK(got.crc64 == want.attr.crc64);
  CHECK(got.appendable == want.attr.appendable);
  const NodeAttr attr = got.attr();
  CHECK(attr.kind == want.attr.kind);
  CHECK(attr.size == want.attr.size);
  CHECK(attr.mtime_sec == want.attr.mtime_sec);
  CHECK(attr.etag == want.attr.etag);
  CHECK(attr.crc64 == want.attr.crc64);
  CHECK(attr.appendable == want.attr.appendable);
}

}  // namespace

TEST_CASE("DirSnapshot: every field of every child reads back as it was listed") {
  const std::string longest(kNameMax, 'z');     // the longest valid name
  const std::string long_etag(300, 'e');        // no limit on what a server sends
  const std::string utf8 = "k\xC3\xA4se.JPEG";  // bytes, not characters
  NodeAttr dir;
  dir.kind = NodeKind::kDir;
  NodeAttr link = FileAttr(0, 9, "\"link\"");
  link.kind = NodeKind::kSymlink;
  NodeAttr log = FileAttr(77, 9, "\"log\"", uint64_t{5});
  log.appendable = true;
  const std::vector<DirChild> children = {
      {"a", FileAttr(0, 0, "")},
      {"ab", link},
      {"ac", log},
      {"b", FileAttr(std::numeric_limits<uint64_t>::max(), -1,
                     "\"5EB63BBBE01EEED093CB22BB8F5ACDC3\"", uint64_t{0})},
      {"c", dir},
      {"d", FileAttr(115'000, 1'700'000'000, long_etag, std::numeric_limits<uint64_t>::max())},
      {utf8, FileAttr(7, 42, "\"abc-3\"", uint64_t{0x995DC9BBDF1939FA})},
      {longest, FileAttr(1, 2, "\"x\"")},
  };
  const DirSnapshot snapshot(children, HiddenCounts{3, 2});
  REQUIRE(snapshot.size() == children.size());
  CHECK(!snapshot.empty());
  for (size_t i = 0; i < children.size(); ++i) {
    INFO("child " << i);
    CheckSame(snapshot.child(i), children[i]);
  }
  CHECK(snapshot.hidden().invalid == 3);
  CHECK(snapshot.hidden().clashes == 2);
}

TEST_CASE("DirSnapshot: Find gives the position of exactly the name asked for") {
  std::vector<DirChild> children;
  for (const char* name : {"a", "ab", "b", "img_0000001.JPEG", "img_0000002.JPEG"}) {
    children.push_back({name, FileAttr(1, 1, "\"e\"")});
  }
  const DirSnapshot snapshot(children);
  CHECK(snapshot.Find("a") == std::optional<size_t>(0));
  CHECK(snapshot.Find("ab") == std::optional<size_t>(1));
  CHECK(snapshot.Find("b") == std::optional<size_t>(2));
  CHECK(snapshot.Find("img_0000002.JPEG") == std::optional<size_t>(4));
  CHECK(!snapshot.Find("a0"));
  CHECK(!snapshot.Find(""));
  CHECK(!snapshot.Find("c"));
  CHECK(!snapshot.Find("img_0000001.JPE"));
  CHECK(!snapshot.Find("img_0000001.JPEGX"));
}

TEST_CASE("DirSnapshot: an empty directory has no children and finds nothing") {
  const DirSnapshot built(std::vector<DirChild>{});
  const DirSnapshot empty;
  for (const DirSnapshot* s : {&built, &empty}) {
    CHECK(s->size() == 0);
    CHECK(s->empty());
    CHECK(!s->Find("a"));
    CHECK(s->hidden().total() == 0);
  }
}

TEST_CASE("DirSnapshot: a large directory finds each of its names at its own position") {
  std::vector<DirChild> children;
  for (int i = 0; i < 5000; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "img_%07d.JPEG", i);
    children.push_back({name, FileAttr(100'000 + i, i, "\"etag-" + std::to_string(i) + "\"")});
  }
  const DirSnapshot snapshot(children);
  REQUIRE(snapshot.size() == 5000);
  for (size_t i = 0; i < children.size(); ++i) {
    const std::optional<size_t> at = snapshot.Find(children[i].name);
    REQUIRE(at == std::optional<size_t>(i));
    REQUIRE(snapshot.child(i).etag == children[i].attr.etag);
    REQUIRE(snapshot.child(i).size == children[i].attr.size);
  }
}
