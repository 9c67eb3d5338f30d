// Unit tests of the test server's pure pieces: range evaluation, listing pagination, key
// safety, fault planning, multipart assembly.
#include <catch2/catch.hpp>

#include "common/crc64.h"
#include "faults.h"
#include "listing.h"
#include "multipart.h"
#include "range.h"
#include "xml_writer.h"

using namespace ossmount::testserver;
using Kind = RangeResult::Kind;

TEST_CASE("EvaluateRange follows OSS legacy, OSS standard and S3 rules", "[range]") {
  struct Row {
    const char* header;
    RangeMode mode;
    Kind kind;
    uint64_t first, last;
  };
  const uint64_t size = 1000;
  const Row rows[] = {
      {"bytes=0-99", RangeMode::kOssLegacy, Kind::kPartial, 0, 99},
      {"bytes=500-", RangeMode::kOssLegacy, Kind::kPartial, 500, 999},
      {"bytes=-100", RangeMode::kOssLegacy, Kind::kPartial, 900, 999},
      {"bytes=500-2000", RangeMode::kOssLegacy, Kind::kWhole, 0, 0},
      {"bytes=1000-2000", RangeMode::kOssLegacy, Kind::kWhole, 0, 0},
      {"bytes=-2000", RangeMode::kOssLegacy, Kind::kWhole, 0, 0},
      {"bytes=500-2000", RangeMode::kOssStandard, Kind::kPartial, 500, 999},
      {"bytes=1000-2000", RangeMode::kOssStandard, Kind::kUnsatisfiable, 0, 0},
      {"bytes=-2000", RangeMode::kOssStandard, Kind::kPartial, 0, 999},
      {"bytes=1000-", RangeMode::kS3, Kind::kUnsatisfiable, 0, 0},
      {"bytes=999-", RangeMode::kS3, Kind::kPartial, 999, 999},
      {"bytes=-0", RangeMode::kS3, Kind::kUnsatisfiable, 0, 0},
      {"bytes=5-2", RangeMode::kS3, Kind::kWhole, 0, 0},
      {"bytes=a-b", RangeMode::kOssStandard, Kind::kWhole, 0, 0},
      {"items=0-1", RangeMode::kS3, Kind::kWhole, 0, 0},
      {"bytes=0-1,5-6", RangeMode::kS3, Kind::kPartial, 0, 1},
  };
  for (const auto& row : rows) {
    INFO(row.header << " mode " << static_cast<int>(row.mode));
    RangeResult r = EvaluateRange(row.header, size, row.mode);
    CHECK(r.kind == row.kind);
    if (row.kind == Kind::kPartial) {
      CHECK(r.first == row.first);
      CHECK(r.last == row.last);
    }
  }
  CHECK(EvaluateRange("bytes=0-", 0, RangeMode::kS3).kind == Kind::kUnsatisfiable);
  CHECK(EvaluateRange("bytes=0-", 0, RangeMode::kOssLegacy).kind == Kind::kWhole);
}

