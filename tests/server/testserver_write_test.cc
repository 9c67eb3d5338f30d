// The write operations against the real binary, in both dialects: PutObject digests and
// forbid-overwrite, multipart (part copies, Complete's checks, listings), CopyObject and its
// size limit, DeleteObject / DeleteMultipleObjects, and their counters.
//
// With --auth off the dialect follows the headers: any x-amz-* header makes a request S3.
#include <set>

#include "object_store.h"
#include "testserver_fixture.h"

using namespace ossmount::testserver;

namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

const std::pair<std::string, std::string> kS3Headers{"x-amz-content-sha256", "UNSIGNED-PAYLOAD"};

std::string WCode(const HttpResult& r) {
  pugi::xml_document doc;
  doc.load_buffer(r.body.data(), r.body.size());
  return doc.child("Error").child_value("Code");
}

std::string WQuoted(const std::string& s) { return "\"" + s + "\""; }

std::string WInitiate(HttpTestClient& c, const std::string& key, Headers h = {}) {
  auto r = c.Request("POST", "/bkt/" + key + "?uploads", h);
  REQUIRE(r.status == 200);
  pugi::xml_document doc;
  std::string id = ParseXml(doc, r.body).child_value("UploadId");
  REQUIRE(!id.empty());
  return id;
}

std::string WCompleteXml(const std::vector<std::pair<int, std::string>>& parts) {
  std::string xml = "<CompleteMultipartUpload>";
  for (const auto& [n, etag] : parts) {
    xml +=
        "<Part><PartNumber>" + std::to_string(n) + "</PartNumber><ETag>" + etag + "</ETag></Part>";
  }
  return xml + "</CompleteMultipartUpload>";
}

}  // namespace

TEST_CASE("PutObject returns ETag and CRC-64 and checks Content-MD5 in both dialects", "[write]") {
  ServerFixture f;
  f.Start();
  auto& c = f.client();
  const std::string data = RandomBytes(70000, 21);
  auto r = c.Request("PUT", "/bkt/p/ok", {{"Content-MD5", Md5Base64(data)}}, data);
  REQUIRE(r.status == 200);
  CHECK(r.Header("ETag") == WQuoted(Md5Hex(data)));
  CHECK(r.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(data)));
  CHECK(c.Request("GET", "/bkt/p/ok").body == data);

  // A digest of other bytes: OSS InvalidDigest, S3 BadDigest; nothing stored either way.
  const std::string other_md5 = Md5Base64("other bytes");
  r = c.Request("PUT", "/bkt/p/bad", {{"Content-MD5", other_md5}}, data);
  CHECK(r.status == 400);
  CHECK(WCode(r) == "InvalidDigest");
  CHECK(r.HasHeader("x-oss-request-id"));
  r = c.Request("PUT", "/bkt/p/bad", {{"Content-MD5", other_md5}, kS3Headers}, data);
  CHECK(r.status == 400);
  CHECK(WCode(r) == "BadDigest");
  CHECK(r.HasHeader("x-amz-request-id"));
  r = c.Request("PUT", "/bkt/p/bad", {{"Content-MD5", "not-base64"}, kS3Headers}, data);
  CHECK(r.status == 400);
  CHECK(WCode(r) == "InvalidDigest");
  CHECK(c.Request("GET", "/bkt/p/bad").status == 404);

  // S3 PUT: ETag and the CRC header too; UploadPart checks the digest as well.
  r = c.Request("PUT", "/bkt/p/s3", {kS3Headers, {"Content-MD5", Md5Base64(data)}}, data);
  REQUIRE(r.status == 200);
  CHECK(r.Header("ETag") == WQuoted(Md5Hex(data)));
  std::string id = WInitiate(c, "p/mp");
  r = c.Request("PUT", "/bkt/p/mp?partNumber=1&uploadId=" + id, {{"Content-MD5", other_md5}}, data);
  CHECK(r.status == 400);
  CHECK(WCode(r) == "InvalidDigest");
}

