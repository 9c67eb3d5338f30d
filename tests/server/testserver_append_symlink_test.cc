// The OSS-only operations against the real binary: AppendObject (positions, object types, the
// CRC-64 of the whole object, the size limit, concurrent appends, disk-backed and memory-only
// objects, rescans) and PutSymlink / GetSymlink (following links on GET and HEAD, dangling
// links, forbid-overwrite, listings, rescans, copies, deletes). And, in process, that a
// store's readers never see an append half done.
//
// With --auth off the dialect follows the headers: any x-amz-* header makes a request S3.
#include <atomic>
#include <map>
#include <thread>

#include "common/url.h"
#include "object_store.h"
#include "testserver_fixture.h"

using namespace ossmount::testserver;

namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

std::string AsCode(const HttpResult& r) {
  pugi::xml_document doc;
  doc.load_buffer(r.body.data(), r.body.size());
  return doc.child("Error").child_value("Code");
}

std::string AsAppendUrl(const std::string& key, uint64_t position) {
  return "/bkt/" + ossmount::PercentEncode(key, true) +
         "?append&position=" + std::to_string(position);
}

HttpResult AsAppend(HttpTestClient& c, const std::string& key, uint64_t position,
                    const std::string& data, Headers h = {}) {
  return c.Request("POST", AsAppendUrl(key, position), h, data);
}

HttpResult AsPutSymlink(HttpTestClient& c, const std::string& link, const std::string& target,
                        Headers h = {}) {
  h.emplace_back("x-oss-symlink-target", ossmount::PercentEncode(target));
  return c.Request("PUT", "/bkt/" + ossmount::PercentEncode(link, true) + "?symlink", h);
}

// key -> (Type, Size) of a listing of the whole bucket (V2 or V1).
std::map<std::string, std::pair<std::string, std::string>> AsListing(HttpTestClient& c, bool v2) {
  auto r = c.Request("GET", v2 ? "/bkt/?list-type=2&max-keys=1000" : "/bkt/?max-keys=1000");
  REQUIRE(r.status == 200);
  pugi::xml_document doc;
  std::map<std::string, std::pair<std::string, std::string>> out;
  for (auto k : ParseXml(doc, r.body).children("Contents")) {
    out[k.child_value("Key")] = {k.child_value("Type"), k.child_value("Size")};
  }
  return out;
}

void AsRescan(HttpTestClient& c) { REQUIRE(c.Request("POST", "/_ossmount/rescan").status == 200); }

}  // namespace

