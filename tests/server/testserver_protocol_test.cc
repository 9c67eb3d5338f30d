// End-to-end protocol tests: a real ossmount-testserver process (--auth off) driven by a
// plain HTTP client.
#include <signal.h>
#include <sys/wait.h>

#include <set>

#include "common/time_util.h"
#include "common/url.h"
#include "testserver_fixture.h"

using namespace ossmount::testserver;

namespace {
const std::vector<std::pair<std::string, std::string>> kS3{
    {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"}};
}

TEST_CASE("GET and HEAD return the object with OSS headers and its CRC-64", "[protocol]") {
  ServerFixture f;
  std::string data = RandomBytes(115 * 1024, 1);
  f.WriteFile("train/cls/img 1.jpg", data);
  f.Start();
  auto get = f.client().Request("GET", "/bkt/train/cls/img%201.jpg");
  REQUIRE(get.status == 200);
  CHECK(get.error == "");
  CHECK(get.body == data);
  CHECK(get.Header("Content-Length") == std::to_string(data.size()));
  CHECK(get.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(data)));
  CHECK(get.Header("x-oss-object-type") == "Normal");
  CHECK(get.Header("x-oss-storage-class") == "Standard");
  CHECK(get.Header("Content-Type") == "image/jpeg");
  CHECK(get.Header("x-oss-request-id").size() == 24);
  CHECK(ossmount::ParseRfc1123(get.Header("Last-Modified")).ok());
  std::string etag = get.Header("ETag");
  REQUIRE(etag.size() == 34);
  CHECK(etag.front() == '"');

  auto head = f.client().Request("HEAD", "/bkt/train/cls/img%201.jpg");
  REQUIRE(head.status == 200);
  CHECK(head.body.empty());
  CHECK(head.Header("Content-Length") == std::to_string(data.size()));
  CHECK(head.Header("ETag") == etag);
  CHECK(head.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(data)));

  // The same connection served both (keep-alive).
  CHECK(f.client().connects() == 1);
}

TEST_CASE("Missing keys and buckets give OSS error XML, HEAD errors have no body", "[protocol]") {
  ServerFixture f;
  f.Start();
  auto r = f.client().Request("GET", "/bkt/no/such");
  REQUIRE(r.status == 404);
  pugi::xml_document doc;
  auto err = ParseXml(doc, r.body);
  CHECK(std::string(err.name()) == "Error");
  CHECK(std::string(err.child_value("Code")) == "NoSuchKey");
  CHECK(std::string(err.child_value("Message")).size() > 0);
  CHECK(std::string(err.child_value("RequestId")) == r.Header("x-oss-request-id"));
  CHECK(std::string(err.child_value("HostId")) == "127.0.0.1");
  CHECK(std::string(err.child_value("EC")) == "0026-00000001");
  CHECK(std::string(err.child_value("Key")) == "no/such");

  r = f.client().Request("GET", "/nobucket/k");
  REQUIRE(r.status == 404);
  pugi::xml_document doc2;
  CHECK(std::string(ParseXml(doc2, r.body).child_value("Code")) == "NoSuchBucket");

  r = f.client().Request("HEAD", "/bkt/no/such");
  CHECK(r.status == 404);
  CHECK(r.body.empty());
  CHECK(r.error.empty());

  // S3 dialect: x-amz-request-id and no EC element.
  r = f.client().Request("GET", "/bkt/no/such", kS3);
  REQUIRE(r.status == 404);
  CHECK(r.HasHeader("x-amz-request-id"));
  CHECK_FALSE(r.HasHeader("x-oss-request-id"));
  pugi::xml_document doc3;
  CHECK(ParseXml(doc3, r.body).child("EC").empty());
}