TEST_CASE("forbid-overwrite and If-None-Match refuse PUT, CopyObject and Complete", "[write]") {
  ServerFixture f;
  f.WriteFile("taken", "original");
  f.WriteFile("src", "source bytes");
  f.Start({"--auth", "off", "--min-part-size", "1"});
  auto& c = f.client();
  const std::pair<std::string, std::string> forbid{"x-oss-forbid-overwrite", "true"};
  auto r = c.Request("PUT", "/bkt/taken", {forbid}, "new");
  CHECK(r.status == 409);
  CHECK(WCode(r) == "FileAlreadyExists");
  r = c.Request("PUT", "/bkt/taken", {{"If-None-Match", "*"}, kS3Headers}, "new");
  CHECK(r.status == 412);
  CHECK(WCode(r) == "PreconditionFailed");
  r = c.Request("PUT", "/bkt/taken", {forbid, kS3Headers}, "new");
  CHECK(r.status == 412);
  CHECK(c.Request("GET", "/bkt/taken").body == "original");
  CHECK(c.Request("PUT", "/bkt/fresh", {forbid}, "a").status == 200);
  CHECK(c.Request("PUT", "/bkt/fresh2", {{"If-None-Match", "*"}, kS3Headers}, "b").status == 200);

  r = c.Request("PUT", "/bkt/taken", {{"x-oss-copy-source", "/bkt/src"}, forbid});
  CHECK(r.status == 409);
  CHECK(WCode(r) == "FileAlreadyExists");
  CHECK(c.Request("GET", "/bkt/taken").body == "original");
  CHECK(c.Request("PUT", "/bkt/copied", {{"x-oss-copy-source", "/bkt/src"}, forbid}).status == 200);

  // Complete onto an existing key is refused and leaves the upload open (it can be aborted).
  for (bool s3 : {false, true}) {
    INFO((s3 ? "S3" : "OSS"));
    std::string id = WInitiate(c, "taken");
    Headers h = s3 ? Headers{kS3Headers} : Headers{};
    auto part = c.Request("PUT", "/bkt/taken?partNumber=1&uploadId=" + id, h, "part");
    REQUIRE(part.status == 200);
    h.push_back(s3 ? std::pair<std::string, std::string>{"If-None-Match", "*"} : forbid);
    r = c.Request("POST", "/bkt/taken?uploadId=" + id, h, WCompleteXml({{1, part.Header("ETag")}}));
    CHECK(r.status == (s3 ? 412 : 409));
    CHECK(WCode(r) == (s3 ? "PreconditionFailed" : "FileAlreadyExists"));
    CHECK(c.Request("GET", "/bkt/taken").body == "original");
    CHECK(c.Request("DELETE", "/bkt/taken?uploadId=" + id).status == 204);
  }
  CHECK(f.Stat("open_multipart_uploads") == 0);
}

TEST_CASE("UploadPartCopy copies ranges with preconditions, and Complete assembles them",
          "[write]") {
  ServerFixture f;
  const std::string src = RandomBytes(300000, 22);
  f.WriteFile("src/big", src);
  f.Start();
  auto& c = f.client();
  const std::string src_etag = c.Request("HEAD", "/bkt/src/big").Header("ETag");
  REQUIRE(!src_etag.empty());
  std::string id = WInitiate(c, "dst/big");
  const std::string url = "/bkt/dst/big?uploadId=" + id + "&partNumber=";

  // OSS headers, with a matching if-match.
  auto r1 = c.Request("PUT", url + "1",
                      {{"x-oss-copy-source", "/bkt/src/big"},
                       {"x-oss-copy-source-range", "bytes=0-199999"},
                       {"x-oss-copy-source-if-match", src_etag}});
  REQUIRE(r1.status == 200);
  const std::string first = src.substr(0, 200000);
  pugi::xml_document doc1;
  auto result = ParseXml(doc1, r1.body);
  CHECK(std::string(result.name()) == "CopyPartResult");
  CHECK(result.child_value("ETag") == WQuoted(Md5Hex(first)));
  CHECK(r1.Header("ETag") == WQuoted(Md5Hex(first)));
  CHECK(r1.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(first)));

  // S3 headers (escaped source key, no leading slash).
  auto r2 = c.Request(
      "PUT", url + "2",
      {{"x-amz-copy-source", "bkt/src%2Fbig"}, {"x-amz-copy-source-range", "bytes=200000-299999"}});
  REQUIRE(r2.status == 200);
  CHECK(r2.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(src.substr(200000))));

  // A changed source (another etag), bad ranges, unknown uploads.
  auto r = c.Request("PUT", url + "3",
                     {{"x-oss-copy-source", "/bkt/src/big"},
                      {"x-oss-copy-source-if-match", "\"0123456789ABCDEF0123456789ABCDEF\""}});
  CHECK(r.status == 412);
  CHECK(WCode(r) == "PreconditionFailed");
  r = c.Request("PUT", url + "3",
                {{"x-amz-copy-source", "/bkt/src/big"}, {"x-amz-copy-source-if-match", "\"00\""}});
  CHECK(r.status == 412);
  r = c.Request("PUT", url + "3",
                {{"x-oss-copy-source", "/bkt/src/big"}, {"x-oss-copy-source-range", "bytes=5-2"}});
  CHECK(r.status == 400);
  CHECK(WCode(r) == "InvalidArgument");
  r = c.Request(
      "PUT", url + "3",
      {{"x-oss-copy-source", "/bkt/src/big"}, {"x-oss-copy-source-range", "bytes=0-300000"}});
  CHECK(r.status == 400);
  r = c.Request("PUT", url + "3", {{"x-oss-copy-source", "/bkt/src/none"}});
  CHECK(r.status == 404);
  CHECK(WCode(r) == "NoSuchKey");
  r = c.Request("PUT", "/bkt/dst/big?uploadId=nope&partNumber=1",
                {{"x-oss-copy-source", "/bkt/src/big"}});
  CHECK(r.status == 404);
  CHECK(WCode(r) == "NoSuchUpload");

  auto done = c.Request("POST", "/bkt/dst/big?uploadId=" + id, {},
                        WCompleteXml({{1, r1.Header("ETag")}, {2, r2.Header("ETag")}}));
  REQUIRE(done.status == 200);
  CHECK(done.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(src)));
  pugi::xml_document doc2;
  CHECK(ParseXml(doc2, done.body).child_value("ETag") == done.Header("ETag"));
  CHECK(c.Request("GET", "/bkt/dst/big").body == src);
  CHECK(f.Stat("UPLOAD_PART_COPY") == 8);
}