TEST_CASE("AppendObject creates an Appendable object and grows it at its length", "[append]") {
  ServerFixture f;
  f.Start();
  auto& c = f.client();
  auto r = AsAppend(c, "logs/app.log", 0, "hello ",
                    {{"Content-Type", "text/plain"}, {"x-oss-meta-owner", "ops"}});
  REQUIRE(r.status == 200);
  CHECK(r.Header("x-oss-next-append-position") == "6");
  CHECK(r.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf("hello ")));
  const std::string etag1 = r.Header("ETag");
  CHECK(!etag1.empty());
  CHECK(std::filesystem::file_size(f.root() + "/bkt/logs/app.log") == 6);

  // A later append gives the length; its headers are not metadata (the first append's stay).
  r = AsAppend(c, "logs/app.log", 6, "world", {{"x-oss-meta-owner", "someone-else"}});
  REQUIRE(r.status == 200);
  CHECK(r.Header("x-oss-next-append-position") == "11");
  CHECK(r.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf("hello world")));
  const std::string etag2 = r.Header("ETag");
  CHECK(etag2 != etag1);

  // Another connection sees the new length and bytes at once, under the append's ETag.
  HttpTestClient other(f.server().port());
  auto get = other.Request("GET", "/bkt/logs/app.log");
  REQUIRE(get.status == 200);
  CHECK(get.body == "hello world");
  CHECK(get.Header("ETag") == etag2);
  CHECK(get.Header("x-oss-object-type") == "Appendable");
  CHECK(get.Header("x-oss-next-append-position") == "11");
  CHECK(get.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf("hello world")));
  CHECK(get.Header("Content-Type") == "text/plain");
  CHECK(get.Header("x-oss-meta-owner") == "ops");
  auto head = other.Request("HEAD", "/bkt/logs/app.log");
  CHECK(head.Header("Content-Length") == "11");
  CHECK(head.Header("x-oss-object-type") == "Appendable");
  auto range = other.Request("GET", "/bkt/logs/app.log", {{"Range", "bytes=6-10"}});
  CHECK(range.status == 206);
  CHECK(range.body == "world");

  // A wrong position is refused with where to resume; nothing changes.
  for (uint64_t wrong : {0, 6, 12}) {
    INFO(wrong);
    r = AsAppend(c, "logs/app.log", wrong, "x");
    CHECK(r.status == 409);
    CHECK(AsCode(r) == "PositionNotEqualToLength");
    CHECK(r.Header("x-oss-next-append-position") == "11");
    CHECK(r.Header("x-oss-ec") == "0026-00000016");
  }
  r = AsAppend(c, "absent", 3, "x");
  CHECK(r.status == 409);
  CHECK(AsCode(r) == "PositionNotEqualToLength");
  CHECK(r.Header("x-oss-next-append-position") == "0");
  CHECK(c.Request("HEAD", "/bkt/absent").status == 404);

  // A wrong Content-MD5 appends nothing; a right one is accepted.
  r = AsAppend(c, "logs/app.log", 11, "!", {{"Content-MD5", Md5Base64("?")}});
  CHECK(r.status == 400);
  CHECK(AsCode(r) == "InvalidDigest");
  r = AsAppend(c, "logs/app.log", 11, "!", {{"Content-MD5", Md5Base64("!")}});
  CHECK(r.status == 200);
  CHECK(c.Request("GET", "/bkt/logs/app.log").body == "hello world!");

  // position is required and numeric.
  r = c.Request("POST", "/bkt/logs/app.log?append", {}, "x");
  CHECK(r.status == 400);
  CHECK(AsCode(r) == "MissingArgument");
  r = c.Request("POST", "/bkt/logs/app.log?append&position=-1", {}, "x");
  CHECK(r.status == 400);
  CHECK(AsCode(r) == "InvalidArgument");

  // Listings say Appendable, with the current size; a PUT object is Normal.
  REQUIRE(c.Request("PUT", "/bkt/logs/plain", {}, "p").status == 200);
  for (bool v2 : {true, false}) {
    INFO((v2 ? "V2" : "V1"));
    auto listed = AsListing(c, v2);
    CHECK(listed["logs/app.log"] == std::make_pair(std::string("Appendable"), std::string("12")));
    CHECK(listed["logs/plain"].first == "Normal");
  }
  CHECK(f.Stat("APPEND") == 10);
}

TEST_CASE("Appends stay Appendable through disk streaming, rescans and memory-only keys",
          "[append]") {
  ServerFixture f;
  // No memory cache: every GET streams the file, so its identity must match the entry.
  f.Start({"--auth", "off", "--memory-cache-mb", "0"});
  auto& c = f.client();
  std::string whole;
  for (int i = 0; i < 5; ++i) {
    const std::string piece = RandomBytes(40000 + i * 777, 300 + i);
    auto r = AsAppend(c, "big/data.bin", whole.size(), piece);
    REQUIRE(r.status == 200);
    whole += piece;
    CHECK(r.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(whole)));
    auto get = c.Request("GET", "/bkt/big/data.bin");
    REQUIRE(get.status == 200);
    CHECK(get.body == whole);
    CHECK(get.Header("ETag") == r.Header("ETag"));
    CHECK(get.Header("x-oss-object-type") == "Appendable");
  }

  // A rescan keeps what the index knew of an unchanged file: type, ETag, CRC.
  const std::string etag = c.Request("HEAD", "/bkt/big/data.bin").Header("ETag");
  AsRescan(c);
  auto head = c.Request("HEAD", "/bkt/big/data.bin");
  CHECK(head.Header("x-oss-object-type") == "Appendable");
  CHECK(head.Header("ETag") == etag);
  auto r = AsAppend(c, "big/data.bin", whole.size(), "tail");
  CHECK(r.status == 200);
  whole += "tail";
  CHECK(c.Request("GET", "/bkt/big/data.bin").body == whole);

  // A file changed behind the server's back is a Normal object again (a new, synthetic ETag).
  f.WriteFile("big/data.bin", "replaced");
  head = c.Request("HEAD", "/bkt/big/data.bin");
  CHECK(head.Header("x-oss-object-type") == "Normal");
  CHECK(AsCode(AsAppend(c, "big/data.bin", 8, "x")) == "ObjectNotAppendable");

  // Keys that cannot be file names are appended to in memory.
  for (const std::string key : {"a//b", "dir/"}) {
    INFO(key);
    REQUIRE(AsAppend(c, key, 0, "one").status == 200);
    r = AsAppend(c, key, 3, "two");
    REQUIRE(r.status == 200);
    CHECK(r.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf("onetwo")));
    auto get = c.Request("GET", "/bkt/" + ossmount::PercentEncode(key, true));
    CHECK(get.body == "onetwo");
    CHECK(get.Header("x-oss-object-type") == "Appendable");
  }
}

