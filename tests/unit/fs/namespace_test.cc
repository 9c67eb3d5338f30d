// The filesystem's changes to names (namespace_changes.cc): mkdir's marker objects, rmdir,
// unlink, and rename as a server-side copy then a delete, for files and whole directories,
// with inodes keeping their numbers across a rename.
#include <linux/fs.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "write_harness.h"

using namespace fswrite;

namespace {

// Every key in the fake bucket that starts with `prefix`, sorted.
std::vector<std::string> KeysUnder(const WriteRig& h, const std::string& prefix,
                                   const std::vector<std::string>& candidates) {
  std::vector<std::string> out;
  for (const auto& k : candidates) {
    if (k.rfind(prefix, 0) == 0 && h.fake->HasObject(k)) out.push_back(k);
  }
  return out;
}

}  // namespace

TEST_CASE("Namespace: MakeDir writes a marker and the directory is usable at once") {
  WriteRig h;
  h.fake->PutObject("file", "1");
  CHECK(Names(h.List(kRootInode)) == std::vector<std::string>{"file"});
  auto d = h.MakeDir(kRootInode, "d");
  REQUIRE(d.ok());
  CHECK(d->attr.is_dir);
  CHECK(S_ISDIR(d->attr.mode));
  REQUIRE(h.fake->Data("d/").has_value());
  CHECK(*h.fake->Data("d/") == "");
  CHECK(h.fake->count(Op::kPut) == 1);
  CHECK(Names(h.List(kRootInode)) == std::vector<std::string>{"d/", "file"});
  auto looked = h.Lookup(kRootInode, "d");
  REQUIRE(looked.ok());
  CHECK(looked->attr.ino == d->attr.ino);
  CHECK(looked->attr.is_dir);
  CHECK(Names(h.List(d->attr.ino)).empty());

  CHECK(h.MakeDir(kRootInode, "d").status().code() == ErrorCode::kAlreadyExists);
  CHECK(h.MakeDir(kRootInode, "file").status().code() == ErrorCode::kAlreadyExists);
  CHECK(h.fake->count(Op::kPut) == 1);

  // Files go into it, and directories below it.
  h.WriteFile(d->attr.ino, "f", "inside");
  CHECK(*h.fake->Data("d/f") == "inside");
  auto sub = h.MakeDir(d->attr.ino, "sub");
  REQUIRE(sub.ok());
  CHECK(h.fake->HasObject("d/sub/"));
  CHECK(Names(h.List(d->attr.ino)) == std::vector<std::string>{"f", "sub/"});
}

TEST_CASE("Namespace: MakeDir under a mount prefix puts the marker under the prefix") {
  FsOptions o = WritableOptions();
  o.prefix = "data/";
  WriteRig h(o);
  REQUIRE(h.MakeDir(kRootInode, "d").ok());
  CHECK(h.fake->HasObject("data/d/"));
  CHECK_FALSE(h.fake->HasObject("d/"));
  h.WriteFile(kRootInode, "f", "x");
  CHECK(*h.fake->Data("data/f") == "x");
}

TEST_CASE("Namespace: RemoveDir removes an empty directory and refuses a non-empty one") {
  WriteRig h;
  h.fake->PutObject("full/", "");
  h.fake->PutObject("full/x", "x");
  h.fake->PutObject("empty/", "");
  h.fake->PutObject("file", "f");
  CHECK(Names(h.List(kRootInode)) == std::vector<std::string>{"empty/", "file", "full/"});

  CHECK(h.RemoveDir(kRootInode, "full").code() == ErrorCode::kNotEmpty);
  CHECK(h.fake->HasObject("full/"));
  CHECK(h.fake->HasObject("full/x"));

  REQUIRE(h.RemoveDir(kRootInode, "empty").ok());
  CHECK_FALSE(h.fake->HasObject("empty/"));
  CHECK(h.Lookup(kRootInode, "empty").status().code() == ErrorCode::kNotFound);
  CHECK(Names(h.List(kRootInode)) == std::vector<std::string>{"file", "full/"});

  CHECK(h.RemoveDir(kRootInode, "file").code() == ErrorCode::kNotDirectory);
  CHECK(h.RemoveDir(kRootInode, "absent").code() == ErrorCode::kNotFound);
  CHECK(h.fake->HasObject("file"));
  CHECK(h.fake->count(Op::kDelete) == 1);
}