TEST_CASE("Complete checks order, ETags and the 100 KiB minimum, and uploads are then forgotten",
          "[write]") {
  ServerFixture f;
  f.Start();  // default --min-part-size 102400
  auto& c = f.client();
  std::string id = WInitiate(c, "ck");
  const std::string p1 = RandomBytes(102399, 23), p2 = RandomBytes(5000, 24);
  auto r1 = c.Request("PUT", "/bkt/ck?partNumber=1&uploadId=" + id, {}, p1);
  auto r2 = c.Request("PUT", "/bkt/ck?partNumber=2&uploadId=" + id, {}, p2);
  REQUIRE(r1.status == 200);
  REQUIRE(r2.status == 200);
  CHECK(r1.Header("ETag") == WQuoted(Md5Hex(p1)));
  CHECK(r1.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(p1)));
  const std::string e1 = r1.Header("ETag"), e2 = r2.Header("ETag");
  const std::string complete = "/bkt/ck?uploadId=" + id;
  struct Row {
    std::vector<std::pair<int, std::string>> parts;
    const char* code;
  };
  const Row rows[] = {
      {{{2, e2}, {1, e1}}, "InvalidPartOrder"}, {{{1, e1}, {1, e1}}, "InvalidPartOrder"},
      {{{1, e2}, {2, e2}}, "InvalidPart"},      {{{1, e1}, {3, e2}}, "InvalidPart"},
      {{{1, e1}, {2, e2}}, "EntityTooSmall"},  // part 1 is one byte short of 100 KiB
  };
  for (const auto& row : rows) {
    INFO(row.code);
    auto r = c.Request("POST", complete, {}, WCompleteXml(row.parts));
    CHECK(r.status == 400);
    CHECK(WCode(r) == row.code);
  }
  // Still open after failed Completes: its parts are listed with sizes, ETags and CRCs.
  auto parts = c.Request("GET", "/bkt/ck?uploadId=" + id);
  REQUIRE(parts.status == 200);
  pugi::xml_document doc;
  auto list = ParseXml(doc, parts.body);
  std::vector<std::string> seen;
  for (auto p : list.children("Part")) {
    seen.push_back(std::string(p.child_value("PartNumber")) + ":" + p.child_value("Size") + ":" +
                   p.child_value("ETag") + ":" + p.child_value("HashCrc64ecma"));
  }
  CHECK(seen == std::vector<std::string>{"1:102399:" + e1 + ":" + std::to_string(CrcOf(p1)),
                                         "2:5000:" + e2 + ":" + std::to_string(CrcOf(p2))});
  // A full-size first part completes; the id is then gone for every operation.
  const std::string p1b = RandomBytes(102400, 25);
  auto r1b = c.Request("PUT", "/bkt/ck?partNumber=1&uploadId=" + id, {}, p1b);
  REQUIRE(r1b.status == 200);
  auto done = c.Request("POST", complete, {}, WCompleteXml({{1, r1b.Header("ETag")}, {2, e2}}));
  REQUIRE(done.status == 200);
  CHECK(done.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(p1b + p2)));
  CHECK(c.Request("GET", "/bkt/ck").body == p1b + p2);
  for (auto [method, target] : std::vector<std::pair<std::string, std::string>>{
           {"POST", complete},
           {"PUT", "/bkt/ck?partNumber=3&uploadId=" + id},
           {"GET", "/bkt/ck?uploadId=" + id},
           {"DELETE", "/bkt/ck?uploadId=" + id}}) {
    INFO(method << " " << target);
    auto r = c.Request(method, target, {},
                       method == "POST"  ? WCompleteXml({{1, e1}})
                       : method == "PUT" ? "x"
                                         : "");
    CHECK(r.status == 404);
    CHECK(WCode(r) == "NoSuchUpload");
  }
  // Aborted uploads are forgotten too.
  id = WInitiate(c, "ab", {kS3Headers});
  CHECK(c.Request("DELETE", "/bkt/ab?uploadId=" + id, {kS3Headers}).status == 204);
  auto r = c.Request("PUT", "/bkt/ab?partNumber=1&uploadId=" + id, {kS3Headers}, "x");
  CHECK(r.status == 404);
  CHECK(WCode(r) == "NoSuchUpload");
  CHECK(f.Stat("open_multipart_uploads") == 0);
}