TEST_CASE("AppendObject refuses other object types, and growth past the limit", "[append]") {
  ServerFixture f;
  f.WriteFile("on-disk", "found on disk");
  f.Start({"--auth", "off", "--append-object-limit", "10", "--min-part-size", "1"});
  auto& c = f.client();
  REQUIRE(c.Request("PUT", "/bkt/put", {}, "put").status == 200);
  auto init = c.Request("POST", "/bkt/mp?uploads");
  pugi::xml_document doc;
  const std::string id = ParseXml(doc, init.body).child_value("UploadId");
  auto part = c.Request("PUT", "/bkt/mp?partNumber=1&uploadId=" + id, {}, "part");
  REQUIRE(c.Request("POST", "/bkt/mp?uploadId=" + id, {},
                    "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>" +
                        part.Header("ETag") + "</ETag></Part></CompleteMultipartUpload>")
              .status == 200);
  REQUIRE(AsPutSymlink(c, "link", "put").status == 200);
  for (const char* key : {"on-disk", "put", "mp", "link"}) {
    INFO(key);
    auto r = AsAppend(c, key, 0, "x");
    CHECK(r.status == 409);
    CHECK(AsCode(r) == "ObjectNotAppendable");
  }
  CHECK(c.Request("GET", "/bkt/put").body == "put");
  CHECK(AsListing(c, true)["mp"].first == "Multipart");

  // Up to the limit, not past it.
  REQUIRE(AsAppend(c, "small", 0, "12345678").status == 200);
  auto r = AsAppend(c, "small", 8, "abc");
  CHECK(r.status == 400);
  CHECK(AsCode(r) == "InvalidArgument");
  CHECK(AsAppend(c, "small", 8, "ab").status == 200);
  CHECK(c.Request("GET", "/bkt/small").body == "12345678ab");
  CHECK(AsAppend(c, "small", 10, "").status == 200);  // nothing more is still fine
  CHECK(AsAppend(c, "huge", 0, std::string(11, 'h')).status == 400);

  // Position 0 onto an empty appendable object starts it again, with this request's headers.
  r = AsAppend(c, "empty", 0, "");
  REQUIRE(r.status == 200);
  CHECK(r.Header("x-oss-next-append-position") == "0");
  CHECK(r.Header("x-oss-hash-crc64ecma") == "0");
  r = AsAppend(c, "empty", 0, "abc", {{"Content-Type", "text/csv"}});
  REQUIRE(r.status == 200);
  CHECK(r.Header("x-oss-next-append-position") == "3");
  CHECK(c.Request("HEAD", "/bkt/empty").Header("Content-Type") == "text/csv");

  // A PUT over an appendable object makes it Normal: no more appends.
  REQUIRE(c.Request("PUT", "/bkt/small", {}, "now normal").status == 200);
  CHECK(c.Request("HEAD", "/bkt/small").Header("x-oss-object-type") == "Normal");
  CHECK(AsCode(AsAppend(c, "small", 10, "x")) == "ObjectNotAppendable");
}