TEST_CASE("Namespace: RemoveDir asks the bucket, not a cached listing, whether it is empty") {
  WriteRig h;
  h.fake->PutObject("d/", "");
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  CHECK(Names(h.List(d->attr.ino)).empty());  // cached: empty, indefinitely
  h.fake->PutObject("d/late", "another mount wrote this");
  CHECK(h.RemoveDir(kRootInode, "d").code() == ErrorCode::kNotEmpty);
  CHECK(h.fake->HasObject("d/"));
  CHECK(h.fake->HasObject("d/late"));
}

TEST_CASE("Namespace: RemoveDir refuses a directory holding a file being written") {
  WriteRig h;
  auto d = h.MakeDir(kRootInode, "d");
  REQUIRE(d.ok());
  auto c = h.Create(d->attr.ino, "f");
  REQUIRE(c.ok());
  REQUIRE(h.WriteAll(c->entry.attr.ino, c->fh, "x").ok());
  CHECK(h.RemoveDir(kRootInode, "d").code() == ErrorCode::kNotEmpty);
  CHECK(h.fake->HasObject("d/"));
  REQUIRE(h.Flush(c->entry.attr.ino, c->fh).ok());
  h.fs->Release(c->entry.attr.ino, c->fh);
  CHECK(*h.fake->Data("d/f") == "x");
}

TEST_CASE("Namespace: Unlink deletes a file, and refuses directories and absent names") {
  WriteRig h;
  h.fake->PutObject("f", "1");
  h.fake->PutObject("d/x", "1");
  auto f = h.Lookup(kRootInode, "f");
  REQUIRE(f.ok());
  REQUIRE(h.Unlink(kRootInode, "f").ok());
  CHECK_FALSE(h.fake->HasObject("f"));
  CHECK(h.Lookup(kRootInode, "f").status().code() == ErrorCode::kNotFound);
  CHECK(h.Unlink(kRootInode, "f").code() == ErrorCode::kNotFound);
  CHECK(h.Unlink(kRootInode, "d").code() == ErrorCode::kIsDirectory);
  CHECK(h.fake->HasObject("d/x"));
  CHECK(h.fake->count(Op::kDelete) == 1);
}

TEST_CASE("Namespace: Rename of a file copies, then deletes, and keeps the inode") {
  struct Row {
    const char* what;
    size_t size;
    Op copy;
    uint64_t copies;
  };
  const Row rows[] = {
      {"one CopyObject", 50 * KiB, Op::kCopy, 1},
      {"UploadPartCopy parts", 250 * KiB, Op::kUploadPartCopy, 7},  // 40 KiB parts
  };
  for (const Row& row : rows) {
    INFO(row.what);
    WriteRig h;
    const std::string data = Content(row.size, 7);
    h.fake->PutObject("d1/a", data);
    h.fake->PutObject("d2/other", "o");
    auto d1 = h.Lookup(kRootInode, "d1");
    auto d2 = h.Lookup(kRootInode, "d2");
    REQUIRE(d1.ok());
    REQUIRE(d2.ok());
    auto a = h.Lookup(d1->attr.ino, "a");
    REQUIRE(a.ok());
    const InodeId ino = a->attr.ino;
    CHECK(Names(h.List(d2->attr.ino)) == std::vector<std::string>{"other"});
    h.fake->ResetCounters();

    REQUIRE(h.Rename(d1->attr.ino, "a", d2->attr.ino, "b").ok());
    CHECK(h.fake->count(row.copy) == row.copies);
    CHECK(h.fake->count(Op::kDelete) == 1);
    CHECK(h.fake->OpenUploadCount() == 0);
    CHECK(*h.fake->Data("d2/b") == data);
    CHECK_FALSE(h.fake->HasObject("d1/a"));

    // The inode moved with its name: same number, and it works.
    auto b = h.Lookup(d2->attr.ino, "b");
    REQUIRE(b.ok());
    CHECK(b->attr.ino == ino);
    CHECK(b->attr.size == row.size);
    auto attr = h.GetAttr(ino);
    REQUIRE(attr.ok());
    CHECK(attr->attr.size == row.size);
    CHECK(h.ReadFile(ino) == data);
    CHECK(h.Lookup(d1->attr.ino, "a").status().code() == ErrorCode::kNotFound);
    CHECK(Names(h.List(d2->attr.ino)) == std::vector<std::string>{"b", "other"});
  }
}