TEST_CASE("ListMultipartUploads pages by key and upload id, and ListParts by part number",
          "[write]") {
  ServerFixture f;
  f.Start();
  auto& c = f.client();
  std::set<std::string> a_ids = {WInitiate(c, "a/1"), WInitiate(c, "a/1"), WInitiate(c, "a/2")};
  WInitiate(c, "b/1");
  CHECK(f.Stat("open_multipart_uploads") == 4);

  std::vector<std::string> listed;  // "key id" in listing order
  std::string key_marker, id_marker;
  int pages = 0;
  while (true) {
    std::string target = "/bkt/?uploads&prefix=a%2F&max-uploads=2";
    if (!key_marker.empty()) {
      target += "&key-marker=" + key_marker + "&upload-id-marker=" + id_marker;
    }
    auto r = c.Request("GET", target);
    REQUIRE(r.status == 200);
    pugi::xml_document doc;
    auto page = ParseXml(doc, r.body);
    REQUIRE(std::string(page.name()) == "ListMultipartUploadsResult");
    for (auto u : page.children("Upload")) {
      listed.push_back(std::string(u.child_value("Key")) + " " + u.child_value("UploadId"));
      CHECK(std::string(u.child_value("Initiated")).size() == 24);
    }
    ++pages;
    if (std::string(page.child_value("IsTruncated")) != "true") break;
    key_marker = page.child_value("NextKeyMarker");
    id_marker = page.child_value("NextUploadIdMarker");
    REQUIRE(pages < 5);
  }
  CHECK(pages == 2);
  REQUIRE(listed.size() == 3);
  CHECK(std::is_sorted(listed.begin(), listed.end()));
  std::set<std::string> ids;
  for (const auto& l : listed) ids.insert(l.substr(l.find(' ') + 1));
  CHECK(ids == a_ids);
  CHECK(listed[2].rfind("a/2 ", 0) == 0);
  // key-marker alone resumes after that key.
  auto r = c.Request("GET", "/bkt/?uploads&key-marker=a%2F1", {kS3Headers});
  pugi::xml_document doc;
  auto all = ParseXml(doc, r.body);
  std::vector<std::string> keys;
  for (auto u : all.children("Upload")) keys.push_back(u.child_value("Key"));
  CHECK(keys == std::vector<std::string>{"a/2", "b/1"});
  CHECK(c.Request("GET", "/bkt/?uploads&max-uploads=0").status == 400);
  auto control = c.Request("GET", "/_ossmount/uploads");
  CHECK(control.body.find("\"open\":4") != std::string::npos);
  CHECK(control.body.find("\"key\":\"b/1\"") != std::string::npos);

  // ListParts, one part a page.
  std::string id = *a_ids.begin();
  std::string key = listed[0].substr(0, listed[0].find(' '));
  for (const auto& l : listed) {
    if (l.substr(l.find(' ') + 1) == id) key = l.substr(0, l.find(' '));
  }
  for (int n : {3, 1, 2}) {
    REQUIRE(c.Request("PUT", "/bkt/" + key + "?partNumber=" + std::to_string(n) + "&uploadId=" + id,
                      {}, std::string(n * 10, 'p'))
                .status == 200);
  }
  std::string got;
  int marker = 0;
  for (int page = 0; page < 5; ++page) {
    auto lp = c.Request("GET", "/bkt/" + key + "?uploadId=" + id +
                                   "&max-parts=1&part-number-marker=" + std::to_string(marker));
    REQUIRE(lp.status == 200);
    pugi::xml_document d;
    auto res = ParseXml(d, lp.body);
    for (auto p : res.children("Part")) {
      got += std::string(p.child_value("PartNumber")) + "/" + p.child_value("Size") + " ";
    }
    if (std::string(res.child_value("IsTruncated")) != "true") break;
    marker = std::stoi(res.child_value("NextPartNumberMarker"));
  }
  CHECK(got == "1/10 2/20 3/30 ");
}

