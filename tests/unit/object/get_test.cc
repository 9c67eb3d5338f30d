// GET semantics: ranges (206, 200 to a ranged request, 416, 412), CRC-64 verification,
// fixed and growable targets, the data endpoint and its fallback, and exactly-once
// completion under concurrency.
#include <catch2/catch.hpp>
#include <mutex>
#include <set>
#include <thread>

#include "common/crc64.h"
#include "common/metrics.h"
#include "object/headers.h"
#include "object/request_metrics.h"
#include "unit/object/harness.h"

using namespace ossmount;
using namespace ossmount::object;
using namespace ossmount::object::testing;

namespace {

std::string MakeObject(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + 7) & 0xFF);
  return s;
}

// A server holding one object that honours Range like OSS with standard range behaviour
// (or ignores it, like a legacy server, when ignore_range is set).
struct ObjectServer {
  std::string data = MakeObject(1000);
  bool ignore_range = false;
  bool send_crc = true;
  std::string etag = "\"v1\"";

  FakeReply operator()(const SeenRequest& r) const {
    if (const std::string* m = r.Header("if-match"); m && *m != etag) {
      return FakeReply::Error(412, "PreconditionFailed");
    }
    http::HeaderList h = {{"ETag", etag}, {"Last-Modified", "Fri, 04 Mar 2022 02:46:25 GMT"}};
    if (send_crc) h.emplace_back("x-oss-hash-crc64ecma", Crc(data));
    const std::string* range = r.Header("range");
    if (!range || ignore_range) {
      h.emplace_back("Content-Length", std::to_string(data.size()));
      return FakeReply::Ok(data, h);
    }
    uint64_t first = std::stoull(range->substr(6));
    std::string rest = range->substr(range->find('-') + 1);
    uint64_t last = rest.empty() ? data.size() - 1 : std::stoull(rest);
    if (first >= data.size()) return FakeReply::Error(416, "InvalidRange");
    last = std::min<uint64_t>(last, data.size() - 1);
    FakeReply reply = FakeReply::Ok(data.substr(first, last - first + 1), h);
    reply.status = 206;
    reply.headers.emplace_back("Content-Range", "bytes " + std::to_string(first) + "-" +
                                                    std::to_string(last) + "/" +
                                                    std::to_string(data.size()));
    reply.headers.emplace_back("Content-Length", std::to_string(last - first + 1));
    return reply;
  }
};

}  // namespace

TEST_CASE("Ranged GETs into a fixed buffer: 206, clipped at the end, 416 past the end") {
  for (bool ignore_range : {false, true}) {
    INFO("server ignores Range: " << ignore_range);
    Harness h;
    ObjectServer server;
    server.ignore_range = ignore_range;
    h.executor->respond = [&](const SeenRequest& r, int) { return server(r); };
    std::vector<char> buf(1000);

    GetRequest req;
    req.key = "obj";
    req.offset = 100;
    req.length = 50;
    auto got = h.Get(req, GetTarget::Fixed(buf.data(), ignore_range ? 1000 : 50));
    REQUIRE(got.ok());
    CHECK(got->bytes == 50);
    CHECK(got->object_size == 1000);
    CHECK(std::string(buf.data(), 50) == server.data.substr(100, 50));
    CHECK(got->etag == "\"v1\"");

    req.offset = 900;
    req.length = 500;  // runs past the end: the bytes that exist
    got = h.Get(req, GetTarget::Fixed(buf.data(), 1000));
    REQUIRE(got.ok());
    CHECK(got->bytes == 100);
    CHECK(std::string(buf.data(), 100) == server.data.substr(900));

    req.offset = 1000;
    req.length.reset();
    got = h.Get(req, GetTarget::Fixed(buf.data(), 1000));
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().code() == ErrorCode::kInvalidRange);
    CHECK(h.clock->sleeps.empty());
  }
}

TEST_CASE("Whole and ranged GETs into a growable vector") {
  Harness h;
  ObjectServer server;
  h.executor->respond = [&](const SeenRequest& r, int) { return server(r); };
  std::vector<char> out = {'j', 'u', 'n', 'k'};
  GetRequest req;
  req.key = "obj";
  auto got = h.Get(req, GetTarget::Growable(&out));
  REQUIRE(got.ok());
  CHECK(std::string(out.begin(), out.end()) == server.data);
  CHECK(got->crc64 == Crc64(0, server.data.data(), server.data.size()));
  CHECK(h.executor->seen()[0].Header("range") == nullptr);
  CHECK(*h.executor->seen()[0].Header("x-oss-range-behavior") == "standard");

  req.offset = 10;
  got = h.Get(req, GetTarget::Growable(&out));
  REQUIRE(got.ok());
  CHECK(std::string(out.begin(), out.end()) == server.data.substr(10));
  CHECK(*h.executor->seen()[1].Header("range") == "bytes=10-");
}