TEST_CASE("Concurrent appends at one position: exactly one wins", "[append]") {
  ServerFixture f;
  f.Start({"--auth", "off", "--threads", "4"});
  std::string expected;
  const int kWriters = 6;
  for (int round = 0; round < 8; ++round) {
    INFO("round " << round);
    const uint64_t position = expected.size();
    std::vector<HttpResult> results(kWriters);
    std::vector<std::string> bodies(kWriters);
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
      // Distinct bodies, so the winner shows in the result (built by +=: GCC 12 warns
      // falsely about "literal" + std::string&&).
      bodies[w] = std::to_string(round);
      bodies[w] += '/';
      bodies[w] += std::to_string(w);
      bodies[w] += RandomBytes(5000, static_cast<uint32_t>(w));
      threads.emplace_back([&, w] {
        HttpTestClient c(f.server().port());
        results[w] = AsAppend(c, "race", position, bodies[w]);
      });
    }
    for (auto& t : threads) t.join();
    int winners = 0;
    for (int w = 0; w < kWriters; ++w) {
      if (results[w].status == 200) {
        ++winners;
        expected += bodies[w];
      }
    }
    REQUIRE(winners == 1);
    for (int w = 0; w < kWriters; ++w) {
      if (results[w].status == 200) continue;
      CHECK(results[w].status == 409);
      CHECK(AsCode(results[w]) == "PositionNotEqualToLength");
      CHECK(results[w].Header("x-oss-next-append-position") == std::to_string(expected.size()));
    }
  }
  auto get = f.client().Request("GET", "/bkt/race");
  CHECK(get.body == expected);
  CHECK(get.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(expected)));
}

TEST_CASE("A store's readers see an appended object before or after an append, never between",
          "[append]") {
  const std::string root = MakeTempDir("ossmount-append-");
  REQUIRE(!root.empty());
  {
    ObjectStore store(root, 0);  // no cache: every read goes to the file
    REQUIRE(store.CreateBucket("b").ok());
    AppendOptions first;
    REQUIRE(store.Append("b", "k", "start", first).ok());
    std::atomic<bool> done{false};
    std::atomic<int> bad{0};
    std::thread reader([&] {
      uint64_t last = 0;
      while (!done) {
        ObjectPtr obj = store.Find("b", "k");
        if (!obj || obj->object_type != "Appendable" || obj->size < last || !obj->known_crc) {
          ++bad;
          continue;
        }
        last = obj->size;
        auto data = store.ReadRange(obj, 0, obj->size);
        if (!data.ok() || CrcOf(data.value()) != *obj->known_crc) ++bad;
      }
    });
    uint64_t length = 5;
    for (int i = 0; i < 300; ++i) {
      AppendOptions next;
      next.position = length;
      auto r = store.Append("b", "k", RandomBytes(3000, i), next);
      REQUIRE(r.ok());
      REQUIRE(r.value().outcome == AppendResult::Outcome::kAppended);
      length = r.value().next_position;
    }
    done = true;
    reader.join();
    CHECK(bad == 0);
    ObjectPtr obj = store.Find("b", "k");
    REQUIRE(obj);
    CHECK(obj->size == length);
    CHECK(obj->object_type == "Appendable");
  }
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
}

