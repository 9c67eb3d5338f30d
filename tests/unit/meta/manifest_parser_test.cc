// The manifest parser: both accepted forms, absolute URIs, and every malformed-line case
// reported with its line number.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "meta/manifest_parser.h"

using namespace ossmount;
using namespace ossmount::meta;

namespace {

const ManifestScope kScope{"bucket", "data/"};

Result<ManifestIndex> Parse(const std::string& text, ManifestStats* stats = nullptr,
                            const ManifestScope& scope = kScope) {
  std::istringstream in(text);
  return ParseManifest(in, "m.txt", scope, stats);
}

// The message of a parse that must fail.
std::string ErrorOf(const std::string& text, const ManifestScope& scope = kScope) {
  auto r = Parse(text, nullptr, scope);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kInvalidArgument);
  return r.status().message();
}

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("Tab form: key, size, optional etag with or without quotes, optional label") {
  ManifestStats stats;
  auto r = Parse(
      "train/a.jpg\t100\n"
      "train/b.jpg\t200\t\"0123ABCD\"\n"
      "train/c.jpg\t300\t0123abcd\tcat\n"
      "train/with space.jpg\t4\t\tdog\n",
      &stats);
  REQUIRE(r.ok());
  REQUIRE(r->size() == 4);
  auto a = r->at(*r->Find("train/a.jpg"));
  CHECK(a.size == 100);
  CHECK(a.etag.empty());
  CHECK(r->at(*r->Find("train/b.jpg")).etag == "0123ABCD");
  auto c = r->at(*r->Find("train/c.jpg"));
  CHECK(c.size == 300);
  CHECK(c.etag == "0123abcd");
  CHECK(c.complete());
  auto s = r->at(*r->Find("train/with space.jpg"));
  CHECK(s.size == 4);
  CHECK(s.etag.empty());  // an empty etag field means none
  CHECK(stats.lines == 4);
  CHECK(stats.entries == 4);
  CHECK(stats.without_etag == 2);
  CHECK(stats.without_size == 0);
}

TEST_CASE("Connector form: a key alone, or a key and a label separated by spaces") {
  ManifestStats stats;
  auto r = Parse(
      "Img/Sample001/img001-00001.png\n"
      "Img/Sample001/img001-00002.png label2\n"
      "  Img/Sample001/img001-00003.png   label3  \n",
      &stats);
  REQUIRE(r.ok());
  REQUIRE(r->size() == 3);
  for (const char* k : {"Img/Sample001/img001-00001.png", "Img/Sample001/img001-00002.png",
                        "Img/Sample001/img001-00003.png"}) {
    auto i = r->Find(k);
    REQUIRE(i.has_value());
    CHECK(r->at(*i).size == ManifestIndex::kUnknownSize);
    CHECK_FALSE(r->at(*i).complete());
  }
  CHECK(stats.without_size == 3);
}

TEST_CASE("Comments, blank lines, CRLF line ends and a byte order mark are accepted") {
  auto r = Parse("\xEF\xBB\xBF# a comment\r\n\r\n   \nx/y\t5\r\n\t\n#k\t1\nz\t6");
  REQUIRE(r.ok());
  CHECK(r->size() == 2);
  CHECK(r->Find("x/y").has_value());
  CHECK(r->Find("z").has_value());  // last line without a newline
  CHECK_FALSE(r->Find("#k").has_value());
}

TEST_CASE("Absolute URIs name the mounted bucket and lie under the mounted prefix") {
  auto r = Parse("oss://bucket/data/train/a.jpg\t1\ns3://bucket/data/b\t2\n");
  REQUIRE(r.ok());
  CHECK(r->Find("train/a.jpg").has_value());
  CHECK(r->Find("b").has_value());

  std::string other = ErrorOf("ok\t1\noss://elsewhere/data/x\t1\n");
  CHECK(Contains(other, "line 2: "));
  CHECK(Contains(other, "names bucket 'elsewhere', but the mount is of bucket 'bucket'"));

  std::string outside = ErrorOf("oss://bucket/other/x\t1\n");
  CHECK(Contains(outside, "line 1: "));
  CHECK(Contains(outside, "outside the mounted prefix 'data/'"));

  std::string itself = ErrorOf("oss://bucket/data/\t0\n");
  CHECK(Contains(itself, "names the mounted prefix, not an object"));
}

TEST_CASE("Relative keys are relative to an empty prefix too") {
  auto r = Parse("oss://bucket/top\t1\nrel\t2\n", nullptr, ManifestScope{"bucket", ""});
  REQUIRE(r.ok());
  CHECK(r->Find("top").has_value());
  CHECK(r->Find("rel").has_value());
}

