// Unit tests of the test server's pure pieces: range evaluation, listing pagination, key
// safety, fault planning (read and write faults), multipart assembly and listings, request
// classification, write-request digests, stats.
#include <catch2/catch.hpp>

#include "api_util.h"
#include "common/crc64.h"
#include "faults.h"
#include "listing.h"
#include "multipart.h"
#include "range.h"
#include "request_info.h"
#include "stats.h"
#include "xml_writer.h"

using namespace ossmount::testserver;
using Kind = RangeResult::Kind;

namespace {
std::string Joined(const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += p;
  return out;
}
}  // namespace

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
  CHECK(s.fault_ops.size() == 7);
  CHECK(s.Set("fault-ops", "append").ok());
  CHECK(s.fault_ops == std::set<FaultOp>{FaultOp::kAppend});
  CHECK(s.ToJson().find("\"fault-ops\":[\"append\"]") != std::string::npos);
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
  CHECK(Joined(done->pieces) == p1 + p2);
  CHECK(done->crc == ossmount::Crc64(0, (p1 + p2).data(), p1.size() + p2.size()));
  CHECK(done->etag.size() == 34);
  CHECK(done->etag.substr(32) == "-2");
  CHECK(m.Abort(id, "b", "k").message().rfind("NoSuchUpload", 0) == 0);  // already completed
}

TEST_CASE("A failed Complete leaves the upload open, and a good one consumes it", "[multipart]") {
  MultipartUploads m;
  std::string id = m.Initiate("b", "k", {});
  CHECK(m.IsOpen(id, "b", "k"));
  CHECK_FALSE(m.IsOpen(id, "b", "other"));
  CHECK_FALSE(m.IsOpen(id, "other", "k"));
  auto r1 = m.UploadPart(id, "b", "k", 1, std::string(10, 'a'));
  REQUIRE(r1.ok());
  CHECK(m.Complete(id, "b", "k", {{1, "\"BAD\""}}, 0).status().message().rfind("InvalidPart", 0) ==
        0);
  CHECK(m.Complete(id, "b", "k", {}, 0).status().message().rfind("InvalidArgument", 0) == 0);
  CHECK(m.Complete(id, "b", "other", {{1, r1->first}}, 0)
            .status()
            .message()
            .rfind("NoSuchUpload", 0) == 0);
  CHECK(m.open_count() == 1);
  // Replacing a part keeps only the newest bytes.
  auto r1b = m.UploadPart(id, "b", "k", 1, "new");
  REQUIRE(r1b.ok());
  CHECK(m.Complete(id, "b", "k", {{1, r1->first}}, 0).status().message().rfind("InvalidPart", 0) ==
        0);
  auto done = m.Complete(id, "b", "k", {{1, r1b->first}}, 0);
  REQUIRE(done.ok());
  CHECK(Joined(done->pieces) == "new");
  CHECK(done->crc == ossmount::Crc64(0, "new", 3));
  CHECK(done->options.object_type == "Multipart");
  CHECK(m.open_count() == 0);
  CHECK_FALSE(m.IsOpen(id, "b", "k"));
}

TEST_CASE("Multipart listings page by key and upload id, and by part number", "[multipart]") {
  MultipartUploads m;
  std::vector<std::string> ids = {m.Initiate("b", "x/1", {}), m.Initiate("b", "x/1", {}),
                                  m.Initiate("b", "x/2", {}), m.Initiate("b", "y", {}),
                                  m.Initiate("other", "x/1", {})};
  std::vector<std::string> x1 = {ids[0], ids[1]};
  std::sort(x1.begin(), x1.end());
  UploadListQuery q;
  q.prefix = "x/";
  q.max_uploads = 2;
  UploadListPage p1 = m.List("b", q);
  REQUIRE(p1.uploads.size() == 2);
  CHECK(p1.truncated);
  CHECK(p1.uploads[0].key == "x/1");
  CHECK(p1.uploads[0].upload_id == x1[0]);
  CHECK(p1.uploads[1].upload_id == x1[1]);
  CHECK(p1.next_key_marker == "x/1");
  CHECK(p1.next_upload_id_marker == x1[1]);
  q.key_marker = p1.next_key_marker;
  q.upload_id_marker = p1.next_upload_id_marker;
  UploadListPage p2 = m.List("b", q);
  REQUIRE(p2.uploads.size() == 1);
  CHECK_FALSE(p2.truncated);
  CHECK(p2.uploads[0].upload_id == ids[2]);
  // key-marker alone skips every upload of that key.
  q = UploadListQuery();
  q.key_marker = "x/1";
  UploadListPage p3 = m.List("b", q);
  REQUIRE(p3.uploads.size() == 2);
  CHECK(p3.uploads[0].key == "x/2");
  CHECK(p3.uploads[1].key == "y");
  CHECK(m.List("b", UploadListQuery()).uploads.size() == 4);
  CHECK(m.All().size() == 5);

  for (int n : {5, 2, 9}) REQUIRE(m.UploadPart(ids[3], "b", "y", n, std::string(n, 'z')).ok());
  auto a = m.ListParts(ids[3], "b", "y", 0, 2);
  REQUIRE(a.ok());
  REQUIRE(a->parts.size() == 2);
  CHECK(a->parts[0].number == 2);
  CHECK(a->parts[0].size == 2);
  CHECK(a->parts[0].crc == ossmount::Crc64(0, "zz", 2));
  CHECK(a->parts[1].number == 5);
  CHECK(a->truncated);
  CHECK(a->next_marker == 5);
  auto b = m.ListParts(ids[3], "b", "y", a->next_marker, 2);
  REQUIRE(b.ok());
  REQUIRE(b->parts.size() == 1);
  CHECK(b->parts[0].number == 9);
  CHECK_FALSE(b->truncated);
  CHECK(m.ListParts("nope", "b", "y", 0, 2).status().message().rfind("NoSuchUpload", 0) == 0);
  auto all = m.All();
  auto y = std::find_if(all.begin(), all.end(), [&](const auto& u) { return u.key == "y"; });
  REQUIRE(y != all.end());
  CHECK(y->parts == 3);
  CHECK(y->bytes == 16);
}