TEST_CASE("Namespace: Rename onto an existing file replaces it, unless RENAME_NOREPLACE") {
  WriteRig h;
  h.fake->PutObject("a", "from a");
  h.fake->PutObject("b", "was b");
  auto a = h.Lookup(kRootInode, "a");
  auto b = h.Lookup(kRootInode, "b");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  h.fake->ResetCounters();

  CHECK(h.Rename(kRootInode, "a", kRootInode, "b", RENAME_NOREPLACE).code() ==
        ErrorCode::kAlreadyExists);
  CHECK(*h.fake->Data("a") == "from a");
  CHECK(*h.fake->Data("b") == "was b");
  CHECK(h.fake->count(Op::kCopy) == 0);
  CHECK(h.fake->count(Op::kDelete) == 0);

  REQUIRE(h.Rename(kRootInode, "a", kRootInode, "b").ok());
  CHECK(*h.fake->Data("b") == "from a");
  CHECK_FALSE(h.fake->HasObject("a"));
  auto now_b = h.Lookup(kRootInode, "b");
  REQUIRE(now_b.ok());
  CHECK(now_b->attr.ino == a->attr.ino);
  CHECK(now_b->attr.size == 6);
  CHECK(h.ReadFile(a->attr.ino) == "from a");
}

TEST_CASE("Namespace: Rename refuses what it cannot do, and sends nothing for it") {
  WriteRig h;
  h.fake->PutObject("f", "1");
  h.fake->PutObject("g", "2");
  h.fake->PutObject("d/x", "3");
  h.fake->PutObject("e/y", "4");
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  h.fake->ResetCounters();
  struct Row {
    const char* what;
    InodeId parent;
    std::string name;
    InodeId new_parent;
    std::string new_name;
    unsigned flags;
    ErrorCode code;
  };
  const Row rows[] = {
      {"an absent source", kRootInode, "none", kRootInode, "z", 0, ErrorCode::kNotFound},
      {"a file onto a directory", kRootInode, "f", kRootInode, "d", 0, ErrorCode::kIsDirectory},
      {"a directory onto a file", kRootInode, "d", kRootInode, "f", 0, ErrorCode::kNotDirectory},
      {"a directory onto a directory", kRootInode, "d", kRootInode, "e", 0, ErrorCode::kNotEmpty},
      {"a directory into itself", kRootInode, "d", d->attr.ino, "inner", 0,
       ErrorCode::kInvalidArgument},
      {"RENAME_EXCHANGE", kRootInode, "f", kRootInode, "g", RENAME_EXCHANGE,
       ErrorCode::kNotSupported},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    CHECK(h.Rename(row.parent, row.name, row.new_parent, row.new_name, row.flags).code() ==
          row.code);
  }
  CHECK(h.Rename(kRootInode, "f", kRootInode, "f").ok());  // a rename onto itself: nothing
  CHECK(h.fake->count(Op::kCopy) == 0);
  CHECK(h.fake->count(Op::kDelete) == 0);
  CHECK(h.fake->count(Op::kDeleteMultiple) == 0);
  CHECK(*h.fake->Data("f") == "1");
  CHECK(*h.fake->Data("g") == "2");
  CHECK(*h.fake->Data("d/x") == "3");
}