TEST_CASE("PutSymlink and GetSymlink, and GET and HEAD follow the link", "[symlink]") {
  ServerFixture f;
  f.Start();
  auto& c = f.client();
  const std::string target_key = "dir/t a+r\xC3\xBC.bin";
  const std::string data = RandomBytes(20000, 41);
  auto put = c.Request("PUT", "/bkt/" + ossmount::PercentEncode(target_key, true),
                       {{"Content-Type", "application/x-target"}}, data);
  REQUIRE(put.status == 200);
  auto r = AsPutSymlink(c, "links/l1", target_key,
                        {{"Content-Type", "text/x-link"}, {"x-oss-meta-kind", "link"}});
  REQUIRE(r.status == 200);
  CHECK(!r.Header("ETag").empty());

  auto gs = c.Request("GET", "/bkt/links/l1?symlink");
  REQUIRE(gs.status == 200);
  CHECK(ossmount::PercentDecode(gs.Header("x-oss-symlink-target")).value() == target_key);
  CHECK(gs.Header("ETag") == r.Header("ETag"));
  CHECK(!gs.Header("Last-Modified").empty());
  CHECK(gs.body.empty());

  // GET and HEAD: the target's bytes, length, ETag and CRC; the link's type and metadata.
  for (const char* method : {"GET", "HEAD"}) {
    INFO(method);
    auto got = c.Request(method, "/bkt/links/l1");
    REQUIRE(got.status == 200);
    if (std::string(method) == "GET") CHECK(got.body == data);
    CHECK(got.Header("Content-Length") == std::to_string(data.size()));
    CHECK(got.Header("ETag") == put.Header("ETag"));
    CHECK(got.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(data)));
    CHECK(got.Header("x-oss-object-type") == "Symlink");
    CHECK(got.Header("Content-Type") == "text/x-link");
    CHECK(got.Header("x-oss-meta-kind") == "link");
  }
  auto ranged = c.Request("GET", "/bkt/links/l1", {{"Range", "bytes=100-199"}});
  CHECK(ranged.status == 206);
  CHECK(ranged.body == data.substr(100, 100));
  // The link reads what the target is now.
  REQUIRE(c.Request("PUT", "/bkt/" + ossmount::PercentEncode(target_key, true), {}, "v2").status ==
          200);
  CHECK(c.Request("GET", "/bkt/links/l1").body == "v2");

  // GetSymlink of something else.
  r = c.Request("GET", "/bkt/" + ossmount::PercentEncode(target_key, true) + "?symlink");
  CHECK(r.status == 400);
  CHECK(AsCode(r) == "NotSymlink");
  CHECK(r.Header("x-oss-ec") == "0043-00000101");
  r = c.Request("GET", "/bkt/links/none?symlink");
  CHECK(r.status == 404);
  CHECK(AsCode(r) == "NoSuchKey");
  r = c.Request("PUT", "/bkt/links/bad?symlink");
  CHECK(r.status == 400);
  CHECK(AsCode(r) == "MissingArgument");

  // A dangling link, and a link to a link (one level is followed).
  REQUIRE(AsPutSymlink(c, "links/dangling", "no/such/key").status == 200);
  r = c.Request("GET", "/bkt/links/dangling");
  CHECK(r.status == 404);
  CHECK(AsCode(r) == "SymlinkTargetNotExist");
  r = c.Request("HEAD", "/bkt/links/dangling");
  CHECK(r.status == 404);
  CHECK(r.Header("x-oss-ec") == "0026-00000012");
  CHECK(c.Request("GET", "/bkt/links/dangling?symlink").status == 200);
  REQUIRE(AsPutSymlink(c, "links/l2", "links/l1").status == 200);
  CHECK(AsCode(c.Request("GET", "/bkt/links/l2")) == "SymlinkTargetNotExist");
  // ... until the target appears.
  REQUIRE(c.Request("PUT", "/bkt/no/such/key", {}, "now here").status == 200);
  CHECK(c.Request("GET", "/bkt/links/dangling").body == "now here");

  CHECK(f.Stat("PUT_SYMLINK") == 4);  // the one without a target too
  CHECK(f.Stat("GET_SYMLINK") == 4);
}

