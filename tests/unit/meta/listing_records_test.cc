// ListingRecords: the listings a cache holds, kept in a file for the next daemon process.
#include "meta/listing_records.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <vector>

namespace ossmount::meta {
namespace {

struct TempFile {
  std::string path = "/tmp/listing_records_test." + std::to_string(getpid()) + "." +
                     std::to_string(reinterpret_cast<uintptr_t>(this));
  ~TempFile() {
    std::remove(path.c_str());
    std::remove((path + ".new").c_str());
  }
};

std::shared_ptr<const DirSnapshot> RecordedListing(int files,
                                                   const std::string& stem = "n01440764_") {
  std::vector<DirChild> children;
  for (int i = 0; i < files; ++i) {
    DirChild c;
    char name[64];
    std::snprintf(name, sizeof name, "%s%06d.JPEG", stem.c_str(), i);
    c.name = name;
    c.attr.size = 100000 + static_cast<uint64_t>(i);
    c.attr.mtime_sec = 1700000000 + i;
    c.attr.etag.append("\"").append(std::to_string(1000000007ULL * (i + 1))).append("\"");
    if (i % 2 == 0) c.attr.crc64 = 0xfedcba9876543210ULL + static_cast<uint64_t>(i);
    children.push_back(std::move(c));
  }
  return std::make_shared<const DirSnapshot>(children);
}

std::vector<ListingRecords::Restored> LoadFile(const std::string& path) {
  auto records = RecordLog::Load(path);
  REQUIRE(records.ok());
  return ListingRecords::Decode(*records);
}

void CheckSameListing(const DirSnapshot& a, const DirSnapshot& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const auto x = a.child(i), y = b.child(i);
    CHECK(x.name == y.name);
    CHECK(x.kind == y.kind);
    CHECK(x.size == y.size);
    CHECK(x.mtime_sec == y.mtime_sec);
    CHECK(x.etag == y.etag);
    CHECK(x.crc64 == y.crc64);
    CHECK(x.appendable == y.appendable);
  }
  CHECK(a.hidden().invalid == b.hidden().invalid);
  CHECK(a.hidden().clashes == b.hidden().clashes);
}

TEST_CASE("ListingRecords: a listing's record decodes to the same listing", "[listing_records]") {
  std::vector<DirChild> children(4);
  children[0].name = "a.lnk";
  children[0].attr.kind = NodeKind::kSymlink;
  children[1].name = "b";
  children[1].attr = DirAttr();
  children[2].name = "c.log";
  children[2].attr.size = 77;
  children[2].attr.appendable = true;
  children[2].attr.etag = "\"e\"";
  children[3].name = "d.bin";
  children[3].attr.size = 1;
  children[3].attr.crc64 = 0;  // a CRC of zero is still a CRC
  const DirSnapshot listing(children, HiddenCounts{2, 1});
  for (TimePoint expiry : {TimePoint::max(), TimePoint(std::chrono::seconds(12345))}) {
    const std::string payload = ListingRecords::Encode("x/y", listing, expiry);
    auto decoded = ListingRecords::DecodeOne(payload);
    REQUIRE(decoded);
    CHECK(decoded->dir_path == "x/y");
    CHECK(decoded->expiry == expiry);
    CheckSameListing(*decoded->listing, listing);
  }
  // The root (""), and an empty directory.
  auto root =
      ListingRecords::DecodeOne(ListingRecords::Encode("", DirSnapshot(), TimePoint::max()));
  REQUIRE(root);
  CHECK(root->dir_path.empty());
  CHECK(root->listing->empty());
}

TEST_CASE("ListingRecords: damaged records are left out", "[listing_records]") {
  const std::string good = ListingRecords::Encode("d", *RecordedListing(3), TimePoint::max());
  CHECK(ListingRecords::DecodeOne(good));
  CHECK_FALSE(ListingRecords::DecodeOne(good.substr(0, good.size() - 1)));  // cut short
  std::string other_format = good;
  other_format[0] = 9;
  CHECK_FALSE(ListingRecords::DecodeOne(other_format));
  std::string flipped = good;
  flipped[flipped.size() - 3] ^= 0x55;  // inside the compressed children
  CHECK_FALSE(ListingRecords::DecodeOne(flipped));
  // A record filed under another directory's key (a hash collision, or damage) is not used.
  RecordLog::Records records{{42, good}};
  CHECK(ListingRecords::Decode(records).empty());
}

TEST_CASE("ListingRecords: kept listings reach the file, dropped ones leave it",
          "[listing_records]") {
  TempFile file;
  auto records = ListingRecords::Create(file.path, {});
  REQUIRE(records.ok());
  ListingRecords& r = **records;
  r.Kept("train/a", RecordedListing(100), TimePoint::max());
  r.Kept("train/b", RecordedListing(5, "b"), TimePoint(std::chrono::hours(1)));
  r.Kept("train/a", RecordedListing(101), TimePoint::max());  // replaced: the later one counts
  r.Flush();
  REQUIRE(r.error().ok());
  auto loaded = LoadFile(file.path);
  REQUIRE(loaded.size() == 2);
  for (const auto& l : loaded) {
    if (l.dir_path == "train/a") CheckSameListing(*l.listing, *RecordedListing(101));
    if (l.dir_path == "train/b") CHECK(l.expiry == TimePoint(std::chrono::hours(1)));
  }
  CHECK(r.recorded() == 2);
  // Dropped: out of the file before the call returns.
  r.Dropped("train/a");
  loaded = LoadFile(file.path);
  REQUIRE(loaded.size() == 1);
  CHECK(loaded[0].dir_path == "train/b");
  // Kept and dropped before the writer got to it: never written.
  r.Kept("train/c", RecordedListing(10, "c"), TimePoint::max());
  r.Dropped("train/c");
  r.Flush();
  loaded = LoadFile(file.path);
  REQUIRE(loaded.size() == 1);
  CHECK(loaded[0].dir_path == "train/b");
  r.Dropped("never/kept");  // nothing to do
}

TEST_CASE("ListingRecords: a new file starts with the restored listings", "[listing_records]") {
  TempFile first, second;
  {
    auto records = ListingRecords::Create(first.path, {});
    REQUIRE(records.ok());
    (*records)->Kept("a", RecordedListing(20), TimePoint::max());
    (*records)->Kept("b", RecordedListing(20, "b"), TimePoint::max());
    (*records)->Flush();
  }
  const auto restored = LoadFile(first.path);
  REQUIRE(restored.size() == 2);
  auto records = ListingRecords::Create(second.path, restored);
  REQUIRE(records.ok());
  CHECK((*records)->recorded() == 2);
  CHECK(LoadFile(second.path).size() == 2);
  (*records)->Dropped("a");  // known as recorded, so erased
  const auto left = LoadFile(second.path);
  REQUIRE(left.size() == 1);
  CHECK(left[0].dir_path == "b");
}

TEST_CASE("ListingRecords: a directory kept again and again does not grow the file",
          "[listing_records]") {
  TempFile file;
  auto records = ListingRecords::Create(file.path, {});
  REQUIRE(records.ok());
  ListingRecords& r = **records;
  r.Kept("big", RecordedListing(5000), TimePoint::max());
  r.Flush();
  const uint64_t one = r.bytes();
  CHECK(one < 5000 * 40);  // compressed: well under the 80-odd bytes a child takes in memory
  for (int i = 0; i < 40; ++i) {
    r.Kept("big", RecordedListing(5000 + i % 2), TimePoint::max());
    r.Flush();
  }
  // Rewritten whenever more than half of it (and at least 1 MiB) was dead records.
  CHECK(r.bytes() <= std::max<uint64_t>(2 * one + one, (uint64_t{1} << 20) + one));
  auto loaded = LoadFile(file.path);
  REQUIRE(loaded.size() == 1);
  CHECK(loaded[0].listing->size() == 5001);  // the last one kept (i = 39)
}

}  // namespace
}  // namespace ossmount::meta