TEST_CASE("Namespace: Rename of a directory moves every object and keeps the inodes") {
  WriteRig h;
  const std::vector<std::string> keys = {"d/", "d/a", "d/b", "d/s/", "d/s/c"};
  for (size_t i = 0; i < keys.size(); ++i) {
    h.fake->PutObject(keys[i], keys[i].back() == '/' ? "" : Content(1000 + i, 8 + i));
  }
  h.fake->PutObject("dx", "a sibling that only shares the prefix");
  h.fake->set_page_limit(2);  // the directory's objects take three pages
  CHECK(Names(h.List(kRootInode)) == std::vector<std::string>{"d/", "dx"});
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  auto s = h.Lookup(d->attr.ino, "s");
  REQUIRE(s.ok());
  auto c = h.Lookup(s->attr.ino, "c");
  REQUIRE(c.ok());
  const std::string c_data = *h.fake->Data("d/s/c");

  REQUIRE(h.Rename(kRootInode, "d", kRootInode, "e").ok());
  std::vector<std::string> all;
  for (const auto& k : keys) {
    all.push_back(k);
    all.push_back("e" + k.substr(1));
  }
  CHECK(KeysUnder(h, "d/", all).empty());
  CHECK(KeysUnder(h, "e/", all) == std::vector<std::string>{"e/", "e/a", "e/b", "e/s/", "e/s/c"});
  CHECK(*h.fake->Data("e/s/c") == c_data);
  CHECK(*h.fake->Data("e/a") == Content(1001, 9));
  CHECK(h.fake->HasObject("dx"));
  CHECK(h.fake->count(Op::kCopy) == keys.size());

  CHECK(Names(h.List(kRootInode)) == std::vector<std::string>{"dx", "e/"});
  CHECK(h.Lookup(kRootInode, "d").status().code() == ErrorCode::kNotFound);
  auto e = h.Lookup(kRootInode, "e");
  REQUIRE(e.ok());
  CHECK(e->attr.ino == d->attr.ino);
  CHECK(h.Lookup(e->attr.ino, "s")->attr.ino == s->attr.ino);
  CHECK(h.Lookup(s->attr.ino, "c")->attr.ino == c->attr.ino);
  auto attr = h.GetAttr(c->attr.ino);
  REQUIRE(attr.ok());
  CHECK(attr->attr.size == c_data.size());
  CHECK(h.ReadFile(c->attr.ino) == c_data);
  CHECK(Names(h.List(e->attr.ino)) == std::vector<std::string>{"a", "b", "s/"});
}

TEST_CASE("Namespace: Rename of a directory over --rename-dir-limit is EXDEV, sources intact") {
  FsOptions o = WritableOptions();
  o.writes.rename_dir_limit = 3;
  WriteRig h(o);
  for (const char* k : {"big/1", "big/2", "big/3", "big/4"}) h.fake->PutObject(k, k);
  for (const char* k : {"small/1", "small/2", "small/3"}) h.fake->PutObject(k, k);
  h.fake->ResetCounters();
  CHECK(h.Rename(kRootInode, "big", kRootInode, "moved").code() == ErrorCode::kCrossDevice);
  CHECK(h.fake->count(Op::kCopy) == 0);
  CHECK(h.fake->count(Op::kDelete) + h.fake->count(Op::kDeleteMultiple) == 0);
  for (const char* k : {"big/1", "big/2", "big/3", "big/4"}) CHECK(*h.fake->Data(k) == k);
  CHECK(h.Lookup(kRootInode, "big").ok());
  CHECK(h.Lookup(kRootInode, "moved").status().code() == ErrorCode::kNotFound);

  // At the limit: moved.
  REQUIRE(h.Rename(kRootInode, "small", kRootInode, "moved").ok());
  CHECK(*h.fake->Data("moved/3") == "small/3");
  CHECK_FALSE(h.fake->HasObject("small/1"));
}

TEST_CASE("Namespace: a directory rename whose copy fails leaves the sources and no copies") {
  WriteRig h(WritableOptions(), /*failing=*/true);
  const std::vector<std::string> keys = {"d/1", "d/2", "d/3", "d/4"};
  for (const auto& k : keys) h.fake->PutObject(k, k);
  h.fail->RefuseNext(Op::kCopy, 1);
  CHECK(h.Rename(kRootInode, "d", kRootInode, "e").code() == ErrorCode::kServerError);
  for (const auto& k : keys) {
    CHECK(*h.fake->Data(k) == k);
    CHECK_FALSE(h.fake->HasObject("e" + k.substr(1)));
  }
  CHECK(h.Lookup(kRootInode, "d").ok());
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  CHECK(Names(h.List(d->attr.ino)) == std::vector<std::string>{"1", "2", "3", "4"});
}

TEST_CASE("Namespace: a file rename whose copy fails leaves the source and no destination") {
  WriteRig h(WritableOptions(), /*failing=*/true);
  h.fake->PutObject("a", Content(250 * KiB, 10));
  h.fail->RefuseNext(Op::kUploadPartCopy, 1, std::nullopt, 2);
  CHECK(h.Rename(kRootInode, "a", kRootInode, "b").code() == ErrorCode::kServerError);
  CHECK(*h.fake->Data("a") == Content(250 * KiB, 10));
  CHECK_FALSE(h.fake->HasObject("b"));
  CHECK(h.fake->OpenUploadCount() == 0);
  CHECK(h.Lookup(kRootInode, "a").ok());
  CHECK(h.Lookup(kRootInode, "b").status().code() == ErrorCode::kNotFound);
}