TEST_CASE("Write faults: errors, body cuts and lost Completes, scoped by prefix", "[faults]") {
  FaultSettings s;
  CHECK(s.Set("write-error-rate", "0.5").ok());
  CHECK(s.Set("write-reset-rate", "1").ok());
  CHECK(s.Set("write-truncate-rate", "1").ok());
  CHECK(s.Set("lost-complete-rate", "1").ok());
  CHECK(s.Set("write-fault-prefix", "ckpt/").ok());
  CHECK(s.Set("write-error-kinds", "503,SlowDown").ok());
  CHECK_FALSE(s.Set("write-error-kinds", "").ok());
  CHECK_FALSE(s.Set("write-error-kinds", "418").ok());
  CHECK_FALSE(s.Set("lost-complete-rate", "1.5").ok());
  CHECK(s.ToJson().find("\"write-fault-prefix\":\"ckpt/\"") != std::string::npos);
  CHECK(s.ToJson().find("\"lost-complete-rate\":1") != std::string::npos);

  FaultInjector inj(s, 3);
  const WriteTarget in{"ckpt/a", false}, out{"data/a", false};
  int errors = 0, resets = 0;
  for (int i = 0; i < 1000; ++i) {
    FaultPlan p = inj.Plan(FaultOp::kPut, &in);
    if (p.error) {
      ++errors;
      CHECK(p.write_error);
      CHECK(p.error_kind.status == 503);
      CHECK(p.body_cut == FaultPlan::BodyCut::kNone);  // an error is the whole fault
    } else {
      resets += p.body_cut == FaultPlan::BodyCut::kReset;  // reset wins over truncate
      CHECK(p.body_cut_fraction >= 0);
      CHECK(p.body_cut_fraction < 1);
    }
    FaultPlan q = inj.Plan(FaultOp::kPut, &out);
    CHECK_FALSE(q.error);
    CHECK(q.body_cut == FaultPlan::BodyCut::kNone);
    FaultPlan read = inj.Plan(FaultOp::kGet);  // not a write: no write faults
    CHECK_FALSE(read.error);
    CHECK(read.body_cut == FaultPlan::BodyCut::kNone);
  }
  CHECK(errors > 430);  // 500 expected
  CHECK(errors < 570);
  CHECK(resets == 1000 - errors);

  // Lost answers only for Complete, and only when the body was not cut.
  FaultSettings lost;
  lost.lost_complete_rate = 1;
  FaultInjector li(lost, 4);
  const WriteTarget complete{"k", true}, part{"k", false};
  CHECK(li.Plan(FaultOp::kPut, &complete).lose_answer);
  CHECK_FALSE(li.Plan(FaultOp::kPut, &part).lose_answer);
  // Lost copy answers only for copies.
  FaultSettings lost_copies;
  lost_copies.lost_copy_rate = 1;
  FaultInjector lc(lost_copies, 4);
  const WriteTarget copy{"k", false, true};
  CHECK(lc.Plan(FaultOp::kPut, &copy).lose_answer);
  CHECK_FALSE(lc.Plan(FaultOp::kPut, &part).lose_answer);
  CHECK_FALSE(lc.Plan(FaultOp::kPut, &complete).lose_answer);
  // Adding write settings leaves the read-fault stream of a seed unchanged.
  FaultSettings r1, r2 = r1;
  r1.error_rate = r2.error_rate = 0.5;
  r2.write_reset_rate = 0.5;
  FaultInjector a(r1, 9), b(r2, 9);
  for (int i = 0; i < 200; ++i) CHECK(a.Plan(FaultOp::kGet).error == b.Plan(FaultOp::kGet).error);
}