TEST_CASE("Ranges: OSS standard 206/416, OSS legacy 200, S3 416", "[protocol]") {
  ServerFixture f;
  std::string data = RandomBytes(1000, 2);
  f.WriteFile("obj", data);
  f.Start();
  auto& c = f.client();
  const std::pair<std::string, std::string> standard{"x-oss-range-behavior", "standard"};

  auto r = c.Request("GET", "/bkt/obj", {{"Range", "bytes=10-19"}});
  REQUIRE(r.status == 206);
  CHECK(r.body == data.substr(10, 10));
  CHECK(r.Header("Content-Range") == "bytes 10-19/1000");
  CHECK(r.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(data)));  // whole object

  r = c.Request("GET", "/bkt/obj", {{"Range", "bytes=-10"}});
  REQUIRE(r.status == 206);
  CHECK(r.body == data.substr(990));

  r = c.Request("GET", "/bkt/obj", {{"Range", "bytes=500-2000"}, standard});
  REQUIRE(r.status == 206);
  CHECK(r.body == data.substr(500));
  CHECK(r.Header("Content-Range") == "bytes 500-999/1000");

  r = c.Request("GET", "/bkt/obj", {{"Range", "bytes=1000-2000"}, standard});
  REQUIRE(r.status == 416);
  CHECK(r.Header("Content-Range") == "bytes */1000");
  pugi::xml_document doc;
  CHECK(std::string(ParseXml(doc, r.body).child_value("Code")) == "InvalidRange");

  // Legacy OSS: out-of-bounds ranges are ignored.
  r = c.Request("GET", "/bkt/obj", {{"Range", "bytes=500-2000"}});
  REQUIRE(r.status == 200);
  CHECK(r.body == data);
  r = c.Request("GET", "/bkt/obj", {{"Range", "bytes=1000-2000"}});
  REQUIRE(r.status == 200);
  CHECK(r.body == data);

  auto s3 = kS3;
  s3.emplace_back("Range", "bytes=1000-");
  r = c.Request("GET", "/bkt/obj", s3);
  CHECK(r.status == 416);
  s3.back().second = "bytes=900-5000";
  r = c.Request("GET", "/bkt/obj", s3);
  REQUIRE(r.status == 206);
  CHECK(r.body == data.substr(900));
  CHECK(f.Stat("GET_RANGE") == 8);
}

TEST_CASE("If-Match gives 412 on a changed object, If-None-Match gives 304", "[protocol]") {
  ServerFixture f;
  f.WriteFile("obj", "version one");
  f.Start();
  auto& c = f.client();
  std::string etag = c.Request("HEAD", "/bkt/obj").Header("ETag");
  REQUIRE(!etag.empty());
  CHECK(c.Request("GET", "/bkt/obj", {{"If-Match", etag}}).status == 200);
  auto r = c.Request("GET", "/bkt/obj", {{"If-Match", "\"0123\""}});
  REQUIRE(r.status == 412);
  pugi::xml_document doc;
  CHECK(std::string(ParseXml(doc, r.body).child_value("Code")) == "PreconditionFailed");
  CHECK(c.Request("GET", "/bkt/obj", {{"If-None-Match", etag}}).status == 304);

  // Rewritten behind the server's back: a new ETag, and the old one no longer matches.
  f.WriteFile("obj", "version two, longer");
  r = c.Request("GET", "/bkt/obj", {{"If-Match", etag}, {"Range", "bytes=0-3"}});
  CHECK(r.status == 412);
  r = c.Request("GET", "/bkt/obj");
  REQUIRE(r.status == 200);
  CHECK(r.body == "version two, longer");
  CHECK(r.Header("ETag") != etag);
}