TEST_CASE("A 200 to a ranged request is cut to the wanted part (growable)") {
  Harness h;
  ObjectServer server;
  server.ignore_range = true;
  h.executor->respond = [&](const SeenRequest& r, int) { return server(r); };
  std::vector<char> out;
  GetRequest req;
  req.key = "obj";
  req.offset = 998;
  req.length = 10;
  auto got = h.Get(req, GetTarget::Growable(&out));
  REQUIRE(got.ok());
  CHECK(got->bytes == 2);
  CHECK(std::string(out.begin(), out.end()) == server.data.substr(998));
}

TEST_CASE("A 200 whole object larger than a fixed buffer is an integrity error, not retried") {
  Harness h;
  ObjectServer server;
  server.ignore_range = true;
  h.executor->respond = [&](const SeenRequest& r, int) { return server(r); };
  std::vector<char> buf(100);
  GetRequest req;
  req.key = "obj";
  req.offset = 0;
  req.length = 100;
  auto got = h.Get(req, GetTarget::Fixed(buf.data(), buf.size()));
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == ErrorCode::kIntegrity);
  CHECK(h.executor->count() == 1);
}

TEST_CASE("If-Match is sent and a changed object is kPreconditionFailed") {
  Harness h;
  ObjectServer server;
  h.executor->respond = [&](const SeenRequest& r, int) { return server(r); };
  std::vector<char> buf(10);
  GetRequest req;
  req.key = "obj";
  req.length = 10;
  req.if_match = "\"v1\"";
  REQUIRE(h.Get(req, GetTarget::Fixed(buf.data(), 10)).ok());
  server.etag = "\"v2\"";
  auto got = h.Get(req, GetTarget::Fixed(buf.data(), 10));
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == ErrorCode::kPreconditionFailed);
  CHECK(got.status().message().find("\"v1\"") != std::string::npos);
  CHECK(*h.executor->seen()[1].Header("if-match") == "\"v1\"");
}

TEST_CASE(
    "A pinned whole GET that overflows is kPreconditionFailed from a server ignoring If-Match") {
  // A server that ignores If-Match sends the grown object; the buffer sized for the pinned
  // object overflows. That is a change (ESTALE to the reader), not corruption, and is not
  // retried.
  Harness h;
  ObjectServer server;
  server.data = MakeObject(1200);
  server.etag = "\"v2\"";
  h.executor->respond = [&](const SeenRequest& r, int) {
    SeenRequest without_if_match = r;
    std::erase_if(without_if_match.headers,
                  [](const auto& h) { return HeaderNameEquals(h.first, "if-match"); });
    return server(without_if_match);
  };
  std::vector<char> buf(1000);
  GetRequest req;
  req.key = "obj";
  req.if_match = "\"v1\"";
  auto got = h.Get(req, GetTarget::Fixed(buf.data(), buf.size()));
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == ErrorCode::kPreconditionFailed);
  INFO(got.status().message());
  CHECK(got.status().message().find("changed since it was opened") != std::string::npos);
  REQUIRE(h.executor->seen()[0].Header("if-match") != nullptr);
  CHECK(h.executor->count() == 1);

  SECTION("the same etag on a whole GET still means the object is not the pinned size") {
    server.etag = "\"v1\"";
    auto again = h.Get(req, GetTarget::Fixed(buf.data(), buf.size()));
    CHECK(again.status().code() == ErrorCode::kPreconditionFailed);
  }
  SECTION("a ranged GET with the pinned etag that overflows stays an integrity error") {
    server.etag = "\"v1\"";
    server.ignore_range = true;
    GetRequest ranged = req;
    ranged.length = 100;
    std::vector<char> small(100);
    auto again = h.Get(ranged, GetTarget::Fixed(small.data(), small.size()));
    CHECK(again.status().code() == ErrorCode::kIntegrity);
  }
  SECTION("without a pin the overflow stays an integrity error") {
    GetRequest unpinned = req;
    unpinned.if_match.clear();
    auto again = h.Get(unpinned, GetTarget::Fixed(buf.data(), buf.size()));
    CHECK(again.status().code() == ErrorCode::kIntegrity);
  }
}

