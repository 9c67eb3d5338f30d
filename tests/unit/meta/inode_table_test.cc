#include <catch2/catch.hpp>

#include "meta/inode_table.h"

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
    "InodeTable: a path that changes kind gets a new inode; the old one lives until forgotten") {
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