TEST_CASE("ListObjectsV2 paginates with delimiter, max-keys and continuation tokens",
          "[protocol]") {
  ServerFixture f;
  std::set<std::string> expected_keys;
  for (int i = 0; i < 7; ++i) {
    std::string k = "train/c" + std::to_string(i % 3) + "/f" + std::to_string(i);
    f.WriteFile(k, "x");
  }
  f.WriteFile("top-a", "1");
  f.WriteFile("top-b", "22");
  f.Start();
  auto& c = f.client();

  // Delimiter listing of the root: 1 prefix + 2 keys, two per page.
  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    std::string target = "/bkt/?list-type=2&delimiter=%2F&max-keys=2";
    if (!token.empty()) target += "&continuation-token=" + ossmount::PercentEncode(token);
    auto r = c.Request("GET", target);
    REQUIRE(r.status == 200);
    pugi::xml_document doc;
    auto root = ParseXml(doc, r.body);
    int count = 0;
    for (auto k : root.children("Contents")) {
      seen.push_back(k.child_value("Key"));
      ++count;
    }
    for (auto p : root.children("CommonPrefixes")) {
      seen.push_back(p.child_value("Prefix"));
      ++count;
    }
    CHECK(std::to_string(count) == root.child_value("KeyCount"));
    bool truncated = std::string(root.child_value("IsTruncated")) == "true";
    token = truncated ? root.child_value("NextContinuationToken") : "";
    CHECK(truncated == !token.empty());
    ++pages;
  } while (!token.empty() && pages < 10);
  CHECK(pages == 2);
  CHECK(seen == std::vector<std::string>{"top-a", "top-b", "train/"});

  // Prefix listing of a directory gives its subdirectories.
  auto r = c.Request("GET", "/bkt/?list-type=2&prefix=train%2F&delimiter=%2F&max-keys=1000");
  REQUIRE(r.status == 200);
  pugi::xml_document doc;
  auto root = ParseXml(doc, r.body);
  std::vector<std::string> prefixes;
  for (auto p : root.children("CommonPrefixes")) prefixes.push_back(p.child_value("Prefix"));
  CHECK(prefixes == std::vector<std::string>{"train/c0/", "train/c1/", "train/c2/"});
  CHECK(root.child("Contents").empty());

  // No delimiter: every key, with sizes; default max-keys is 100 for OSS.
  r = c.Request("GET", "/bkt/?list-type=2");
  pugi::xml_document doc2;
  root = ParseXml(doc2, r.body);
  CHECK(std::string(root.child_value("MaxKeys")) == "100");
  int n = 0;
  for (auto k : root.children("Contents")) {
    ++n;
    if (std::string(k.child_value("Key")) == "top-b")
      CHECK(std::string(k.child_value("Size")) == "2");
  }
  CHECK(n == 9);

  // start-after, and a token this server never issued.
  r = c.Request("GET", "/bkt/?list-type=2&start-after=top-b");
  pugi::xml_document doc3;
  root = ParseXml(doc3, r.body);
  CHECK(std::string(root.child("Contents").child_value("Key")) == "train/c0/f0");
  CHECK(c.Request("GET", "/bkt/?list-type=2&continuation-token=%21%21").status == 400);
  CHECK(c.Request("GET", "/bkt/?list-type=2&max-keys=abc").status == 400);
  CHECK(c.Request("GET", "/nobucket/?list-type=2").status == 404);
}

TEST_CASE("encoding-type=url encodes keys, prefixes and tokens", "[protocol]") {
  ServerFixture f;
  f.Start();
  auto& c = f.client();
  const std::string odd = "dir a+b/k\x01 ey&<%>.txt";
  REQUIRE(c.Request("PUT", "/bkt/" + ossmount::PercentEncode(odd, true), {}, "v").status == 200);
  REQUIRE(c.Request("PUT", "/bkt/dir%20a%2Bb/z", {}, "v").status == 200);
  auto r = c.Request("GET", "/bkt/?list-type=2&encoding-type=url&max-keys=1&prefix=dir%20a%2Bb%2F");
  REQUIRE(r.status == 200);
  pugi::xml_document doc;
  auto root = ParseXml(doc, r.body);
  CHECK(std::string(root.child_value("EncodingType")) == "url");
  CHECK(std::string(root.child_value("Prefix")) == "dir%20a%2Bb/");
  std::string key = root.child("Contents").child_value("Key");
  CHECK(key.find('+') == std::string::npos);
  CHECK(ossmount::PercentDecode(key).value() == odd);
  std::string token = root.child_value("NextContinuationToken");
  REQUIRE(!token.empty());
  r = c.Request("GET",
                "/bkt/?list-type=2&encoding-type=url&prefix=dir%20a%2Bb%2F&continuation-token=" +
                    ossmount::PercentEncode(ossmount::PercentDecode(token).value()));
  pugi::xml_document doc2;
  root = ParseXml(doc2, r.body);
  CHECK(ossmount::PercentDecode(root.child("Contents").child_value("Key")).value() == "dir a+b/z");
  CHECK(std::string(root.child_value("IsTruncated")) == "false");
}

