#include <catch2/catch.hpp>

#include "meta/inode_table.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

using namespace ossmount::meta;

TEST_CASE("InodeTable: the root exists and is never dropped") {
  InodeTable t;
  auto root = t.Get(kRootInodeId);
  REQUIRE(root);
  CHECK(root->is_dir);
  CHECK(root->path == "");
  CHECK(!t.Forget(kRootInodeId, 100));
  CHECK(t.Get(kRootInodeId));
}

TEST_CASE("InodeTable: a path keeps its number while referenced, drops at zero") {
  InodeTable t;
  InodeId a = t.Ensure("a", false, 1);
  CHECK(a != kRootInodeId);
  CHECK(t.Ensure("a", false, 1) == a);
  CHECK(t.Get(a)->nlookup == 2);
  CHECK(t.AddLookup(a));
  CHECK(t.Get(a)->nlookup == 3);
  CHECK(!t.Forget(a, 2));
  CHECK(t.Get(a)->nlookup == 1);
  CHECK(t.Forget(a, 1));
  CHECK(!t.Get(a));
  CHECK(!t.Find("a"));
  CHECK(!t.AddLookup(a));
  // A new reference gets a new number: numbers are never reused.
  InodeId again = t.Ensure("a", false, 1);
  CHECK(again != a);
  CHECK(t.size() == 2);
}

TEST_CASE("InodeTable: forgetting more than the count drops without underflow") {
  InodeTable t;
  InodeId a = t.Ensure("x/y", true, 2);
  CHECK(t.Forget(a, 10));
  CHECK(!t.Forget(a, 1));
}

TEST_CASE("InodeTable: readdir entries (count 0) keep their number for a later lookup") {
  InodeTable t;
  InodeId a = t.Ensure("d/f", false, 0);
  CHECK(t.Get(a)->nlookup == 0);
  CHECK(t.Ensure("d/f", false, 1) == a);
}

TEST_CASE(
    "InodeTable: a path that changes kind gets a new inode, the old one lives until forgotten") {
  InodeTable t;
  InodeId file = t.Ensure("a", false, 1);
  InodeId dir = t.Ensure("a", true, 1);
  CHECK(dir != file);
  CHECK(*t.Find("a") == dir);
  REQUIRE(t.Get(file));
  CHECK(!t.Get(file)->is_dir);
  CHECK(t.Forget(file, 1));
  CHECK(*t.Find("a") == dir);  // forgetting the detached inode leaves the new one alone
  CHECK(t.Get(dir));
}

TEST_CASE("InodeTable: a pinned inode lives until unpinned, then only while referenced") {
  InodeTable t;
  InodeId a = t.Pin("d/a", false);
  InodeId b = t.Pin("d/b", false);
  CHECK(t.Pin("d/a", false) == a);  // a second handle listing the same name
  CHECK(t.size() == 3);
  CHECK(t.AddLookup(b));   // the kernel took a reference to b
  CHECK(!t.Forget(a, 0));  // no reference, but pinned: stays
  CHECK(!t.Unpin(a));      // one pin left
  CHECK(t.Get(a));
  CHECK(t.Unpin(a));  // last pin, no reference: dropped
  CHECK(!t.Get(a));
  CHECK(!t.Find("d/a"));
  CHECK(!t.Unpin(b));  // referenced: stays
  CHECK(t.Get(b)->pins == 0);
  CHECK(t.Forget(b, 1));  // last reference, no pin: dropped
  CHECK(t.size() == 1);
  CHECK(!t.Unpin(b));  // unknown: nothing happens
}

TEST_CASE("InodeTable: a forgotten inode still pinned by a listing is kept until unpinned") {
  InodeTable t;
  InodeId a = t.Ensure("x", false, 1);
  CHECK(t.Pin("x", false) == a);
  CHECK(!t.Forget(a, 1));
  CHECK(t.Get(a));
  CHECK(t.Unpin(a));
  CHECK(!t.Get(a));
}

TEST_CASE("InodeTable: a pinned inode detached by a kind change lives until unpinned") {
  InodeTable t;
  InodeId file = t.Pin("k", false);
  InodeId dir = t.Ensure("k", true, 1);
  CHECK(dir != file);
  CHECK(*t.Find("k") == dir);
  REQUIRE(t.Get(file));
  CHECK(t.Unpin(file));
  CHECK(!t.Get(file));
  CHECK(*t.Find("k") == dir);  // unpinning the detached inode leaves the path's new one
}

