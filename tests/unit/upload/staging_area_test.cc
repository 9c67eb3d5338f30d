// StagingArea and StagedFile: reads and writes at any offset with zeros in holes, truncation
// both ways, the byte budget (kNoSpace, nothing taken), files leaving no trace in the
// directory, and a directory that cannot hold files failing Open with its name.
#include <filesystem>
#include <fstream>

#include "support/temp_dir.h"
#include "upload/staging_area.h"
#include "upload_harness.h"

using namespace uploadtest;
using ossmount::testing::TempDir;

namespace {

std::string ReadBack(const StagedFile& file) {
  std::string out(file.size(), '?');
  auto got = file.Read(0, out.data(), out.size());
  REQUIRE(got.ok());
  out.resize(*got);
  return out;
}

TEST_CASE("StagedFile: writes anywhere, zeros in holes, truncation both ways") {
  TempDir dir;
  auto area = StagingArea::Open(dir.path() + "/s", 1 << 20);
  REQUIRE(area.ok());
  auto file = (*area)->Create();
  REQUIRE(file.ok());
  StagedFile& f = **file;
  REQUIRE(f.Write(5, "world", 5).ok());
  REQUIRE(f.Write(0, "hello", 5).ok());
  CHECK(ReadBack(f) == "helloworld");
  REQUIRE(f.Write(20, "!", 1).ok());
  CHECK(f.size() == 21);
  CHECK(ReadBack(f) == std::string("helloworld") + std::string(10, '\0') + "!");
  REQUIRE(f.Truncate(3).ok());
  CHECK(ReadBack(f) == "hel");
  REQUIRE(f.Truncate(6).ok());
  CHECK(ReadBack(f) == std::string("hel\0\0\0", 6));
  char buf[8];
  auto past = f.Read(100, buf, sizeof buf);
  REQUIRE(past.ok());
  CHECK(*past == 0);
  CHECK((*area)->used() == 6);
  // Unnamed files: nothing in the directory, ever.
  CHECK(std::filesystem::is_empty(dir.path() + "/s"));
}

TEST_CASE("StagingArea: the budget is shared, refused writes take nothing, closing frees") {
  TempDir dir;
  auto area = StagingArea::Open(dir.path(), 100);
  REQUIRE(area.ok());
  auto a = (*area)->Create();
  auto b = (*area)->Create();
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const std::string sixty(60, 'a');
  REQUIRE((*a)->Write(0, sixty.data(), sixty.size()).ok());
  CHECK((*area)->used() == 60);
  Status refused = (*b)->Write(0, sixty.data(), sixty.size());
  CHECK(refused.code() == ErrorCode::kNoSpace);
  CHECK((*b)->size() == 0);
  CHECK((*area)->used() == 60);
  CHECK((*b)->Truncate(50).code() == ErrorCode::kNoSpace);
  REQUIRE((*b)->Write(0, sixty.data(), 40).ok());  // exactly to the limit
  CHECK((*area)->used() == 100);
  // Rewriting bytes it holds costs nothing more.
  REQUIRE((*a)->Write(10, sixty.data(), 50).ok());
  a->reset();
  CHECK((*area)->used() == 40);
  REQUIRE((*b)->Write(40, sixty.data(), 60).ok());
}

TEST_CASE("StagingArea: a directory that cannot hold files is named in the error") {
  TempDir dir;
  const std::string file = dir.path() + "/not-a-dir";
  { std::ofstream(file) << "x"; }
  auto area = StagingArea::Open(file + "/staging", 1 << 20);
  REQUIRE_FALSE(area.ok());
  CHECK(area.status().code() == ErrorCode::kInvalidArgument);
  CHECK(area.status().message().find(file) != std::string::npos);
}

}  // namespace