namespace {
HttpRequest MakeRequest(const std::string& method, const std::string& target,
                        std::vector<std::pair<std::string, std::string>> headers = {},
                        std::string body = "") {
  HttpRequest req;
  req.method_string(method);
  req.target(target);
  req.set(boost::beast::http::field::host, "127.0.0.1:1");
  for (auto& [k, v] : headers) req.set(k, v);
  req.body() = std::move(body);
  return req;
}

Op OpOf(const HttpRequest& req) {
  auto info = ClassifyRequest(req, [](const std::string&) { return true; });
  REQUIRE(info.ok());
  return info->op;
}
}  // namespace

TEST_CASE("ClassifyRequest tells the write and multipart operations apart", "[request]") {
  const std::pair<std::string, std::string> copy{"x-oss-copy-source", "/b/src"};
  CHECK(OpOf(MakeRequest("PUT", "/b/k")) == Op::kPutObject);
  CHECK(OpOf(MakeRequest("PUT", "/b/k", {copy})) == Op::kCopyObject);
  CHECK(OpOf(MakeRequest("PUT", "/b/k", {{"x-amz-copy-source", "b/src"}})) == Op::kCopyObject);
  CHECK(OpOf(MakeRequest("PUT", "/b/k?partNumber=1&uploadId=u")) == Op::kUploadPart);
  CHECK(OpOf(MakeRequest("PUT", "/b/k?partNumber=1&uploadId=u", {copy})) == Op::kUploadPartCopy);
  CHECK(OpOf(MakeRequest("POST", "/b/k?uploads")) == Op::kInitiateMultipart);
  CHECK(OpOf(MakeRequest("POST", "/b/k?uploadId=u")) == Op::kCompleteMultipart);
  CHECK(OpOf(MakeRequest("DELETE", "/b/k?uploadId=u")) == Op::kAbortMultipart);
  CHECK(OpOf(MakeRequest("GET", "/b/k?uploadId=u")) == Op::kListParts);
  CHECK(OpOf(MakeRequest("GET", "/b/?uploads")) == Op::kListMultipartUploads);
  CHECK(OpOf(MakeRequest("POST", "/b/?delete")) == Op::kDeleteMultiple);
  CHECK(OpOf(MakeRequest("DELETE", "/b/k")) == Op::kDeleteObject);
  CHECK(IsWriteOp(Op::kUploadPartCopy));
  CHECK(IsWriteOp(Op::kDeleteMultiple));
  CHECK_FALSE(IsWriteOp(Op::kListParts));
  CHECK(StatOpFor(Op::kUploadPartCopy) == StatOp::kUploadPartCopy);
  CHECK(FaultOpFor(Op::kListMultipartUploads) == FaultOp::kList);
}

TEST_CASE("ClassifyRequest knows AppendObject and the symlink operations on OSS only",
          "[request]") {
  const std::pair<std::string, std::string> s3{"x-amz-content-sha256", "UNSIGNED-PAYLOAD"};
  CHECK(OpOf(MakeRequest("POST", "/b/k?append&position=0")) == Op::kAppendObject);
  CHECK(OpOf(MakeRequest("POST", "/b/k?append")) == Op::kAppendObject);  // 400 there, not 501
  CHECK(OpOf(MakeRequest("PUT", "/b/k?symlink")) == Op::kPutSymlink);
  CHECK(OpOf(MakeRequest("GET", "/b/k?symlink")) == Op::kGetSymlink);
  // S3 has neither: the requests mean what they meant before.
  CHECK(OpOf(MakeRequest("POST", "/b/k?append&position=0", {s3})) == Op::kUnsupported);
  CHECK(OpOf(MakeRequest("PUT", "/b/k?symlink", {s3})) == Op::kPutObject);
  CHECK(OpOf(MakeRequest("GET", "/b/k?symlink", {s3})) == Op::kGetObject);
  // The multipart sub-resources still win.
  CHECK(OpOf(MakeRequest("POST", "/b/k?uploads&append")) == Op::kInitiateMultipart);
  CHECK(OpOf(MakeRequest("GET", "/b/k?uploadId=u&symlink")) == Op::kListParts);
  CHECK(IsWriteOp(Op::kAppendObject));
  CHECK(IsWriteOp(Op::kPutSymlink));
  CHECK_FALSE(IsWriteOp(Op::kGetSymlink));
  CHECK(StatOpFor(Op::kAppendObject) == StatOp::kAppend);
  CHECK(StatOpFor(Op::kPutSymlink) == StatOp::kPutSymlink);
  CHECK(StatOpFor(Op::kGetSymlink) == StatOp::kGetSymlink);
  CHECK(FaultOpFor(Op::kAppendObject) == FaultOp::kAppend);
  CHECK(FaultOpFor(Op::kPutSymlink) == FaultOp::kPut);
  CHECK(FaultOpFor(Op::kGetSymlink) == FaultOp::kHead);
}