TEST_CASE("InodeTable: ShowVersion reports a version other than the one last shown, once") {
  InodeTable t;
  InodeId a = t.Ensure("a", false, 1, 11);
  CHECK(t.Get(a)->shown_version == 11);
  CHECK(!t.ShowVersion(a, 11));  // the same version: nothing to drop
  t.MarkPageCached(a);
  CHECK(t.ShowVersion(a, 12));  // another one: the kernel may hold version 11's size and pages
  CHECK(!t.Get(a)->page_cached);
  CHECK(t.Get(a)->shown_version == 12);
  CHECK(!t.ShowVersion(a, 12));  // told once
  // A lookup or a readdirplus entry handing the kernel another version records it.
  CHECK(t.Ensure("a", false, 1, 13) == a);
  CHECK(!t.ShowVersion(a, 13));
  t.MarkPageCached(a);
  CHECK(t.Pin("a", false, 14) == a);
  CHECK(!t.Get(a)->page_cached);
  CHECK(t.ShowVersion(a, 13));
  // 0 leaves the record alone; an inode never shown has nothing to drop.
  CHECK(t.Ensure("a", false, 1) == a);
  CHECK(t.Get(a)->shown_version == 13);
  InodeId b = t.Ensure("b", false, 1);
  CHECK(!t.ShowVersion(b, 5));
  CHECK(!t.ShowVersion(999, 5));
}

TEST_CASE("InodeTable: every path finds its own inode through growth, drops and kind changes") {
  // Paths long enough to live on the heap, many enough that both maps rehash several times;
  // the index by path views the paths the nodes hold, so this is what would catch a view
  // left pointing at a dropped node (and ASan would name it).
  InodeTable t;
  auto path = [](int i) {
    return "train/n" + std::to_string(i % 97) + "/ILSVRC2012_val_" + std::to_string(i) + ".JPEG";
  };
  std::vector<InodeId> ino(20000);
  for (int i = 0; i < 20000; ++i) ino[i] = t.Ensure(path(i), false, 1);
  for (int i = 0; i < 20000; i += 2) CHECK(t.Forget(ino[i], 1));            // every other one goes
  for (int i = 1; i < 20000; i += 4) ino[i] = t.Ensure(path(i), true, 1);   // some become dirs
  for (int i = 0; i < 20000; i += 2) ino[i] = t.Ensure(path(i), false, 1);  // the rest return
  REQUIRE(t.size() == 1 + 20000 + 5000);  // root, current inodes, detached old files
  for (int i = 0; i < 20000; ++i) {
    const std::optional<InodeId> found = t.Find(path(i));
    REQUIRE(found == std::optional<InodeId>(ino[i]));
    const std::optional<InodeTable::Node> node = t.Get(ino[i]);
    REQUIRE(node);
    REQUIRE(node->path == path(i));
    REQUIRE(node->is_dir == (i % 4 == 1));
  }
  CHECK(t.Find("") == std::optional<InodeId>(kRootInodeId));
}

TEST_CASE("InodeTable: the page cache may be kept only for the version last opened") {
  InodeTable t;
  const InodeId a = t.Ensure("a", false, 1);
  CHECK(t.OpenPages(a, 7));        // nothing was opened: nothing to drop
  CHECK(t.OpenPages(a, 7));        // the same version again
  CHECK_FALSE(t.OpenPages(a, 8));  // another version: drop what the kernel holds
  CHECK(t.OpenPages(a, 8));
  t.ForgetPages(a);  // a writer opened it: unknown pages
  CHECK_FALSE(t.OpenPages(a, 8));
  CHECK(t.OpenPages(a, 8));
  CHECK_FALSE(t.OpenPages(999, 8));  // an unknown inode
}

TEST_CASE("InodeTable: a detached inode lives on for its references, the path gets a new one") {
  InodeTable t;
  const InodeId a = t.Ensure("a", false, 1);
  CHECK(t.Detach(a));
  CHECK_FALSE(t.Detach(a));  // once
  REQUIRE(t.Get(a));
  CHECK(t.Get(a)->detached);
  CHECK(t.Get(a)->path == "a");
  const InodeId b = t.Ensure("a", false, 1);
  CHECK(b != a);
  CHECK(t.Find("a") == b);
  CHECK_FALSE(t.Get(b)->detached);
  CHECK(t.Forget(a, 1));  // the last reference: gone, and the path keeps its new inode
  CHECK_FALSE(t.Get(a));
  CHECK(t.Find("a") == b);
  CHECK_FALSE(t.Detach(kRootInodeId));
}