TEST_CASE("CopyObject copies bytes and metadata, checks if-match and its size limit", "[write]") {
  ServerFixture f;
  f.WriteFile("big", RandomBytes(2000, 26));
  f.Start({"--auth", "off", "--copy-object-limit", "1000"});
  auto& c = f.client();
  const std::string small = RandomBytes(900, 27);
  REQUIRE(c.Request("PUT", "/bkt/small", {{"x-oss-meta-owner", "alice"}}, small).status == 200);
  auto r = c.Request("PUT", "/bkt/copy", {{"x-oss-copy-source", "/bkt/small"}});
  REQUIRE(r.status == 200);
  pugi::xml_document doc;
  CHECK(ParseXml(doc, r.body).child_value("ETag") == WQuoted(Md5Hex(small)));
  auto get = c.Request("GET", "/bkt/copy");
  CHECK(get.body == small);
  CHECK(get.Header("x-oss-meta-owner") == "alice");
  CHECK(get.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(small)));

  r = c.Request("PUT", "/bkt/copy2",
                {{"x-amz-copy-source", "bkt/small"}, {"x-amz-copy-source-if-match", "\"00\""}});
  CHECK(r.status == 412);
  CHECK(WCode(r) == "PreconditionFailed");
  r = c.Request(
      "PUT", "/bkt/copy2",
      {{"x-amz-copy-source", "bkt/small"}, {"x-amz-copy-source-if-match", WQuoted(Md5Hex(small))}});
  CHECK(r.status == 200);
  CHECK(c.Request("GET", "/bkt/copy2").body == small);

  // Above the limit: refused (use UploadPartCopy), nothing written.
  r = c.Request("PUT", "/bkt/copy3", {{"x-oss-copy-source", "/bkt/big"}});
  CHECK(r.status == 400);
  CHECK(WCode(r) == "InvalidArgument");
  r = c.Request("PUT", "/bkt/copy3", {{"x-amz-copy-source", "/bkt/big"}});
  CHECK(r.status == 400);
  CHECK(WCode(r) == "InvalidRequest");
  CHECK(c.Request("GET", "/bkt/copy3").status == 404);
  r = c.Request("PUT", "/bkt/copy3", {{"x-oss-copy-source", "/bkt/missing"}});
  CHECK(r.status == 404);
  CHECK(WCode(r) == "NoSuchKey");
}

