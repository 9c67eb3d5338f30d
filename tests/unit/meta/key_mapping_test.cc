#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "meta/key_mapping.h"

using namespace ossmount;
using namespace ossmount::meta;

namespace {

ObjectInfo Obj(const std::string& key, uint64_t size = 1) {
  ObjectInfo o;
  o.key = key;
  o.size = size;
  o.etag = "\"e-" + key + "\"";
  o.mtime_sec = 1000;
  return o;
}

std::vector<std::string> Names(const std::vector<DirChild>& children) {
  std::vector<std::string> out;
  for (const auto& c : children) out.push_back(c.name + (c.attr.is_dir() ? "/" : ""));
  return out;
}

}  // namespace

TEST_CASE("ValidComponent accepts POSIX names and rejects everything else") {
  struct Row {
    std::string name;
    bool valid;
  };
  const std::vector<Row> rows = {
      {"a", true},
      {"img 001-\xc3\xa9.jpg", true},
      {"...", true},
      {".hidden", true},
      {"a.", true},
      {std::string(255, 'x'), true},
      {"", false},
      {".", false},
      {"..", false},
      {std::string(256, 'x'), false},
      {"a/b", false},
      {"/", false},
      {std::string("a\0b", 3), false},
  };
  for (const auto& row : rows) {
    INFO("name '" << row.name << "' size " << row.name.size());
    CHECK(ValidComponent(row.name) == row.valid);
  }
}

TEST_CASE("CheckLookupName maps bad names to the right errno without a request") {
  CHECK(CheckLookupName("file.jpg").ok());
  CHECK(CheckLookupName(std::string(255, 'n')).ok());
  CHECK(CheckLookupName(".").ToErrno() == ENOENT);
  CHECK(CheckLookupName("..").ToErrno() == ENOENT);
  CHECK(CheckLookupName("").ToErrno() == ENOENT);
  CHECK(CheckLookupName("a/b").ToErrno() == EINVAL);
  CHECK(CheckLookupName("../etc").ToErrno() == EINVAL);
  CHECK(CheckLookupName(std::string("a\0", 2)).ToErrno() == EINVAL);
  Status too_long = CheckLookupName(std::string(256, 'n'));
  CHECK(!too_long.ok());
  CHECK(too_long.message().find("too long") != std::string::npos);
  CHECK(too_long.ToErrno() == ENAMETOOLONG);
}

TEST_CASE("Paths join, split and map to keys under the mount prefix") {
  CHECK(JoinPath("", "a") == "a");
  CHECK(JoinPath("a/b", "c") == "a/b/c");
  CHECK(SplitPath("a/b/c").first == "a/b");
  CHECK(SplitPath("a/b/c").second == "c");
  CHECK(SplitPath("c").first == "");
  CHECK(SplitPath("c").second == "c");
  CHECK(FileKey("imagenet/", "train/x.jpg") == "imagenet/train/x.jpg");
  CHECK(FileKey("", "x") == "x");
  CHECK(DirPrefix("imagenet/", "") == "imagenet/");
  CHECK(DirPrefix("imagenet/", "train") == "imagenet/train/");
  CHECK(DirPrefix("", "") == "");
  CHECK(DirPrefix("", "a/b") == "a/b/");
}

TEST_CASE("NormalizeMountPrefix adds the slash and refuses invalid components") {
  CHECK(*NormalizeMountPrefix("") == "");
  CHECK(*NormalizeMountPrefix("/") == "");
  CHECK(*NormalizeMountPrefix("imagenet") == "imagenet/");
  CHECK(*NormalizeMountPrefix("/imagenet/train/") == "imagenet/train/");
  CHECK(!NormalizeMountPrefix("a//b").ok());
  CHECK(!NormalizeMountPrefix("a/../b").ok());
  CHECK(!NormalizeMountPrefix("./a").ok());
}