TEST_CASE("CheckContentDigest: OSS and S3 codes, required digests, S3 flexible checksums",
          "[digest]") {
  RequestInfo oss, s3;
  s3.dialect = Dialect::kS3;
  const std::string body = "<Delete/>";
  auto good = MakeRequest("POST", "/b/?delete", {{"Content-MD5", Md5Base64(body)}}, body);
  auto wrong = MakeRequest("POST", "/b/?delete", {{"Content-MD5", Md5Base64("x")}}, body);
  auto malformed = MakeRequest("POST", "/b/?delete", {{"Content-MD5", "abc"}}, body);
  auto none = MakeRequest("POST", "/b/?delete", {}, body);
  auto code = [](const std::optional<Response>& r) -> std::string {
    if (!r) return "ok";
    std::string b(*r->body);
    auto at = b.find("<Code>");
    return std::to_string(r->status) + " " + b.substr(at + 6, b.find("</Code>") - at - 6);
  };
  CHECK(code(CheckContentDigest(oss, good, true)) == "ok");
  CHECK(code(CheckContentDigest(s3, good, true)) == "ok");
  CHECK(code(CheckContentDigest(oss, wrong, false)) == "400 InvalidDigest");
  CHECK(code(CheckContentDigest(s3, wrong, false)) == "400 BadDigest");
  CHECK(code(CheckContentDigest(s3, malformed, false)) == "400 InvalidDigest");
  CHECK(code(CheckContentDigest(oss, none, false)) == "ok");
  CHECK(code(CheckContentDigest(oss, none, true)) == "400 MissingArgument");
  CHECK(code(CheckContentDigest(s3, none, true)) == "400 InvalidRequest");
  // SHA-256 of "<Delete/>", base64 (openssl dgst -sha256 -binary | base64).
  auto sha = MakeRequest(
      "POST", "/b/?delete",
      {{"x-amz-checksum-sha256", "4gAPax/B23lWJt2vnBMyQVfp9Wy3ggtA18MlOgjuW5E="}}, body);
  auto bad_sha = MakeRequest("POST", "/b/?delete", {{"x-amz-checksum-sha256", "AAAA"}}, body);
  CHECK(code(CheckContentDigest(s3, sha, true)) == "ok");
  CHECK(code(CheckContentDigest(s3, bad_sha, true)) == "400 BadDigest");
  CHECK(code(CheckContentDigest(oss, sha, true)) == "400 MissingArgument");  // S3 only

  auto forbid = MakeRequest("PUT", "/b/k", {{"x-oss-forbid-overwrite", "True"}});
  auto star = MakeRequest("PUT", "/b/k", {{"If-None-Match", "*"}});
  CHECK(OverwriteForbidden(oss, forbid, false));
  CHECK(OverwriteForbidden(s3, forbid, false));
  CHECK(OverwriteForbidden(s3, star, true));
  CHECK_FALSE(OverwriteForbidden(s3, star, false));
  CHECK_FALSE(OverwriteForbidden(oss, star, true));
  CHECK(OverwriteRefused(oss).status == 409);
  CHECK(OverwriteRefused(s3).status == 412);
}

TEST_CASE("Stats JSON names the write operations, write faults and gauges", "[stats]") {
  ServerStats st;
  st.Count(StatOp::kUploadPartCopy);
  st.Count(StatOp::kListMultipartUploads);
  st.Count(StatOp::kListParts);
  st.CountFault(StatFault::kLostComplete);
  st.CountFault(StatFault::kLostCopy);
  st.AddDeletedKeys(7);
  std::string json = st.ToJson({{"open_multipart_uploads", 3}});
  for (const char* want :
       {"\"requests\":3,", "\"UPLOAD_PART_COPY\":1", "\"LIST_MULTIPART_UPLOADS\":1",
        "\"LIST_PARTS\":1", "\"lost_complete\":1", "\"lost_copy\":1", "\"write_error\":0",
        "\"body_reset\":0", "\"body_truncate\":0", "\"deleted_keys\":7",
        "\"open_multipart_uploads\":3}"}) {
    INFO(want);
    CHECK(json.find(want) != std::string::npos);
  }
  st.Reset();
  CHECK(st.ToJson().find("\"deleted_keys\":0") != std::string::npos);
}