TEST_CASE("PUT, GET, DELETE, hostile keys are served from memory, never outside the root",
          "[protocol]") {
  ServerFixture f;
  f.Start();
  auto& c = f.client();
  auto put = c.Request("PUT", "/bkt/ckpt/model.bin", {{"x-oss-meta-mode", "420"}}, "weights");
  REQUIRE(put.status == 200);
  CHECK(put.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf("weights")));
  CHECK(std::filesystem::exists(f.root() + "/bkt/ckpt/model.bin"));
  auto get = c.Request("GET", "/bkt/ckpt/model.bin");
  CHECK(get.body == "weights");
  CHECK(get.Header("x-oss-meta-mode") == "420");
  CHECK(get.Header("ETag") == put.Header("ETag"));

  const std::vector<std::string> hostile = {
      "a//b", "dir/", "../escape", "x/../../escape2", "./dot", std::string(300, 'n') + "/long"};
  for (const auto& key : hostile) {
    INFO(key);
    REQUIRE(c.Request("PUT", "/bkt/" + ossmount::PercentEncode(key, true), {}, "h:" + key).status ==
            200);
    auto back = c.Request("GET", "/bkt/" + ossmount::PercentEncode(key, true));
    REQUIRE(back.status == 200);
    CHECK(back.body == "h:" + key);
  }
  CHECK_FALSE(std::filesystem::exists(f.root() + "/escape"));
  CHECK_FALSE(std::filesystem::exists(f.root() + "/bkt/escape"));
  CHECK_FALSE(std::filesystem::exists(std::filesystem::path(f.root()).parent_path() / "escape2"));
  auto list = c.Request("GET", "/bkt/?list-type=2&encoding-type=url&max-keys=1000");
  for (const auto& key : hostile)
    CHECK(list.body.find(ossmount::PercentEncode(key, true)) != std::string::npos);

  // DELETE is 204 and idempotent.
  CHECK(c.Request("DELETE", "/bkt/ckpt/model.bin").status == 204);
  CHECK(c.Request("DELETE", "/bkt/ckpt/model.bin").status == 204);
  CHECK(c.Request("DELETE", "/bkt/a//b").status == 204);
  CHECK(c.Request("GET", "/bkt/ckpt/model.bin").status == 404);
  CHECK(c.Request("GET", "/bkt/a//b").status == 404);
  CHECK_FALSE(std::filesystem::exists(f.root() + "/bkt/ckpt/model.bin"));
  // Content-MD5 is checked.
  CHECK(c.Request("PUT", "/bkt/m", {{"Content-MD5", "AAAAAAAAAAAAAAAAAAAAAA=="}}, "x").status ==
        400);
  // A file and a directory of the same name: the second falls back to memory.
  REQUIRE(c.Request("PUT", "/bkt/clash", {}, "file").status == 200);
  REQUIRE(c.Request("PUT", "/bkt/clash/inner", {}, "inner").status == 200);
  CHECK(c.Request("GET", "/bkt/clash").body == "file");
  CHECK(c.Request("GET", "/bkt/clash/inner").body == "inner");
}

TEST_CASE("Multipart upload: initiate, parts, complete, abort", "[protocol]") {
  ServerFixture f;
  f.Start({"--auth", "off", "--min-part-size", "1000"});
  auto& c = f.client();
  auto init = c.Request("POST", "/bkt/big/ckpt?uploads");
  REQUIRE(init.status == 200);
  pugi::xml_document doc;
  std::string id = ParseXml(doc, init.body).child_value("UploadId");
  REQUIRE(!id.empty());
  std::string p1 = RandomBytes(1500, 3), p2 = RandomBytes(700, 4);
  auto r1 = c.Request("PUT", "/bkt/big/ckpt?partNumber=1&uploadId=" + id, {}, p1);
  auto r2 = c.Request("PUT", "/bkt/big/ckpt?partNumber=2&uploadId=" + id, {}, p2);
  REQUIRE(r1.status == 200);
  REQUIRE(r2.status == 200);
  CHECK(r1.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(p1)));
  std::string xml = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>" +
                    r1.Header("ETag") + "</ETag></Part><Part><PartNumber>2</PartNumber><ETag>" +
                    r2.Header("ETag") + "</ETag></Part></CompleteMultipartUpload>";
  auto done = c.Request("POST", "/bkt/big/ckpt?uploadId=" + id, {}, xml);
  REQUIRE(done.status == 200);
  CHECK(done.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(p1 + p2)));
  pugi::xml_document doc2;
  CHECK(std::string(ParseXml(doc2, done.body).child_value("ETag")).find("-2\"") !=
        std::string::npos);
  auto get = c.Request("GET", "/bkt/big/ckpt");
  CHECK(get.body == p1 + p2);
  CHECK(get.Header("x-oss-object-type") == "Multipart");
  // Completing twice: the upload is gone.
  auto again = c.Request("POST", "/bkt/big/ckpt?uploadId=" + id, {}, xml);
  CHECK(again.status == 404);
  pugi::xml_document doc3;
  CHECK(std::string(ParseXml(doc3, again.body).child_value("Code")) == "NoSuchUpload");

  // Too-small first part, then abort.
  init = c.Request("POST", "/bkt/small?uploads");
  pugi::xml_document doc4;
  id = ParseXml(doc4, init.body).child_value("UploadId");
  r1 = c.Request("PUT", "/bkt/small?partNumber=1&uploadId=" + id, {}, "tiny");
  r2 = c.Request("PUT", "/bkt/small?partNumber=2&uploadId=" + id, {}, "tiny");
  xml = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>" + r1.Header("ETag") +
        "</ETag></Part><Part><PartNumber>2</PartNumber><ETag>" + r2.Header("ETag") +
        "</ETag></Part></CompleteMultipartUpload>";
  auto small = c.Request("POST", "/bkt/small?uploadId=" + id, {}, xml);
  CHECK(small.status == 400);
  pugi::xml_document doc5;
  CHECK(std::string(ParseXml(doc5, small.body).child_value("Code")) == "EntityTooSmall");
  CHECK(c.Request("DELETE", "/bkt/small?uploadId=" + id).status == 204);
  CHECK(c.Request("DELETE", "/bkt/small?uploadId=" + id).status == 404);
  CHECK(f.Stat("UPLOAD_PART") == 4);
  CHECK(f.Stat("COMPLETE_MULTIPART") == 3);
}