namespace {
ObjectIndex MakeIndex(const std::vector<std::string>& keys) {
  ObjectIndex index;
  for (const auto& k : keys) {
    auto obj = std::make_shared<ObjectInfo>();
    obj->key = k;
    index[k] = obj;
  }
  return index;
}

// Pages through a listing, collecting "k:" keys and "p:" prefixes.
std::vector<std::string> ListAll(const ObjectIndex& index, ListQuery q, int* pages) {
  std::vector<std::string> out;
  *pages = 0;
  while (true) {
    auto page = ListIndex(index, q);
    REQUIRE(page.ok());
    ++*pages;
    for (const auto& o : page->contents) out.push_back("k:" + o->key);
    for (const auto& p : page->common_prefixes) out.push_back("p:" + p);
    if (!page->truncated) break;
    REQUIRE(*pages < 1000);
    q.continuation_token = page->next_token;
  }
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

TEST_CASE("ListIndex paginates with delimiter and resumes after a common prefix", "[list]") {
  auto index = MakeIndex({"a/1", "a/2", "a/b/3", "b", "c/", "c/x", "d/e/f", "e"});
  ListQuery q;
  q.delimiter = "/";
  for (int max_keys : {1, 2, 3, 1000}) {
    q.max_keys = max_keys;
    int pages = 0;
    auto all = ListAll(index, q, &pages);
    CHECK(all == std::vector<std::string>{"k:b", "k:e", "p:a/", "p:c/", "p:d/"});
    CHECK(pages == (5 + max_keys - 1) / max_keys);
  }
  q.prefix = "a/";
  q.max_keys = 1;
  int pages = 0;
  CHECK(ListAll(index, q, &pages) == std::vector<std::string>{"k:a/1", "k:a/2", "p:a/b/"});
  q.prefix = "c/";
  CHECK(ListAll(index, q, &pages) == std::vector<std::string>{"k:c/", "k:c/x"});
}

TEST_CASE("ListIndex honours start-after, marker, and rejects foreign tokens", "[list]") {
  auto index = MakeIndex({"a", "b", "c/1", "c/2", "d"});
  ListQuery q;
  q.start_after = "b";
  auto page = ListIndex(index, q);
  REQUIRE(page.ok());
  REQUIRE(page->contents.size() == 3);
  CHECK(page->contents[0]->key == "c/1");

  ListQuery v1;
  v1.delimiter = "/";
  v1.marker = "c/";  // a common prefix returned as NextMarker: its subtree is skipped
  page = ListIndex(index, v1);
  REQUIRE(page.ok());
  REQUIRE(page->contents.size() == 1);
  CHECK(page->contents[0]->key == "d");
  CHECK(page->common_prefixes.empty());

  ListQuery bad;
  bad.continuation_token = "!!notours";
  CHECK(ListIndex(index, bad).status().code() == ossmount::ErrorCode::kInvalidArgument);
}

TEST_CASE("PrefixSuccessor and base64url round trip", "[list]") {
  CHECK(PrefixSuccessor("a/") == "a0");
  CHECK(PrefixSuccessor(std::string("a\xff", 2)) == "b");
  CHECK(PrefixSuccessor("") == "");
  for (std::string s :
       std::vector<std::string>{"", "k", "ka", "kab", std::string("p\x00\xff/", 4)}) {
    std::string back;
    REQUIRE(Base64UrlDecode(Base64UrlEncode(s), back));
    CHECK(back == s);
  }
}

TEST_CASE("KeyIsSafePath accepts only keys that stay below the bucket", "[store]") {
  CHECK(KeyIsSafePath("a"));
  CHECK(KeyIsSafePath("train/cls/img 1.jpg"));
  CHECK_FALSE(KeyIsSafePath(""));
  CHECK_FALSE(KeyIsSafePath("dir/"));
  CHECK_FALSE(KeyIsSafePath("a//b"));
  CHECK_FALSE(KeyIsSafePath("../x"));
  CHECK_FALSE(KeyIsSafePath("a/../../x"));
  CHECK_FALSE(KeyIsSafePath("a/./b"));
  CHECK_FALSE(KeyIsSafePath("/abs"));
  CHECK_FALSE(KeyIsSafePath(std::string(256, 'x')));
  CHECK(KeyIsSafePath(std::string(255, 'x')));
  CHECK_FALSE(KeyIsSafePath(std::string("a\0b", 3)));
}

TEST_CASE("FaultInjector is deterministic per seed and honours rates and ops", "[faults]") {
  FaultSettings s;
  s.error_rate = 0.3;
  s.reset_rate = 0.2;
  FaultInjector a(s, 42), b(s, 42), c(s, 7);
  int errors = 0, differ = 0;
  for (int i = 0; i < 2000; ++i) {
    FaultPlan pa = a.Plan(FaultOp::kGet), pb = b.Plan(FaultOp::kGet), pc = c.Plan(FaultOp::kGet);
    CHECK(pa.error == pb.error);
    CHECK(pa.cut == pb.cut);
    differ += pa.error != pc.error;
    errors += pa.error;
  }
  CHECK(differ > 0);
  CHECK(errors > 450);  // 600 expected; binomial sd ~20
  CHECK(errors < 750);
  // HEAD is not in the default fault ops: never faulted, but latency still applies.
  s.ttfb_ms = 35;
  FaultInjector d(s, 1);
  for (int i = 0; i < 100; ++i) {
    FaultPlan p = d.Plan(FaultOp::kHead);
    CHECK_FALSE(p.error);
    CHECK(p.cut == FaultPlan::Cut::kNone);
    CHECK(p.delay == std::chrono::milliseconds(35));
  }
}

TEST_CASE("Lognormal latency has the requested median", "[faults]") {
  FaultSettings s;
  s.ttfb_p50_ms = 30;
  s.ttfb_p99_ms = 120;
  FaultInjector f(s, 3);
  std::vector<int64_t> us;
  for (int i = 0; i < 4001; ++i) us.push_back(f.Plan(FaultOp::kGet).delay.count());
  std::sort(us.begin(), us.end());
  CHECK(us[2000] > 27000);
  CHECK(us[2000] < 33000);
  CHECK(us[3960] > 90000);
  CHECK(us[3960] < 160000);
}

TEST_CASE("FaultSettings::Set validates names and values", "[faults]") {
  FaultSettings s;
  CHECK(s.Set("error-rate", "0.5").ok());
  CHECK(s.error_rate == 0.5);
  CHECK_FALSE(s.Set("error-rate", "2").ok());
  CHECK_FALSE(s.Set("error-rate", "x").ok());
  CHECK_FALSE(s.Set("error-kinds", "500,Teapot").ok());
  CHECK(s.Set("error-kinds", "SlowDown").ok());
  CHECK(s.Set("fault-ops", "all").ok());
  CHECK(s.fault_ops.size() == 6);
  CHECK_FALSE(s.Set("nonsense", "1").ok());
}

TEST_CASE("Multipart Complete checks order, etags and part size, combines CRC", "[multipart]") {
  MultipartUploads m;
  std::string id = m.Initiate("b", "k", {});
  std::string p1(200, 'x'), p2(50, 'y');
  auto r1 = m.UploadPart(id, "b", "k", 1, p1);
  auto r2 = m.UploadPart(id, "b", "k", 2, p2);
  REQUIRE(r1.ok());
  REQUIRE(r2.ok());
  CHECK(m.UploadPart("nope", "b", "k", 1, "z").status().message().rfind("NoSuchUpload", 0) == 0);
  CHECK(m.UploadPart(id, "b", "k", 0, "z").status().message().rfind("InvalidArgument", 0) == 0);
  auto wrong_order = m.Complete(id, "b", "k", {{2, r2->first}, {1, r1->first}}, 0);
  CHECK(wrong_order.status().message().rfind("InvalidPartOrder", 0) == 0);
  auto wrong_etag = m.Complete(id, "b", "k", {{1, "\"00\""}, {2, r2->first}}, 0);
  CHECK(wrong_etag.status().message().rfind("InvalidPart", 0) == 0);
  auto too_small = m.Complete(id, "b", "k", {{1, r1->first}, {2, r2->first}}, 1000);
  CHECK(too_small.status().message().rfind("EntityTooSmall", 0) == 0);
  auto done = m.Complete(id, "b", "k", {{1, "\"" + r1->first + "\""}, {2, r2->first}}, 100);
  REQUIRE(done.ok());
  CHECK(done->data == p1 + p2);
  CHECK(done->crc == ossmount::Crc64(0, (p1 + p2).data(), p1.size() + p2.size()));
  CHECK(done->etag.size() == 34);
  CHECK(done->etag.substr(32) == "-2");
  CHECK(m.Abort(id, "b", "k").message().rfind("NoSuchUpload", 0) == 0);  // already completed
}