TEST_CASE("Namespace: Rename of a directory holding a file being written is kBusy") {
  WriteRig h;
  h.fake->PutObject("d/x", "x");
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  auto c = h.Create(d->attr.ino, "f");
  REQUIRE(c.ok());
  CHECK(h.Rename(kRootInode, "d", kRootInode, "e").code() == ErrorCode::kBusy);
  CHECK(h.fake->HasObject("d/x"));
  CHECK(h.fake->count(Op::kCopy) == 0);
  h.fs->Release(c->entry.attr.ino, c->fh);
}

TEST_CASE("Namespace: changes made while their directory's listing is in flight outlive it") {
  // rsync's generator looks up names before it makes them, which starts a listing of the
  // directory behind the lookups; its mkdir then completes before that listing's answer,
  // which was made without the new directory. The answer must not hide it.
  FsOptions o = WritableOptions();
  SECTION("indefinite TTL") { o.metadata_ttl = std::nullopt; }
  SECTION("finite TTL") { o.metadata_ttl = 60s; }
  WriteRig h(o);
  h.fake->PutObject("shards/a", "1");
  h.fake->PutObject("shards/b", "2");
  auto shards = h.Lookup(kRootInode, "shards");
  REQUIRE(shards.ok());
  const InodeId dir = shards->attr.ino;
  h.fake->HoldListsOf("shards/");
  for (const char* missing : {"x", "y", "z"}) {
    CHECK(h.Lookup(dir, missing).status().ToErrno() == ENOENT);
  }
  REQUIRE(Eventually([&] { return ListingsAndProbes(h, "shards/").first == 1; }));

  auto deep = h.MakeDir(dir, "deep");
  REQUIRE(deep.ok());
  h.WriteFile(dir, "new.bin", "written");
  REQUIRE(h.Unlink(dir, "a").ok());
  ListingOutcomeCounts lookup_listings("ossmount_lookup_listings_total");
  h.fake->ReleaseLists();
  REQUIRE(Eventually([&] { return lookup_listings.ListedSince() == 1; }));

  // What the kernel asks of the new directory before a mkdir in it (rsync failed here).
  auto attr = h.GetAttr(deep->attr.ino);
  REQUIRE(attr.ok());
  CHECK(S_ISDIR(attr->attr.mode));
  auto looked = h.Lookup(dir, "deep");
  REQUIRE(looked.ok());
  CHECK(looked->attr.is_dir);
  CHECK(looked->attr.ino == deep->attr.ino);
  CHECK(h.MakeDir(deep->attr.ino, "er").ok());
  auto file = h.Lookup(dir, "new.bin");
  REQUIRE(file.ok());
  CHECK(file->attr.size == 7);
  CHECK(h.Lookup(dir, "a").status().ToErrno() == ENOENT);
  CHECK(Names(h.List(dir)) == std::vector<std::string>{"b", "deep/", "new.bin"});
  // The cached listing answered all of that.
  CHECK(ListingsAndProbes(h, "shards/").first == 1);
  CHECK(h.fs->listings()->cache().changes_kept_for_listings() == 0);
}

TEST_CASE("Namespace: a directory rename onto a directory the server has filled is kNotEmpty") {
  FsOptions o = WritableOptions();
  o.metadata_ttl = std::chrono::seconds(60);
  WriteRig h(o);
  h.fake->PutObject("src/a", "mine");
  h.fake->PutObject("s2/x", "x");
  CHECK(Names(h.List(kRootInode)) == std::vector<std::string>{"s2/", "src/"});
  // Another client fills dst/ after this mount listed the root (the cache says no dst).
  h.fake->PutObject("dst/a", "theirs a");
  h.fake->PutObject("dst/b", "theirs b");
  CHECK(h.Rename(kRootInode, "src", kRootInode, "dst").code() == ErrorCode::kNotEmpty);
  CHECK(*h.fake->Data("dst/a") == "theirs a");
  CHECK(*h.fake->Data("src/a") == "mine");
  CHECK(h.fake->count(Op::kCopy) == 0);
  // Onto an empty directory (its marker alone): replaced, the marker kept.
  h.fake->PutObject("empty/", "");
  REQUIRE(h.Rename(kRootInode, "src", kRootInode, "empty").ok());
  CHECK(*h.fake->Data("empty/a") == "mine");
  CHECK(h.fake->HasObject("empty/"));
  CHECK_FALSE(h.fake->HasObject("src/a"));
  // Onto a file another client put on the server: kNotDirectory.
  h.fake->PutObject("file", "f");
  CHECK(h.Rename(kRootInode, "s2", kRootInode, "file").code() == ErrorCode::kNotDirectory);
  CHECK(*h.fake->Data("file") == "f");
}