TEST_CASE("CRC mismatch is retried and then succeeds - a persistent one never hands bytes up") {
  Harness h;
  ObjectServer server;
  int corrupt = 2;
  h.executor->respond = [&](const SeenRequest& r, int) {
    FakeReply reply = server(r);
    if (corrupt-- > 0) reply.body[500] ^= 1;
    return reply;
  };
  std::vector<char> out;
  GetRequest req;
  req.key = "obj";
  auto got = h.Get(req, GetTarget::Growable(&out));
  REQUIRE(got.ok());
  CHECK(std::string(out.begin(), out.end()) == server.data);
  CHECK(h.executor->count() == 3);

  corrupt = 100;
  out.clear();
  got = h.Get(req, GetTarget::Growable(&out));
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == ErrorCode::kIntegrity);
  CHECK(got.status().message().find("CRC-64 mismatch") != std::string::npos);
  CHECK(out.empty());
}

TEST_CASE("A 206 that covers the whole object is CRC-checked too - partial ranges are not") {
  Harness h;
  ObjectServer server;
  h.executor->respond = [&](const SeenRequest& r, int) {
    FakeReply reply = server(r);
    reply.body[0] ^= 1;  // always corrupt
    return reply;
  };
  std::vector<char> buf(1000);
  GetRequest req;
  req.key = "obj";
  req.length = 1000;
  auto whole = h.Get(req, GetTarget::Fixed(buf.data(), 1000));
  REQUIRE_FALSE(whole.ok());
  CHECK(whole.status().code() == ErrorCode::kIntegrity);
  req.length = 999;  // cannot be checked against a whole-object CRC
  CHECK(h.Get(req, GetTarget::Fixed(buf.data(), 1000)).ok());
}

TEST_CASE(
    "Body bytes are reported early (on_arrival) only for a ranged GET pinned by If-Match and "
    "answered with that range of that version, never for bytes a CRC will check") {
  Harness h;
  ObjectServer server;
  h.executor->respond = [&](const SeenRequest& r, int) { return server(r); };
  std::vector<char> buf(1000);
  std::vector<size_t> reports;
  auto target = [&] {
    GetTarget t = GetTarget::Fixed(buf.data(), buf.size());
    t.on_arrival = [&](size_t n) { reports.push_back(n); };
    return t;
  };
  GetRequest req;
  req.key = "obj";
  req.offset = 100;
  req.length = 300;
  req.if_match = server.etag;
  auto got = h.Get(req, target());
  REQUIRE(got.ok());
  CHECK(reports == std::vector<size_t>{300});
  CHECK(std::string(buf.data(), 300) == server.data.substr(100, 300));

  SECTION("not pinned: no If-Match") { req.if_match.clear(); }
  SECTION("a whole object (206 covering all of it) the CRC-64 will check") {
    req.offset = 0;
    req.length = 1000;
  }
  SECTION("a server that ignores Range (200: the bytes are moved afterwards)") {
    server.ignore_range = true;
  }
  SECTION("another version (the reply's ETag differs; a server ignoring If-Match)") {
    h.executor->respond = [&](const SeenRequest& r, int) {
      ObjectServer other = server;
      other.etag = "\"v2\"";
      SeenRequest without_if_match = r;
      std::erase_if(without_if_match.headers,
                    [](const auto& h) { return HeaderNameEquals(h.first, "if-match"); });
      return other(without_if_match);
    };
  }
  reports.clear();
  h.Get(req, target());
  CHECK(reports.empty());
}