TEST_CASE("Symlinks: forbid-overwrite, listings, rescans, deletes and copies", "[symlink]") {
  ServerFixture f;
  f.WriteFile("file", "file bytes");
  f.WriteFile("was-file", "old bytes");
  f.Start();
  auto& c = f.client();
  const std::pair<std::string, std::string> forbid{"x-oss-forbid-overwrite", "true"};
  auto r = AsPutSymlink(c, "file", "elsewhere", {forbid});
  CHECK(r.status == 409);
  CHECK(AsCode(r) == "FileAlreadyExists");
  CHECK(c.Request("GET", "/bkt/file").body == "file bytes");
  REQUIRE(AsPutSymlink(c, "link", "file", {forbid}).status == 200);
  CHECK(AsPutSymlink(c, "link", "file", {forbid}).status == 409);
  // Without it, a link replaces what was there (and its file is gone for good).
  REQUIRE(AsPutSymlink(c, "was-file", "file").status == 200);
  CHECK_FALSE(std::filesystem::exists(f.root() + "/bkt/was-file"));

  for (bool v2 : {true, false}) {
    INFO((v2 ? "V2" : "V1"));
    auto listed = AsListing(c, v2);
    CHECK(listed["link"] == std::make_pair(std::string("Symlink"), std::string("0")));
    CHECK(listed["was-file"].first == "Symlink");
    CHECK(listed["file"] == std::make_pair(std::string("Normal"), std::string("10")));
  }

  // A rescan rebuilds the index from disk, and keeps the links (they live in memory).
  AsRescan(c);
  CHECK(
      ossmount::PercentDecode(c.Request("GET", "/bkt/link?symlink").Header("x-oss-symlink-target"))
          .value() == "file");
  CHECK(c.Request("GET", "/bkt/link").body == "file bytes");
  CHECK(AsListing(c, true)["link"].first == "Symlink");

  // CopyObject copies the link itself, as OSS does; UploadPartCopy refuses it.
  r = c.Request("PUT", "/bkt/link-copy", {{"x-oss-copy-source", "/bkt/link"}});
  REQUIRE(r.status == 200);
  CHECK(ossmount::PercentDecode(
            c.Request("GET", "/bkt/link-copy?symlink").Header("x-oss-symlink-target"))
            .value() == "file");
  CHECK(c.Request("GET", "/bkt/link-copy").body == "file bytes");
  auto init = c.Request("POST", "/bkt/mp?uploads");
  pugi::xml_document doc;
  const std::string id = ParseXml(doc, init.body).child_value("UploadId");
  r = c.Request("PUT", "/bkt/mp?partNumber=1&uploadId=" + id, {{"x-oss-copy-source", "/bkt/link"}});
  CHECK(r.status == 400);
  CHECK(AsCode(r) == "InvalidArgument");
  CHECK(c.Request("DELETE", "/bkt/mp?uploadId=" + id).status == 204);

  // DELETE removes the link, not its target; the old file does not come back.
  CHECK(c.Request("DELETE", "/bkt/link").status == 204);
  CHECK(c.Request("GET", "/bkt/link?symlink").status == 404);
  CHECK(c.Request("GET", "/bkt/link").status == 404);
  CHECK(c.Request("GET", "/bkt/file").body == "file bytes");
  CHECK(c.Request("DELETE", "/bkt/was-file").status == 204);
  CHECK(c.Request("GET", "/bkt/was-file").status == 404);
}

TEST_CASE("S3 requests with append or symlink sub-resources keep their old meaning",
          "[append][symlink]") {
  ServerFixture f;
  f.Start();
  auto& c = f.client();
  const std::pair<std::string, std::string> s3{"x-amz-content-sha256", "UNSIGNED-PAYLOAD"};
  auto r = c.Request("POST", "/bkt/k?append&position=0", {s3}, "x");
  CHECK(r.status == 501);
  r = c.Request("PUT", "/bkt/k?symlink", {s3, {"x-oss-symlink-target", "t"}}, "a body");
  CHECK(r.status == 200);
  r = c.Request("GET", "/bkt/k?symlink", {s3});
  CHECK(r.status == 200);
  CHECK(r.body == "a body");
  CHECK(f.Stat("APPEND") == 0);
  CHECK(f.Stat("PUT_SYMLINK") == 0);
}

TEST_CASE("fault-ops append faults appends alone, and write faults cover appends and symlinks",
          "[append][faults]") {
  ServerFixture f;
  f.Start({"--auth", "off", "--error-rate", "1", "--error-kinds", "500", "--fault-ops", "append"});
  auto& c = f.client();
  auto r = AsAppend(c, "faulted", 0, "x");
  CHECK(r.status == 500);
  CHECK(c.Request("HEAD", "/bkt/faulted").status == 404);  // not executed
  CHECK(c.Request("PUT", "/bkt/plain", {}, "p").status == 200);
  CHECK(f.Stat("faults.error") == 1);

  REQUIRE(c.Request("POST", "/_ossmount/faults?clear&write-error-rate=1&write-error-kinds=503")
              .status == 200);
  CHECK(AsAppend(c, "faulted", 0, "x").status == 503);
  CHECK(AsPutSymlink(c, "link", "plain").status == 503);
  CHECK(c.Request("HEAD", "/bkt/faulted").status == 404);
  CHECK(c.Request("GET", "/bkt/link?symlink").status == 404);
  CHECK(f.Stat("faults.write_error") == 2);
}