TEST_CASE("Namespace: a directory rename's copies never replace an object") {
  WriteRig h;
  for (const char* k : {"d/1", "d/2", "d/3"}) h.fake->PutObject(k, k);
  REQUIRE(h.Rename(kRootInode, "d", kRootInode, "e").ok());
  size_t copies = 0;
  for (const auto& r : h.fake->requests()) {
    if (r.op == Op::kCopy) {
      CHECK(r.forbid_overwrite);
      ++copies;
    }
  }
  CHECK(copies == 3);
}

TEST_CASE("Namespace: a failed directory rename removes the copies whose answers were lost") {
  WriteRig h(WritableOptions(), /*failing=*/true);
  const std::vector<std::string> keys = {"d/1", "d/2", "d/3", "d/4", "d/5", "d/6"};
  for (const auto& k : keys) h.fake->PutObject(k, k);
  // Two copies are made on the server but their answers are lost (their retries within the
  // client are not modelled here: the rename sees kNetwork), and one is refused.
  h.fail->LoseAnswerOfNext(Op::kCopy, 2);
  h.fail->RefuseNext(Op::kCopy, 1);
  const Status s = h.Rename(kRootInode, "d", kRootInode, "e");
  CHECK_FALSE(s.ok());
  for (const auto& k : keys) {
    CHECK(*h.fake->Data(k) == k);
    CHECK_FALSE(h.fake->HasObject("e" + k.substr(1)));
  }
}

TEST_CASE(
    "Namespace: a copy refused because its target exists is the rename's own when it is "
    "the source's object, another client's otherwise") {
  SECTION("its own: an attempt whose answer was lost made it") {
    WriteRig h(WritableOptions(), /*failing=*/true);
    for (const char* k : {"d/1", "d/2"}) h.fake->PutObject(k, k);
    h.fail->LoseAnswerOfNext(Op::kCopy, 1, Status(ErrorCode::kAlreadyExists, "exists"));
    REQUIRE(h.Rename(kRootInode, "d", kRootInode, "e").ok());
    CHECK(*h.fake->Data("e/1") == "d/1");
    CHECK(*h.fake->Data("e/2") == "d/2");
    CHECK_FALSE(h.fake->HasObject("d/1"));
  }
  SECTION("another client's: the rename fails, leaves it and removes its own copies") {
    WriteRig h(WritableOptions(), /*failing=*/true);
    for (const char* k : {"d/1", "d/2"}) h.fake->PutObject(k, k);
    h.fail->RefuseNext(Op::kCopy, 1, Status(ErrorCode::kAlreadyExists, "exists"));
    CHECK(h.Rename(kRootInode, "d", kRootInode, "e").code() == ErrorCode::kNotEmpty);
    CHECK(*h.fake->Data("d/1") == "d/1");
    CHECK(*h.fake->Data("d/2") == "d/2");
    CHECK_FALSE(h.fake->HasObject("e/1"));
    CHECK_FALSE(h.fake->HasObject("e/2"));
  }
}

TEST_CASE("Namespace: a failed directory rename logs each copy it could not remove") {
  WriteRig h(WritableOptions(), /*failing=*/true);
  for (const char* k : {"d/1", "d/2", "d/3"}) h.fake->PutObject(k, k);
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink));
  h.fail->RefuseNext(Op::kCopy, 1);            // the rename fails...
  h.fail->RefuseNext(Op::kDeleteMultiple, 1);  // ...its cleanup's batch is refused,
  h.fail->FailNth(1, Op::kDelete);             // and so is one copy's own delete
  CHECK_FALSE(h.Rename(kRootInode, "d", kRootInode, "e").ok());
  spdlog::set_default_logger(previous);
  const std::vector<std::string> left = KeysUnder(h, "e/", {"e/1", "e/2", "e/3"});
  REQUIRE(left.size() == 1);
  CHECK(log.str().find("could not remove '" + left[0] + "'") != std::string::npos);
  for (const char* k : {"d/1", "d/2", "d/3"}) CHECK(*h.fake->Data(k) == k);
}