TEST_CASE(
    "A retry of a pinned ranged GET cut short asks only for the bytes still missing, and other "
    "GETs "
    "ask for the whole range again") {
  Harness h;
  ObjectServer server;
  std::vector<size_t> cuts;  // body bytes each attempt delivers before it is cut; then whole
  h.executor->respond = [&](const SeenRequest& r, int index) {
    FakeReply reply = server(r);
    if (static_cast<size_t>(index) < cuts.size()) reply.truncate_at = cuts[index];
    return reply;
  };
  std::vector<char> buf(600, '\0');
  std::vector<size_t> reports;
  GetTarget target = GetTarget::Fixed(buf.data(), buf.size());
  target.on_arrival = [&](size_t n) { reports.push_back(n); };
  GetRequest req;
  req.key = "obj";
  req.offset = 100;
  req.length = 600;
  req.if_match = server.etag;
  auto ranges = [&] {
    std::vector<std::string> out;
    for (const SeenRequest& r : h.executor->seen()) {
      out.push_back(*r.Header("range"));
      CHECK(*r.Header("if-match") == server.etag);
    }
    return out;
  };
  auto whole_range_right = [&] {
    CHECK(std::string(buf.data(), 600) == server.data.substr(100, 600));
  };

  SECTION("cut after 250 bytes: the retry asks for bytes 350-699 and writes after the 250") {
    cuts = {250};
    auto got = h.Get(req, target);
    REQUIRE(got.ok());
    CHECK(got->bytes == 600);
    CHECK(got->object_size == 1000);
    whole_range_right();
    CHECK(ranges() == std::vector<std::string>{"bytes=100-699", "bytes=350-699"});
    CHECK(h.executor->seen()[1].resume_from == 250);
    CHECK(reports == std::vector<size_t>{250, 600});
    RetryStats stats = h.Client().retry_stats();
    CHECK(stats.retries == 1);
    CHECK(stats.resumed == 1);
    CHECK(stats.resumed_bytes == 250);
  }
  SECTION("cut twice: each retry starts where the bytes stopped") {
    cuts = {250, 100, 0};
    auto got = h.Get(req, target);
    REQUIRE(got.ok());
    CHECK(got->bytes == 600);
    whole_range_right();
    CHECK(ranges() == std::vector<std::string>{"bytes=100-699", "bytes=350-699", "bytes=450-699",
                                               "bytes=450-699"});
    CHECK(reports == std::vector<size_t>{250, 350, 600});
    CHECK(h.Client().retry_stats().resumed == 3);
    CHECK(h.Client().retry_stats().resumed_bytes == 250 + 350 + 350);
  }
  SECTION("cut before any byte: the retry asks for the whole range") {
    cuts = {0};
    REQUIRE(h.Get(req, target).ok());
    whole_range_right();
    CHECK(ranges() == std::vector<std::string>{"bytes=100-699", "bytes=100-699"});
    CHECK(h.Client().retry_stats().resumed == 0);
  }
  SECTION("the object changed before the retry: kPreconditionFailed, the bytes handed out kept") {
    cuts = {250};
    h.executor->respond = [&](const SeenRequest& r, int index) {
      FakeReply reply = server(r);
      if (index == 0) {
        reply.truncate_at = 250;
        server.etag = "\"v2\"";  // replaced on the server while the first body was sent
      }
      return reply;
    };
    auto got = h.Get(req, target);
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().code() == ErrorCode::kPreconditionFailed);
    CHECK(std::string(buf.data(), 250) == server.data.substr(100, 250));
    CHECK(reports == std::vector<size_t>{250});
    REQUIRE(h.executor->count() == 2);
    CHECK(*h.executor->seen()[1].Header("range") == "bytes=350-699");
    CHECK(*h.executor->seen()[1].Header("if-match") == "\"v1\"");
  }
  SECTION("not pinned (no If-Match): nothing is handed out early, the retry asks for it all") {
    cuts = {250};
    req.if_match.clear();
    REQUIRE(h.Get(req, target).ok());
    whole_range_right();
    CHECK(reports.empty());
    REQUIRE(h.executor->count() == 2);
    CHECK(*h.executor->seen()[1].Header("range") == "bytes=100-699");
    CHECK(h.executor->seen()[1].resume_from == 0);
  }
  SECTION("no length (to the end of the object): the retry asks for the whole range") {
    cuts = {250};
    req.length.reset();
    std::vector<char> rest(900);
    GetTarget to_end = GetTarget::Fixed(rest.data(), rest.size());
    to_end.on_arrival = [&](size_t n) { reports.push_back(n); };
    REQUIRE(h.Get(req, to_end).ok());
    CHECK(std::string(rest.data(), 900) == server.data.substr(100));
    REQUIRE(h.executor->count() == 2);
    CHECK(*h.executor->seen()[1].Header("range") == "bytes=100-");
    CHECK(h.executor->seen()[1].resume_from == 0);
  }
}

TEST_CASE("A 206 covering the whole object without CRC verification is reported early") {
  Harness h;
  h.options.verify_crc64 = false;
  ObjectServer server;
  h.executor->respond = [&](const SeenRequest& r, int) { return server(r); };
  std::vector<char> buf(1000);
  size_t reported = 0;
  GetTarget t = GetTarget::Fixed(buf.data(), buf.size());
  t.on_arrival = [&](size_t n) { reported = n; };
  GetRequest req;
  req.key = "obj";
  req.length = 1000;
  req.if_match = server.etag;
  REQUIRE(h.Get(req, t).ok());
  CHECK(reported == 1000);
}