TEST_CASE("Every malformed-line case is reported with its line number") {
  struct Case {
    const char* line;
    const char* expect;
  };
  const Case cases[] = {
      {"\t5", "the key is empty"},
      {"k\t", "the size field is empty"},
      {"k", nullptr},  // valid (connector form): checked below
      {"k\tabc", "is not a decimal number of bytes"},
      {"k\t-1", "is not a decimal number of bytes"},
      {"k\t1.5", "is not a decimal number of bytes"},
      {"k\t 1", "is not a decimal number of bytes"},
      {"k\t99999999999999999999", "is too large"},
      {"k\t1\te\tl\textra", "too many tab-separated fields (5"},
      {"k 1 etag", "3 space-separated fields"},
      {"k\t1\tab cd", "has a character an etag cannot have"},
      {"k\t1\tab\"cd", "has a character an etag cannot have"},
      {"k\t1\t\x01"
       "ab",
       "has a character an etag cannot have"},
      {"k\xff\xfe\t1", "not valid UTF-8"},
      {"k\xc0\xaf\t1", "not valid UTF-8"},      // overlong '/'
      {"k\xed\xa0\x80\t1", "not valid UTF-8"},  // a surrogate
      {"k\xe2\x82\t1", "not valid UTF-8"},      // truncated sequence
  };
  for (const Case& c : cases) {
    if (!c.expect) continue;
    INFO(c.line);
    // The bad line is line 3, after a comment and a good line.
    std::string msg = ErrorOf(std::string("# header\ngood\t1\n") + c.line + "\nalso-good\t2\n");
    CHECK(Contains(msg, "manifest m.txt: 1 malformed line:"));
    CHECK(Contains(msg, "line 3: "));
    CHECK(Contains(msg, c.expect));
  }
  std::string long_key = ErrorOf("good\t1\n" + std::string(1024 - 5, 'k') + "\t1\n");
  CHECK(Contains(long_key, "line 2: "));
  CHECK(Contains(long_key, "longer than 1023 bytes with the mounted prefix"));
  CHECK(Parse(std::string(1023 - 5, 'k') + "\t1\n").ok());  // exactly at the limit
  std::string long_etag = ErrorOf("k\t1\t" + std::string(257, 'e') + "\n");
  CHECK(Contains(long_etag, "the etag is longer than 256 bytes"));
}

TEST_CASE("A key given twice is reported at the later line against the first") {
  std::string msg = ErrorOf("a\t1\nb\t2\na\t3\nc\t4\na\t5\n");
  CHECK(Contains(msg, "2 malformed lines"));
  CHECK(Contains(msg, "line 3: the key 'a' repeats line 1"));
  CHECK(Contains(msg, "line 5: the key 'a' repeats line 1"));
}

TEST_CASE("Several errors are listed, capped, and the rest counted") {
  std::string text;
  for (int i = 0; i < 30; ++i) text += std::string(1, 'k') + std::to_string(i) + "\tnot-a-size\n";
  std::string msg = ErrorOf(text);
  CHECK(Contains(msg, "30 malformed lines"));
  CHECK(Contains(msg, "line 1: "));
  CHECK(Contains(msg, "line 20: "));
  CHECK_FALSE(Contains(msg, "line 21: "));
  CHECK(Contains(msg, "... and 10 more"));
}

TEST_CASE("A manifest without entries is rejected") {
  CHECK(Contains(ErrorOf(""), "no entries"));
  CHECK(Contains(ErrorOf("# only a comment\n\n"), "no entries"));
}

TEST_CASE("Control characters in keys are shown escaped in messages") {
  std::string msg = ErrorOf(
      "oss://other/a\x01"
      "b\t1\n");
  CHECK(Contains(msg, "a\\x01b"));
}

TEST_CASE("Hostile keys are kept as given: listings hide them, never mangle them") {
  auto r = Parse("a//b\t1\n../escape\t1\n/abs\t1\ndot/./x\t1\nok\t1\n");
  REQUIRE(r.ok());
  CHECK(r->size() == 5);
  CHECK(r->Find("a//b").has_value());
  CHECK(r->Find("../escape").has_value());
  CHECK(r->Find("/abs").has_value());
  CHECK(r->Find("dot/./x").has_value());
}

TEST_CASE("LoadManifestFile names the file when it cannot be read") {
  auto r = LoadManifestFile("/nonexistent/manifest.tsv", kScope);
  REQUIRE_FALSE(r.ok());
  CHECK(Contains(r.status().message(), "manifest /nonexistent/manifest.tsv: cannot open"));
  auto dir = LoadManifestFile("/tmp", kScope);
  REQUIRE_FALSE(dir.ok());
  CHECK(Contains(dir.status().message(), "/tmp"));
}
