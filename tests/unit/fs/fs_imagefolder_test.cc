// The product's main workload: torchvision ImageFolder over a mounted dataset.
#include <map>

#include "fs_harness.h"

using namespace fstest;

TEST_CASE("ImageFolder epoch: listing requests only, no HEAD, exactly one GET per file") {
  FsOptions options = Harness::DefaultOptions();
  options.prefix = "ds/train";  // normalised to "ds/train/"
  Harness h(options);
  constexpr int kClasses = 3;
  constexpr int kFiles = 1200;               // more than one 1,000-key page per class
  std::map<std::string, std::string> truth;  // path -> content
  for (int c = 0; c < kClasses; ++c) {
    for (int f = 0; f < kFiles; ++f) {
      char name[64];
      std::snprintf(name, sizeof name, "cls_%d/img_%04d.JPEG", c, f);
      std::string data = Content(200 + (c * 7919 + f * 104729) % 3000, c * 100000 + f);
      h.fake->PutObject(std::string("ds/train/") + name, data);
      truth[name] = std::move(data);
    }
  }
  h.fake->PutObject("ds/other/outside.jpg", "not in the mount");
  h.fake->PutObject("ds/train.txt", "not in the mount either");

  auto root = h.ListPlus(kRootInode);
  REQUIRE(root.ok());
  REQUIRE(EntryNames(*root) == std::vector<std::string>{"cls_0/", "cls_1/", "cls_2/"});

  size_t files_read = 0;
  for (int c = 0; c < kClasses; ++c) {
    const std::string cls = "cls_" + std::to_string(c);
    auto dir = h.Lookup(kRootInode, cls);
    REQUIRE(dir.ok());
    REQUIRE(dir->attr.is_dir);
    CHECK(dir->attr.ino == FindEntry(*root, cls)->entry.attr.ino);
    auto entries = h.ListPlus(dir->attr.ino);
    REQUIRE(entries.ok());
    REQUIRE(entries->size() == kFiles);
    for (const auto& e : *entries) {
      const std::string path = cls + "/" + e.name;
      REQUIRE(truth.count(path));
      const std::string& expected = truth[path];
      // readdirplus attributes are complete
      CHECK(e.entry.attr.size == expected.size());
      CHECK((e.entry.attr.mode & S_IFMT) == S_IFREG);
      CHECK(e.entry.entry_timeout >= 1e5);

      auto entry = h.Lookup(dir->attr.ino, e.name);
      REQUIRE(entry.ok());
      CHECK(entry->attr.ino == e.entry.attr.ino);
      CHECK(entry->attr.size == expected.size());
      auto attr = h.GetAttr(entry->attr.ino);
      REQUIRE(attr.ok());
      CHECK(attr->attr.size == expected.size());
      auto open = h.Open(entry->attr.ino);
      REQUIRE(open.ok());
      CHECK(open->keep_cache);
      auto bytes = h.ReadAll(entry->attr.ino, open->fh);
      REQUIRE(bytes.ok());
      REQUIRE(*bytes == expected);
      h.fs->Release(entry->attr.ino, open->fh);
      h.fs->Forget(entry->attr.ino, 1);
      ++files_read;
    }
  }
  CHECK(files_read == kClasses * kFiles);
  // 1 page for the root, 2 pages (1000 + 200) per class.
  CHECK(h.fake->count(Op::kList) == 1 + kClasses * 2);
  CHECK(h.fake->count(Op::kHead) == 0);
  CHECK(h.fake->count(Op::kGet) == kClasses * kFiles);
  for (const auto& r : h.fake->requests()) {
    if (r.op == Op::kGet) {
      CHECK(r.offset == 0);
      CHECK(!r.length);  // whole object: the client verifies its CRC-64
      CHECK(!r.if_match.empty());
    } else if (r.op == Op::kList) {
      CHECK(r.delimiter == "/");
      CHECK(r.max_keys == 1000);
    }
  }
  // Every buffer was dropped with its last handle; forgotten inodes are gone.
  auto stats = h.fs->stats();
  CHECK(Eventually([&] { return h.fs->stats().whole_objects == 0; }));
  CHECK(stats.file_handles == 0);
  CHECK(stats.dir_handles == 0);

  // A second epoch needs no request at all for metadata (indefinite TTL), one GET per file.
  h.fake->ResetCounters();
  auto again = h.List(kRootInode);
  REQUIRE(again.ok());
  auto cls0 = h.Lookup(kRootInode, "cls_0");
  REQUIRE(cls0.ok());
  auto e = h.Lookup(cls0->attr.ino, "img_0007.JPEG");
  REQUIRE(e.ok());
  CHECK(h.ReadFile(e->attr.ino) == truth["cls_0/img_0007.JPEG"]);
  CHECK(h.fake->count(Op::kList) == 0);
  CHECK(h.fake->count(Op::kHead) == 0);
  CHECK(h.fake->count(Op::kGet) == 1);
}
