// ManifestIndex: lookups, listing order, prefixes, delimiter roll-up and pagination, checked
// directly and against FakeObjectClient's ListObjectsV2 over the same keys.
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "meta/manifest_index.h"
#include "support/fake_object_client.h"

using namespace ossmount;
using namespace ossmount::meta;

namespace {

ManifestIndex Build(const std::vector<std::string>& keys) {
  ManifestIndex::Builder b;
  uint32_t line = 0;
  for (const auto& k : keys) {
    ++line;
    b.Add(k, k.size(), std::string(1, 'e') + std::to_string(line), line);
  }
  std::vector<ManifestIndex::Builder::Duplicate> dups;
  ManifestIndex index = b.Finish(&dups);
  REQUIRE(dups.empty());
  return index;
}

std::vector<std::string> Keys(const ManifestIndex& index, const ManifestIndex::Page& page) {
  std::vector<std::string> out;
  for (size_t i : page.objects) out.emplace_back(index.at(i).key);
  return out;
}

using Strings = std::vector<std::string>;

}  // namespace

TEST_CASE("Entries are sorted bytewise and found by exact key") {
  ManifestIndex index = Build({"b", "a/x", "a-b", "a0", "a/", "\xc3\xa9", "A"});
  REQUIRE(index.size() == 7);
  Strings order;
  for (size_t i = 0; i < index.size(); ++i) order.emplace_back(index.at(i).key);
  CHECK(order == Strings{"A", "a-b", "a/", "a/x", "a0", "b", "\xc3\xa9"});
  auto i = index.Find("a/x");
  REQUIRE(i.has_value());
  CHECK(index.at(*i).size == 3);
  CHECK_FALSE(index.Find("a").has_value());
  CHECK_FALSE(index.Find("a/x/").has_value());
  CHECK(index.LowerBound("a") == 1);
  CHECK(index.LowerBound("\xff") == index.size());
  CHECK(index.MemoryBytes() >= index.size() * 24);
}

TEST_CASE("Each entry keeps its own size and etag") {
  ManifestIndex::Builder b;
  b.Add("k1", 10, "etag-one", 1);
  b.Add("k0", ManifestIndex::kUnknownSize, "", 2);
  ManifestIndex index = b.Finish(nullptr);
  auto e0 = index.at(*index.Find("k0"));
  auto e1 = index.at(*index.Find("k1"));
  CHECK(e0.size == ManifestIndex::kUnknownSize);
  CHECK(e0.etag.empty());
  CHECK(e1.size == 10);
  CHECK(e1.etag == "etag-one");
}

TEST_CASE("Duplicates keep the first line and report every later one") {
  ManifestIndex::Builder b;
  b.Add("x", 1, "", 1);
  b.Add("y", 1, "", 2);
  b.Add("x", 2, "", 3);
  b.Add("x", 3, "", 4);
  std::vector<ManifestIndex::Builder::Duplicate> dups;
  ManifestIndex index = b.Finish(&dups);
  CHECK(index.size() == 2);
  CHECK(index.at(*index.Find("x")).size == 1);
  REQUIRE(dups.size() == 2);
  CHECK(dups[0].line == 3);
  CHECK(dups[0].first_line == 1);
  CHECK(dups[1].line == 4);
  CHECK(dups[1].first_line == 1);
}

TEST_CASE("A delimiter listing rolls subtrees up into directories, in key order") {
  ManifestIndex index =
      Build({"train/c1/a.jpg", "train/c1/b.jpg", "train/c2/a.jpg", "train/readme", "train-x",
             "train/c1/deep/z", "val/c1/a.jpg", "train/", "train/c3/"});
  auto root = index.List("", "/", "", 1000);
  CHECK(Keys(index, root) == Strings{"train-x"});
  CHECK(root.prefixes == Strings{"train/", "val/"});
  CHECK_FALSE(root.truncated);

  auto train = index.List("train/", "/", "", 1000);
  CHECK(Keys(index, train) == Strings{"train/", "train/readme"});  // the marker is listed
  CHECK(train.prefixes == Strings{"train/c1/", "train/c2/", "train/c3/"});

  auto recursive = index.List("train/c1/", "", "", 1000);
  CHECK(Keys(index, recursive) == Strings{"train/c1/a.jpg", "train/c1/b.jpg", "train/c1/deep/z"});

  auto probe = index.List("train", "/", "", 100);  // what a name probe sends
  CHECK(Keys(index, probe) == Strings{"train-x"});
  CHECK(probe.prefixes == Strings{"train/"});

  auto none = index.List("nothing/", "/", "", 1000);
  CHECK(none.objects.empty());
  CHECK(none.prefixes.empty());
}