TEST_CASE("DirectoryBuilder: files, directories, markers, hidden keys and clashes") {
  struct Case {
    std::string name;
    std::string prefix;
    ListPage page;
    std::vector<std::string> expected;  // dirs end in '/'
    uint64_t invalid;
    uint64_t clashes;
  };
  auto page = [](std::vector<std::string> keys, std::vector<std::string> prefixes) {
    ListPage p;
    for (auto& k : keys) p.objects.push_back(Obj(k));
    p.common_prefixes = std::move(prefixes);
    return p;
  };
  const std::vector<Case> cases = {
      {"plain files and dirs",
       "",
       page({"a.jpg", "b.jpg"}, {"cls/"}),
       {"a.jpg", "b.jpg", "cls/"},
       0,
       0},
      {"own marker skipped", "train/", page({"train/", "train/x"}, {}), {"x"}, 0, 0},
      {"marker-only subdir (a common prefix)",
       "train/",
       page({}, {"train/empty/"}),
       {"empty/"},
       0,
       0},
      {"empty component in key a//b", "a/", page({}, {"a//"}), {}, 1, 0},
      {"leading slash key", "", page({}, {"/"}), {}, 1, 0},
      {"dot components", "", page({".", ".."}, {"./", "../"}), {}, 4, 0},
      {"over-long component",
       "",
       page({std::string(256, 'f')}, {std::string(256, 'd') + "/"}),
       {},
       2,
       0},
      {"exactly 255 is fine", "", page({std::string(255, 'f')}, {}), {std::string(255, 'f')}, 0, 0},
      {"NUL in name", "", page({std::string("a\0b", 3)}, {}), {}, 1, 0},
      {"clash: directory wins", "", page({"a", "b"}, {"a/"}), {"a/", "b"}, 0, 1},
      {"dotted names stay", "", page({".hidden", "..."}, {}), {"...", ".hidden"}, 0, 0},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    DirectoryBuilder b(c.prefix);
    b.AddPage(c.page);
    auto children = b.Finish();
    CHECK(Names(children) == c.expected);
    CHECK(b.hidden().invalid == c.invalid);
    CHECK(b.hidden().clashes == c.clashes);
  }
}

TEST_CASE("DirectoryBuilder: a clash split across pages still shows only the directory") {
  DirectoryBuilder b("d/");
  ListPage p1;
  p1.objects = {Obj("d/a", 7), Obj("d/z", 3)};
  ListPage p2;
  p2.common_prefixes = {"d/a/"};
  p2.objects = {Obj("d/m", 5)};
  b.AddPage(p1);
  b.AddPage(p2);
  auto children = b.Finish();
  REQUIRE(Names(children) == std::vector<std::string>{"a/", "m", "z"});
  CHECK(children[1].attr.size == 5);
  CHECK(children[1].attr.etag == "\"e-d/m\"");
  CHECK(children[1].attr.mtime_sec == 1000);
  CHECK(b.hidden().clashes == 1);
}

TEST_CASE("DirectoryBuilder: children come out sorted and unique") {
  DirectoryBuilder b("");
  ListPage p;
  p.objects = {Obj("c"), Obj("a")};
  p.common_prefixes = {"b/", "b/"};
  b.AddPage(p);
  CHECK(Names(b.Finish()) == std::vector<std::string>{"a", "b/", "c"});
}

TEST_CASE("CheckNewKey refuses keys the service would refuse, before any request") {
  struct Row {
    std::string key;
    ErrorCode code;
  };
  const std::vector<Row> rows = {
      {"plain/key.bin", ErrorCode::kOk},
      {std::string(1023, 'k'), ErrorCode::kOk},
      {std::string(1024, 'k'), ErrorCode::kNameTooLong},
      {"caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac/\xf0\x9f\x98\x80", ErrorCode::kOk},
      {"bad \xff byte", ErrorCode::kInvalidArgument},
      {"cut \xe6\x97", ErrorCode::kInvalidArgument},            // a sequence cut short
      {"overlong \xc0\xaf", ErrorCode::kInvalidArgument},       // '/' in two bytes
      {"surrogate \xed\xa0\x80", ErrorCode::kInvalidArgument},  // U+D800
      {"\\leading backslash", ErrorCode::kInvalidArgument},
      {"inner\\backslash", ErrorCode::kOk},
  };
  for (const Row& row : rows) {
    INFO(row.key);
    CHECK(CheckNewKey(row.key, "p").code() == row.code);
  }
  CHECK(CheckNewKey(std::string(1024, 'k'), "the/path").message().find("'the/path'") !=
        std::string::npos);
}