TEST_CASE("InodeTable: bytes count every inode with its path") {
  InodeTable t;
  const size_t empty = t.bytes();
  CHECK(empty > 0);  // the root
  const InodeId a = t.Ensure(std::string(100, 'a'), false, 1);
  const size_t one = t.bytes();
  CHECK(one > empty + 100);
  CHECK(one < empty + 400);
  t.Move(std::string(100, 'a'), std::string(300, 'b'));
  CHECK(t.bytes() > one + 150);
  CHECK(t.Forget(a, 1));
  CHECK(t.bytes() == empty);
  auto counter = t.bytes_counter();
  CHECK(counter->load() == empty);
}

namespace {

std::string RecordPath() { return "/tmp/inode_table_test." + std::to_string(getpid()) + ".nodes"; }

}  // namespace

TEST_CASE("InodeTable: a restored table has every node the kernel referenced, as it was") {
  std::optional<InodeId> file, dir, moved, detached, pinned, dropped;
  {
    auto log = ossmount::RecordLog::Create(RecordPath());
    REQUIRE(log.ok());
    InodeTable t;
    t.RecordTo(std::move(*log));
    dir = t.Ensure("train", true, 1);
    file = t.Ensure("train/a.jpg", false, 2);
    moved = t.Ensure("old/b.jpg", false, 1);
    t.Ensure("old", true, 1);
    t.Move("old", "new");
    detached = t.Ensure("train/c.jpg", false, 1);
    REQUIRE(t.Detach(*detached));
    pinned = t.Pin("train/only-listed.jpg", false);  // a listing's entry: never in the kernel
    dropped = t.Ensure("train/gone.jpg", false, 1);
    REQUIRE(t.Forget(*dropped, 1));
    const InodeId listed = t.Pin("train/plus.jpg", false);  // a readdirplus entry
    REQUIRE(t.AddLookup(listed));
    REQUIRE(t.record_error().ok());
  }
  auto records = ossmount::RecordLog::Load(RecordPath());
  REQUIRE(records.ok());
  InodeTable restored;
  CHECK(restored.Restore(*records) == 6);  // train, a, b, new, c (detached), plus
  CHECK(restored.Find("train") == dir);
  CHECK(restored.Find("train/a.jpg") == file);
  CHECK(restored.Find("new/b.jpg") == moved);
  CHECK_FALSE(restored.Find("old/b.jpg"));
  CHECK(restored.Get(*dir)->is_dir);
  CHECK_FALSE(restored.Get(*file)->is_dir);
  // A detached node keeps its number for the kernel but not its path.
  REQUIRE(restored.Get(*detached));
  CHECK(restored.Get(*detached)->detached);
  CHECK_FALSE(restored.Find("train/c.jpg"));
  CHECK_FALSE(restored.Get(*pinned));
  CHECK_FALSE(restored.Get(*dropped));
  CHECK(restored.Find("train/plus.jpg"));
  // The kernel's count died with the process: no FORGET drops a restored node.
  CHECK_FALSE(restored.Forget(*file, 1000000));
  CHECK(restored.Get(*file));
  // New nodes never reuse a restored number.
  const InodeId next = restored.Ensure("train/new.jpg", false, 1);
  CHECK(next > *dropped);
  CHECK(next > *pinned);
  std::remove(RecordPath().c_str());
}

TEST_CASE("InodeTable: the record log stays near the size of what the kernel holds") {
  auto log = ossmount::RecordLog::Create(RecordPath());
  REQUIRE(log.ok());
  InodeTable t;
  t.RecordTo(std::move(*log));
  const std::string padding(200, 'x');
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 500; ++i) {
      const InodeId ino = t.Ensure("dir/" + padding + std::to_string(i), false, 1);
      t.Forget(ino, 1);
    }
  }
  const InodeId kept = t.Ensure("dir/kept", false, 1);
  REQUIRE(t.record_error().ok());
  struct stat st {};
  REQUIRE(stat(RecordPath().c_str(), &st) == 0);
  // 10,000 nodes came and went (about 2.5 MB of records): the log was rewritten as it grew.
  CHECK(st.st_size < (2 << 20) + 4096);
  auto records = ossmount::RecordLog::Load(RecordPath());
  REQUIRE(records.ok());
  CHECK(records->size() == 1);
  CHECK(records->count(kept) == 1);
  std::remove(RecordPath().c_str());
}