TEST_CASE("verify_crc64=false and S3 skip the CRC check") {
  for (bool s3 : {false, true}) {
    Harness h;
    if (s3) {
      h.options.protocol = Protocol::kS3;
    } else {
      h.options.verify_crc64 = false;
    }
    ObjectServer server;
    h.executor->respond = [&](const SeenRequest& r, int) {
      FakeReply reply = server(r);
      reply.body[0] ^= 1;
      reply.headers.emplace_back("x-amz-checksum-crc64nvme", "AAAAAAAAAAA=");
      return reply;
    };
    std::vector<char> out;
    GetRequest req;
    req.key = "obj";
    auto got = h.Get(req, GetTarget::Growable(&out));
    REQUIRE(got.ok());
    CHECK(h.executor->count() == 1);
    CHECK(got->crc64.has_value() == !s3);
    if (s3) CHECK(h.executor->seen()[0].Header("x-oss-range-behavior") == nullptr);
  }
}

TEST_CASE("Malformed 206 responses are protocol errors") {
  Harness h;
  h.executor->respond = [](const SeenRequest&, int i) {
    FakeReply r = FakeReply::Ok("0123456789");
    r.status = 206;
    if (i == 0) r.headers = {{"Content-Range", "bytes 5-14/100"}};  // wrong offset
    if (i == 1) r.headers = {};                                     // missing header
    return r;
  };
  std::vector<char> buf(10);
  GetRequest req;
  req.key = "obj";
  req.offset = 0;
  req.length = 10;
  auto first = h.Get(req, GetTarget::Fixed(buf.data(), 10));
  CHECK(first.status().code() == ErrorCode::kProtocol);
  auto second = h.Get(req, GetTarget::Fixed(buf.data(), 10));
  CHECK(second.status().code() == ErrorCode::kProtocol);
}

TEST_CASE("GET argument checks are posted errors") {
  Harness h;
  std::vector<char> out;
  GetRequest req;
  auto got = h.Get(req, GetTarget::Growable(&out));
  CHECK(got.status().code() == ErrorCode::kInvalidArgument);
  req.key = "k";
  req.length = 0;
  CHECK(h.Get(req, GetTarget::Growable(&out)).status().code() == ErrorCode::kInvalidArgument);
  req.length.reset();
  CHECK(h.Get(req, GetTarget{}).status().code() == ErrorCode::kInvalidArgument);
  CHECK(h.executor->count() == 0);
}

TEST_CASE("Data endpoint: GET/HEAD go there, signed with the data signer - LIST does not") {
  Harness h;
  h.options.data_endpoint = "http://cn-beijing-h-internal.oss-data-acc.aliyuncs.com";
  ObjectServer server;
  h.executor->respond = [&](const SeenRequest& r, int) {
    if (r.method == "GET" && r.url.find("list-type") != std::string::npos) {
      return FakeReply::Ok("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>");
    }
    return server(r);
  };
  std::vector<char> out;
  GetRequest req;
  req.key = "obj";
  REQUIRE(h.Get(req, GetTarget::Growable(&out)).ok());
  REQUIRE(h.Head("obj").ok());
  REQUIRE(h.List(ListRequest{}).ok());
  auto seen = h.executor->seen();
  CHECK(seen[0].url == "http://bkt.cn-beijing-h-internal.oss-data-acc.aliyuncs.com/obj");
  CHECK(seen[0].Header("authorization")->rfind("FAKE data", 0) == 0);
  CHECK(seen[1].url == "http://bkt.cn-beijing-h-internal.oss-data-acc.aliyuncs.com/obj");
  CHECK(seen[2].url.rfind("https://bkt.oss-cn-hangzhou.aliyuncs.com/?list-type=2", 0) == 0);
  CHECK(seen[2].Header("authorization")->rfind("FAKE main", 0) == 0);
}