TEST_CASE("Large files are streamed from disk, whole and ranged", "[protocol]") {
  ServerFixture f;
  std::string data = RandomBytes(9 * 1024 * 1024 + 17, 5);  // above the memory-cache limit
  f.WriteFile("large.bin", data);
  f.Start();
  auto r = f.client().Request("GET", "/bkt/large.bin");
  REQUIRE(r.status == 200);
  CHECK(r.body.size() == data.size());
  CHECK(r.body == data);
  CHECK(r.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(data)));
  r = f.client().Request("GET", "/bkt/large.bin", {{"Range", "bytes=5000000-"}});
  REQUIRE(r.status == 206);
  CHECK(r.body == data.substr(5000000));
}

TEST_CASE("Virtual-hosted addressing, ListBuckets, bucket location", "[protocol]") {
  ServerFixture f;
  f.WriteFile("k", "vhost");
  f.Start({"--auth", "off", "--region", "cn-test-1"});
  auto& c = f.client();
  auto r = c.Request("GET", "/k", {{"Host", "bkt.oss-cn-test-1.example.com"}});
  REQUIRE(r.status == 200);
  CHECK(r.body == "vhost");
  r = c.Request("GET", "/?list-type=2", {{"Host", "bkt.oss-cn-test-1.example.com"}});
  CHECK(r.body.find("<Key>k</Key>") != std::string::npos);
  r = c.Request("GET", "/");
  CHECK(r.body.find("<Name>bkt</Name>") != std::string::npos);
  r = c.Request("GET", "/bkt/?location");
  CHECK(r.body.find("oss-cn-test-1") != std::string::npos);
  CHECK(c.Request("HEAD", "/bkt").status == 200);
  CHECK(c.Request("HEAD", "/nobkt").status == 404);
}

TEST_CASE("Stats count operations and reset zeroes them", "[protocol]") {
  ServerFixture f;
  f.WriteFile("a", "1");
  f.Start();
  auto& c = f.client();
  REQUIRE(c.Request("POST", "/_ossmount/reset").status == 200);
  c.Request("GET", "/bkt/a");
  c.Request("GET", "/bkt/a");
  c.Request("HEAD", "/bkt/a");
  c.Request("GET", "/bkt/?list-type=2");
  c.Request("PUT", "/bkt/b", {}, "xy");
  CHECK(f.Stat("GET") == 2);
  CHECK(f.Stat("HEAD") == 1);
  CHECK(f.Stat("LIST") == 1);
  CHECK(f.Stat("PUT") == 1);
  CHECK(f.Stat("requests") == 5);
  CHECK(f.Stat("bytes_received") == 2);
  CHECK(f.Stat("status.200") == 5);
  REQUIRE(c.Request("POST", "/_ossmount/reset").status == 200);
  CHECK(f.Stat("GET") == 0);
  CHECK(f.Stat("requests") == 0);
}

TEST_CASE("The server exits cleanly on SIGTERM", "[protocol]") {
  ServerFixture f;
  f.Start();
  REQUIRE(f.client().Request("GET", "/_ossmount/health").status == 200);
  int status = f.server().Stop();
  REQUIRE(status != -1);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