TEST_CASE("Pages follow continuation tokens without repeating or skipping") {
  std::vector<std::string> keys;
  for (int i = 0; i < 25; ++i) keys.push_back("d/f" + std::to_string(100 + i));
  for (int i = 0; i < 5; ++i) keys.push_back("d/sub" + std::to_string(i) + "/x");
  ManifestIndex index = Build(keys);
  Strings seen;
  std::string token;
  int pages = 0;
  while (true) {
    auto page = index.List("d/", "/", token, 7);
    ++pages;
    CHECK(page.objects.size() + page.prefixes.size() <= 7);
    for (auto& k : Keys(index, page)) seen.push_back(k);
    for (auto& p : page.prefixes) seen.push_back(p);
    if (!page.truncated) break;
    REQUIRE_FALSE(page.next_token.empty());
    token = page.next_token;
  }
  CHECK(pages == 5);  // 30 items, 7 per page
  CHECK(seen.size() == 30);
  CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == 30);
}

TEST_CASE("Listings agree with an object server's over random key sets") {
  boost::asio::io_context io;
  std::mt19937 rng(1234);
  const std::string alphabet = "ab/-.0\xff";
  for (int round = 0; round < 30; ++round) {
    auto fake = std::make_shared<testing::FakeObjectClient>(io);
    std::set<std::string> keys;
    int n = 1 + static_cast<int>(rng() % 60);
    while (static_cast<int>(keys.size()) < n) {
      std::string k;
      int len = 1 + static_cast<int>(rng() % 7);
      for (int i = 0; i < len; ++i) k += alphabet[rng() % alphabet.size()];
      keys.insert(k);
    }
    for (const auto& k : keys) fake->PutObject(k, "x");
    ManifestIndex index = Build(std::vector<std::string>(keys.begin(), keys.end()));
    std::vector<std::string> prefixes = {"", "a", "a/", "b/", "a/b", "/", "\xff"};
    for (const auto& prefix : prefixes) {
      for (const std::string delimiter : {"/", ""}) {
        for (int max_keys : {1, 2, 3, 1000}) {
          INFO("round " << round << " prefix '" << prefix << "' delimiter '" << delimiter
                        << "' max_keys " << max_keys);
          Strings expected, got;
          // The server's pages.
          std::string token;
          while (true) {
            ListRequest req{prefix, delimiter, token, max_keys};
            std::optional<Result<ListPage>> result;
            fake->List(req, [&](Result<ListPage> r) { result = std::move(r); });
            io.restart();
            io.run();
            REQUIRE(result.has_value());
            REQUIRE(result->ok());
            const ListPage& page = **result;
            for (const auto& o : page.objects) expected.push_back("o:" + o.key);
            for (const auto& p : page.common_prefixes) expected.push_back("p:" + p);
            expected.push_back("|");
            if (!page.truncated) break;
            token = page.next_continuation_token;
          }
          // The index's pages.
          token.clear();
          while (true) {
            auto page = index.List(prefix, delimiter, token, max_keys);
            for (const auto& k : Keys(index, page)) got.push_back("o:" + k);
            for (const auto& p : page.prefixes) got.push_back("p:" + p);
            got.push_back("|");
            if (!page.truncated) break;
            token = page.next_token;
          }
          CHECK(got == expected);
        }
      }
    }
  }
}