TEST_CASE("Data endpoint connection failure falls back to the main endpoint at once") {
  for (ErrorCode failure : {ErrorCode::kNetwork, ErrorCode::kTimeout}) {
    Harness h;
    h.options.data_endpoint = "acc.example.com";
    ObjectServer server;
    h.executor->respond = [&](const SeenRequest& r, int) {
      if (r.url.find("acc.example.com") != std::string::npos) return FakeReply::Transport(failure);
      return server(r);
    };
    std::vector<char> out;
    GetRequest req;
    req.key = "obj";
    auto got = h.Get(req, GetTarget::Growable(&out));
    REQUIRE(got.ok());
    CHECK(std::string(out.begin(), out.end()) == server.data);
    auto seen = h.executor->seen();
    REQUIRE(seen.size() == 2);
    CHECK(seen[0].url == "https://bkt.acc.example.com/obj");
    CHECK(seen[1].url == "https://bkt.oss-cn-hangzhou.aliyuncs.com/obj");
    CHECK(seen[1].Header("authorization")->rfind("FAKE main", 0) == 0);
    CHECK(h.clock->sleeps.empty());  // no backoff for the fallback

    // While cooling down, the next GET goes straight to the main endpoint...
    REQUIRE(h.Get(req, GetTarget::Growable(&out)).ok());
    CHECK(h.executor->seen()[2].url == "https://bkt.oss-cn-hangzhou.aliyuncs.com/obj");
    // ...and after the cool-down the data endpoint is tried again.
    h.clock->Advance(std::chrono::seconds(31));
    REQUIRE(h.Head("obj").ok());
    CHECK(h.executor->seen()[3].url == "https://bkt.acc.example.com/obj");
  }
}

TEST_CASE("A data-endpoint fallback is not counted as a retry") {
  Harness h;
  h.options.data_endpoint = "acc.example.com";
  ObjectServer server;
  h.executor->respond = [&](const SeenRequest& r, int i) {
    if (i == 0) return FakeReply::Error(503, "ServiceUnavailable");  // retried there
    if (r.url.find("acc.example.com") != std::string::npos) {
      return FakeReply::Transport(ErrorCode::kNetwork);  // then unreachable: fallback
    }
    return server(r);
  };
  metrics::Counter& retries = metrics::Registry::Global().GetCounter(
      "ossmount_request_retries_total", "", {{"type", RequestTypeName(RequestType::kGet)}});
  const uint64_t before = retries.Value();
  std::vector<char> out;
  GetRequest req;
  req.key = "obj";
  REQUIRE(h.Get(req, GetTarget::Growable(&out)).ok());
  CHECK(h.executor->count() == 3);  // data endpoint, data endpoint again, origin
  CHECK(retries.Value() - before == 1);
  CHECK(h.Client().retry_stats().retries == 1);
}

TEST_CASE("Data endpoint HTTP errors do not fall back - they are retried there") {
  Harness h;
  h.options.data_endpoint = "acc.example.com";
  ObjectServer server;
  h.executor->respond = [&](const SeenRequest& r, int i) {
    if (i == 0) return FakeReply::Error(503, "ServiceUnavailable");
    return server(r);
  };
  std::vector<char> out;
  GetRequest req;
  req.key = "obj";
  REQUIRE(h.Get(req, GetTarget::Growable(&out)).ok());
  auto seen = h.executor->seen();
  REQUIRE(seen.size() == 2);
  CHECK(seen[1].url == "https://bkt.acc.example.com/obj");
}

TEST_CASE("Exactly-once completion with many concurrent operations on several threads") {
  Harness h;
  h.Build();
  ObjectServer server;
  std::mutex mu;
  std::set<std::string> failed_once;
  h.executor->respond = [&](const SeenRequest& r, int i) {
    // Every third request fails the first time in a retryable way.
    std::string range = r.Header("range") ? *r.Header("range") : "";
    std::lock_guard<std::mutex> lock(mu);
    if (i % 3 == 0 && failed_once.insert(range).second) {
      return FakeReply::Error(500, "InternalError");
    }
    return server(r);
  };
  constexpr int kOps = 300;
  std::vector<std::atomic<int>> calls(kOps);
  std::vector<std::vector<char>> outs(kOps);
  std::atomic<int> ok{0};
  for (int i = 0; i < kOps; ++i) {
    GetRequest req;
    req.key = "obj";
    req.offset = static_cast<uint64_t>(i);
    h.client->Get(req, GetTarget::Growable(&outs[i]), [&, i](Result<GetResult> r) {
      calls[i].fetch_add(1);
      if (r.ok() && std::string(outs[i].begin(), outs[i].end()) == server.data.substr(i)) ok++;
    });
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&] { h.io.run(); });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kOps; ++i) CHECK(calls[i].load() == 1);
  CHECK(ok.load() == kOps);
}
