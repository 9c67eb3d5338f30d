// Write faults against the real binary: injected errors, bodies reset or cut short, lost
// Complete answers, upload pacing, and the key-prefix scope. Whatever the fault, the client
// never sees a success for a write that did not happen. Time checks are lower bounds only.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "object_store.h"
#include "testserver_fixture.h"

using namespace ossmount::testserver;
using Clock = std::chrono::steady_clock;

namespace {

std::string FCode(const HttpResult& r) {
  pugi::xml_document doc;
  doc.load_buffer(r.body.data(), r.body.size());
  return doc.child("Error").child_value("Code");
}

std::string FInitiate(HttpTestClient& c, const std::string& key) {
  auto r = c.Request("POST", "/bkt/" + key + "?uploads");
  REQUIRE(r.status == 200);
  pugi::xml_document doc;
  return ParseXml(doc, r.body).child_value("UploadId");
}

std::string FCompleteXml(const std::string& etag) {
  return "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>" + etag +
         "</ETag></Part></CompleteMultipartUpload>";
}

// Sends a raw HTTP/1.1 request on a new connection, waits `wait` for any byte of an answer,
// then closes the connection. Whether a byte (or the connection's end) came.
bool AnythingArrives(uint16_t port, const std::string& method, const std::string& target,
                     const std::string& body, std::chrono::milliseconds wait) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  const std::string request = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                              "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  REQUIRE(::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size()));
  pollfd p{fd, POLLIN, 0};
  const int ready = ::poll(&p, 1, static_cast<int>(wait.count()));
  ::close(fd);
  return ready > 0;
}

}  // namespace

TEST_CASE("write-error-rate refuses writes in its prefix without executing them",
          "[write-faults]") {
  ServerFixture f;
  f.WriteFile("ckpt/old", "old");
  f.Start({"--auth", "off", "--write-error-rate", "1", "--write-fault-prefix", "ckpt/",
           "--retry-after", "2"});
  auto& c = f.client();
  auto r = c.Request("PUT", "/bkt/ckpt/new", {}, "data");
  CHECK(r.status == 503);
  CHECK(FCode(r) == "ServiceUnavailable");
  CHECK(r.Header("Retry-After") == "2");
  CHECK(c.Request("POST", "/bkt/ckpt/mp?uploads").status == 503);
  CHECK(c.Request("DELETE", "/bkt/ckpt/old").status == 503);
  CHECK(c.Request("PUT", "/bkt/ckpt/copy", {{"x-oss-copy-source", "/bkt/ckpt/old"}}).status == 503);
  // Not executed; reads are untouched; other prefixes are not faulted.
  CHECK(c.Request("GET", "/bkt/ckpt/new").status == 404);
  CHECK(c.Request("GET", "/bkt/ckpt/old").body == "old");
  CHECK(c.Request("PUT", "/bkt/other/new", {}, "data").status == 200);
  CHECK(f.Stat("faults.write_error") == 4);
  CHECK(f.Stat("faults.error") == 0);
  CHECK(f.Stat("open_multipart_uploads") == 0);

  // Live through the control API: other kinds, every key, then off.
  auto set = c.Request("POST", "/_ossmount/faults?write-fault-prefix=&write-error-kinds=500");
  REQUIRE(set.status == 200);
  CHECK(set.body.find("\"write-error-rate\":1") != std::string::npos);
  CHECK(c.Request("PUT", "/bkt/other/x", {}, "d").status == 500);
  REQUIRE(c.Request("POST", "/_ossmount/faults?clear").status == 200);
  CHECK(c.Request("PUT", "/bkt/ckpt/new", {}, "data").status == 200);
}

TEST_CASE("write-reset-rate resets mid-body and nothing is written", "[write-faults]") {
  ServerFixture f;
  f.Start({"--auth", "off", "--write-reset-rate", "1", "--min-part-size", "1"});
  auto& c = f.client();
  const std::string data = RandomBytes(1 << 20, 31);
  for (int i = 0; i < 4; ++i) {
    auto r = c.Request("PUT", "/bkt/reset/" + std::to_string(i), {}, data);
    CHECK(r.status == 0);
    CHECK_FALSE(r.error.empty());
  }
  CHECK(f.Stat("faults.body_reset") == 4);
  CHECK(f.Stat("bytes_received") < 4u * data.size());
  // A body-less write is reset too (before it runs).
  auto init = c.Request("POST", "/bkt/reset/mp?uploads");
  CHECK(init.status == 0);
  CHECK(f.Stat("open_multipart_uploads") == 0);
  REQUIRE(c.Request("POST", "/_ossmount/faults?clear").status == 200);
  for (int i = 0; i < 4; ++i) {
    CHECK(c.Request("GET", "/bkt/reset/" + std::to_string(i)).status == 404);
  }
  CHECK(f.Stat("PUT") == 4);  // counted: the origin saw them
}