TEST_CASE("DeleteObject is 204 even when missing, and DeleteMultipleObjects needs its digest",
          "[write]") {
  ServerFixture f;
  for (const char* k : {"d/1", "d/2", "d/3", "d/4"}) f.WriteFile(k, "x");
  f.Start();
  auto& c = f.client();
  CHECK(c.Request("DELETE", "/bkt/never-was").status == 204);
  CHECK(c.Request("DELETE", "/bkt/d/4", {kS3Headers}).status == 204);
  CHECK(c.Request("GET", "/bkt/d/4").status == 404);

  const std::string quiet =
      "<Delete><Quiet>true</Quiet><Object><Key>d/1</Key></Object>"
      "<Object><Key>d/2</Key></Object><Object><Key>absent</Key></Object></Delete>";
  auto r = c.Request("POST", "/bkt/?delete", {}, quiet);
  CHECK(r.status == 400);
  CHECK(WCode(r) == "MissingArgument");
  r = c.Request("POST", "/bkt/?delete", {kS3Headers}, quiet);
  CHECK(r.status == 400);
  CHECK(WCode(r) == "InvalidRequest");
  r = c.Request("POST", "/bkt/?delete", {{"Content-MD5", Md5Base64("x")}}, quiet);
  CHECK(r.status == 400);
  CHECK(WCode(r) == "InvalidDigest");
  r = c.Request("POST", "/bkt/?delete", {{"Content-MD5", Md5Base64("x")}, kS3Headers}, quiet);
  CHECK(r.status == 400);
  CHECK(WCode(r) == "BadDigest");
  CHECK(c.Request("GET", "/bkt/d/1").status == 200);  // nothing deleted so far

  r = c.Request("POST", "/bkt/?delete", {{"Content-MD5", Md5Base64(quiet)}}, quiet);
  REQUIRE(r.status == 200);
  CHECK(r.body.find("<Deleted>") == std::string::npos);  // quiet
  CHECK(c.Request("GET", "/bkt/d/1").status == 404);
  CHECK(c.Request("GET", "/bkt/d/2").status == 404);

  const std::string loud = "<Delete><Object><Key>d/3</Key></Object></Delete>";
  r = c.Request("POST", "/bkt/?delete", {{"Content-MD5", Md5Base64(loud)}, kS3Headers}, loud);
  REQUIRE(r.status == 200);
  CHECK(r.body.find("<Deleted><Key>d/3</Key></Deleted>") != std::string::npos);
  CHECK(c.Request("GET", "/bkt/d/3").status == 404);
  CHECK(f.Stat("DELETE_MULTIPLE") == 6);
  CHECK(f.Stat("deleted_keys") == 4);
  CHECK(f.Stat("DELETE") == 2);
}

TEST_CASE("Stats count each write operation and the open uploads", "[write]") {
  ServerFixture f;
  f.WriteFile("s", "source");
  f.Start({"--auth", "off", "--min-part-size", "1"});
  auto& c = f.client();
  REQUIRE(c.Request("POST", "/_ossmount/reset").status == 200);
  REQUIRE(c.Request("PUT", "/bkt/a", {}, "a").status == 200);
  REQUIRE(c.Request("PUT", "/bkt/b", {{"x-oss-copy-source", "/bkt/s"}}).status == 200);
  std::string id = WInitiate(c, "m");
  std::string open = WInitiate(c, "left-open");
  auto p1 = c.Request("PUT", "/bkt/m?partNumber=1&uploadId=" + id, {}, "one");
  auto p2 =
      c.Request("PUT", "/bkt/m?partNumber=2&uploadId=" + id, {{"x-oss-copy-source", "/bkt/s"}});
  REQUIRE(p2.status == 200);
  REQUIRE(c.Request("GET", "/bkt/m?uploadId=" + id).status == 200);
  REQUIRE(c.Request("GET", "/bkt/?uploads").status == 200);
  REQUIRE(c.Request("POST", "/bkt/m?uploadId=" + id, {},
                    WCompleteXml({{1, p1.Header("ETag")}, {2, p2.Header("ETag")}}))
              .status == 200);
  std::string gone = WInitiate(c, "gone");
  REQUIRE(c.Request("DELETE", "/bkt/gone?uploadId=" + gone).status == 204);
  REQUIRE(c.Request("DELETE", "/bkt/a").status == 204);
  const std::string del = "<Delete><Quiet>true</Quiet><Object><Key>b</Key></Object></Delete>";
  REQUIRE(c.Request("POST", "/bkt/?delete", {{"Content-MD5", Md5Base64(del)}}, del).status == 200);
  const std::pair<const char*, uint64_t> want[] = {{"PUT", 1},
                                                   {"COPY", 1},
                                                   {"INITIATE_MULTIPART", 3},
                                                   {"UPLOAD_PART", 1},
                                                   {"UPLOAD_PART_COPY", 1},
                                                   {"LIST_PARTS", 1},
                                                   {"LIST_MULTIPART_UPLOADS", 1},
                                                   {"COMPLETE_MULTIPART", 1},
                                                   {"ABORT_MULTIPART", 1},
                                                   {"DELETE", 1},
                                                   {"DELETE_MULTIPLE", 1},
                                                   {"requests", 13},
                                                   {"open_multipart_uploads", 1},
                                                   {"deleted_keys", 1},
                                                   {"GET", 0}};
  for (const auto& [name, n] : want) {
    INFO(name);
    CHECK(f.Stat(name) == n);
  }
  CHECK(c.Request("GET", "/bkt/m").body == "onesource");
}
