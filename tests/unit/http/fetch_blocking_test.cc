// FetchBlocking and the blocking auth::HttpFetcher against the local test server.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "http/fetch_engine.h"
#include "http/metadata_fetcher.h"
#include "unit/http/test_http_server.h"

namespace ossmount::http {
namespace {

using testing::Route;
using testing::TestHttpServer;

TEST_CASE("FetchBlocking GET into a fixed buffer", "[fetch_blocking]") {
  TestHttpServer server;
  Route route;
  route.body = "blocking body";
  route.headers.push_back({"X-Test", "1"});
  server.SetRoute("/b", route);
  std::vector<char> buffer(64);
  Request request;
  request.url = server.Url("/b");
  request.target = GetTarget::Fixed(buffer.data(), buffer.size());
  Response r = FetchBlocking(request, {});
  REQUIRE(r.transport.ok());
  CHECK(r.status == 200);
  CHECK(std::string(buffer.data(), r.body_bytes) == "blocking body");
  REQUIRE(r.Header("x-test") != nullptr);
  CHECK(*r.Header("x-test") == "1");
}

TEST_CASE("FetchBlocking reports 404 bodies, truncation and refused connections",
          "[fetch_blocking]") {
  TestHttpServer server;
  Route missing;
  missing.status = 404;
  missing.body = "<Error><Code>NoSuchKey</Code></Error>";
  server.SetRoute("/missing", missing);
  Route cut;
  cut.body = std::string(1000, 'c');
  cut.truncate_after = 10;
  server.SetRoute("/cut", cut);

  Request request;
  request.url = server.Url("/missing");
  Response r = FetchBlocking(request, {});
  REQUIRE(r.transport.ok());
  CHECK(r.status == 404);
  CHECK(r.error_body == missing.body);

  request.url = server.Url("/cut");
  r = FetchBlocking(request, {});
  CHECK(r.transport.code() == ErrorCode::kIntegrity);
  CHECK(r.transport.retryable());

  request.url = "http://127.0.0.1:1/";
  r = FetchBlocking(request, {});
  CHECK(r.transport.code() == ErrorCode::kNetwork);
  CHECK(r.transport.message() ==
        "could not connect to 127.0.0.1:1 (connection refused); check the endpoint");
}

TEST_CASE("FetchBlocking PUT sends the body", "[fetch_blocking]") {
  TestHttpServer server;
  server.SetRoute("/p", Route{});
  Request request;
  request.method = "PUT";
  request.url = server.Url("/p");
  request.body = SharedBytes::Copy("payload");
  Response r = FetchBlocking(request, {});
  REQUIRE(r.transport.ok());
  auto seen = server.requests();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].body == "payload");
  CHECK(seen[0].headers["content-length"] == "7");
}

TEST_CASE("the blocking HttpFetcher returns status and body for the metadata service",
          "[fetch_blocking]") {
  TestHttpServer server;
  Route role;
  role.body = "my-role";
  server.SetRoute("/latest/meta-data/ram/security-credentials/", role);
  Route missing;
  missing.status = 404;
  missing.body = "not found here";
  server.SetRoute("/latest/meta-data/ram/security-credentials/none", missing);

  auth::HttpFetcher fetch = MakeBlockingHttpFetcher();
  auto ok = fetch("GET", server.Url("/latest/meta-data/ram/security-credentials/"),
                  {{"X-aliyun-ecs-metadata-token", "tok"}});
  REQUIRE(ok.ok());
  CHECK(ok->status == 200);
  CHECK(ok->body == "my-role");
  CHECK(server.requests().at(0).headers["x-aliyun-ecs-metadata-token"] == "tok");

  auto not_found = fetch("GET", server.Url("/latest/meta-data/ram/security-credentials/none"), {});
  REQUIRE(not_found.ok());
  CHECK(not_found->status == 404);
  CHECK(not_found->body == "not found here");

  // A 200 body past 64 KiB (a broken or hostile metadata server) is not held.
  Route huge;
  huge.body = std::string(kMaxMetadataBodyBytes + 1, 'j');
  huge.chunked = true;
  server.SetRoute("/latest/meta-data/ram/security-credentials/huge", huge);
  auto too_big = fetch("GET", server.Url("/latest/meta-data/ram/security-credentials/huge"), {});
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.status().code() == ErrorCode::kProtocol);
  CHECK(too_big.status().message().find("larger than the 65536-byte limit") != std::string::npos);

  auto refused = fetch("GET", "http://127.0.0.1:1/latest/meta-data/", {});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == ErrorCode::kNetwork);
}

}  // namespace
}  // namespace ossmount::http