TEST_CASE("write-truncate-rate reads part of the body, then answers 400 IncompleteBody",
          "[write-faults]") {
  ServerFixture f;
  f.Start({"--auth", "off", "--min-part-size", "1"});
  auto& c = f.client();
  std::string id = FInitiate(c, "cut/mp");
  REQUIRE(c.Request("POST", "/_ossmount/faults?write-truncate-rate=1").status == 200);
  const std::string data = RandomBytes(600000, 32);
  auto r = c.Request("PUT", "/bkt/cut/obj", {}, data);
  REQUIRE(r.status == 400);
  CHECK(FCode(r) == "IncompleteBody");
  r = c.Request("PUT", "/bkt/cut/mp?partNumber=1&uploadId=" + id, {}, data);
  REQUIRE(r.status == 400);
  CHECK(FCode(r) == "IncompleteBody");
  CHECK(c.connects() == 2);  // each cut closes its connection
  CHECK(f.Stat("faults.body_truncate") == 2);
  REQUIRE(c.Request("POST", "/_ossmount/faults?clear").status == 200);
  CHECK(c.Request("GET", "/bkt/cut/obj").status == 404);
  auto parts = c.Request("GET", "/bkt/cut/mp?uploadId=" + id);
  REQUIRE(parts.status == 200);
  CHECK(parts.body.find("<Part>") == std::string::npos);  // the part was not stored
}

TEST_CASE("lost-complete-rate: the object exists, the answer is lost, a retry gets NoSuchUpload",
          "[write-faults]") {
  ServerFixture f;
  f.Start({"--auth", "off", "--min-part-size", "1", "--lost-complete-rate", "1"});
  auto& c = f.client();
  std::string id = FInitiate(c, "ckpt/model.pt");
  const std::string data = RandomBytes(300000, 33);
  auto part = c.Request("PUT", "/bkt/ckpt/model.pt?partNumber=1&uploadId=" + id, {}, data);
  REQUIRE(part.status == 200);
  const std::string xml = FCompleteXml(part.Header("ETag"));
  auto done = c.Request("POST", "/bkt/ckpt/model.pt?uploadId=" + id, {}, xml);
  CHECK(done.status == 0);
  CHECK_FALSE(done.error.empty());
  auto retry = c.Request("POST", "/bkt/ckpt/model.pt?uploadId=" + id, {}, xml);
  CHECK(retry.status == 404);
  CHECK(FCode(retry) == "NoSuchUpload");
  auto head = c.Request("HEAD", "/bkt/ckpt/model.pt");
  REQUIRE(head.status == 200);
  CHECK(head.Header("Content-Length") == std::to_string(data.size()));
  CHECK(head.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(data)));
  CHECK(c.Request("GET", "/bkt/ckpt/model.pt").body == data);
  CHECK(f.Stat("faults.lost_complete") == 1);
  CHECK(f.Stat("COMPLETE_MULTIPART") == 2);
  CHECK(f.Stat("open_multipart_uploads") == 0);
}

TEST_CASE("unanswered-complete never answers a Complete, applying it first or not",
          "[write-faults]") {
  for (const std::string mode : {"applied", "ignored"}) {
    INFO(mode);
    ServerFixture f;
    f.Start({"--auth", "off", "--min-part-size", "1", "--unanswered-complete", mode,
             "--write-fault-prefix", "ckpt/"});
    auto& c = f.client();
    std::string id = FInitiate(c, "ckpt/model.pt");
    const std::string data = RandomBytes(200000, 35);
    auto part = c.Request("PUT", "/bkt/ckpt/model.pt?partNumber=1&uploadId=" + id, {}, data);
    REQUIRE(part.status == 200);
    const std::string xml = FCompleteXml(part.Header("ETag"));
    // No answer at all, not even a reset, while the client waits.
    CHECK_FALSE(AnythingArrives(f.server().port(), "POST", "/bkt/ckpt/model.pt?uploadId=" + id, xml,
                                std::chrono::milliseconds(500)));
    CHECK(f.Stat("faults.unanswered_complete") == 1);
    HttpTestClient after(f.server().port());  // c idled while the Complete went unanswered
    auto head = after.Request("HEAD", "/bkt/ckpt/model.pt");
    if (mode == "applied") {
      CHECK(head.status == 200);
      CHECK(after.Request("GET", "/bkt/ckpt/model.pt").body == data);
      CHECK(f.Stat("open_multipart_uploads") == 0);
      // The abort a client sends next finds no upload: the Complete came first.
      CHECK(FCode(after.Request("DELETE", "/bkt/ckpt/model.pt?uploadId=" + id)) == "NoSuchUpload");
    } else {
      CHECK(head.status == 404);
      CHECK(f.Stat("open_multipart_uploads") == 1);
      CHECK(after.Request("DELETE", "/bkt/ckpt/model.pt?uploadId=" + id).status == 204);
      CHECK(f.Stat("open_multipart_uploads") == 0);
    }
    // Other keys complete as usual.
    std::string other = FInitiate(after, "other/x");
    auto p1 = after.Request("PUT", "/bkt/other/x?partNumber=1&uploadId=" + other, {}, data);
    REQUIRE(p1.status == 200);
    CHECK(
        after.Request("POST", "/bkt/other/x?uploadId=" + other, {}, FCompleteXml(p1.Header("ETag")))
            .status == 200);
  }
}

TEST_CASE("bandwidth-mbps paces request bodies of the fault ops", "[write-faults]") {
  ServerFixture f;
  f.Start({"--auth", "off", "--bandwidth-mbps", "4", "--fault-ops", "put"});
  const std::string data = RandomBytes(500000, 34);  // 4 Mbit/s = 500 kB/s: at least ~1 s
  auto t = Clock::now();
  auto r = f.client().Request("PUT", "/bkt/paced", {}, data);
  CHECK(std::chrono::duration<double>(Clock::now() - t).count() >= 0.9);
  REQUIRE(r.status == 200);
  CHECK(r.Header("ETag") == std::string("\"") + Md5Hex(data) + "\"");
  CHECK(f.client().Request("GET", "/bkt/paced").body == data);
}
