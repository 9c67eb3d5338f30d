// TLS verification in the fetch engine and FetchBlocking, against a self-signed server.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "http/fetch_engine.h"
#include "unit/http/io_threads.h"
#include "unit/http/tls_test_server.h"

namespace ossmount::http {
namespace {

using namespace std::chrono_literals;
using testing::Call;
using testing::IoThreads;
using testing::TlsTestServer;

TEST_CASE("an untrusted certificate fails verification and points at --ca-bundle", "[tls]") {
  TlsTestServer server;
  IoThreads io(1);
  FetchEngine engine(io.context(), {});  // verify_tls defaults to true, system CAs
  Request request;
  request.url = server.Url("/key");
  Response r = Call(engine, request);
  CHECK(r.transport.code() == ErrorCode::kNetwork);
  CHECK_FALSE(r.transport.retryable());
  CHECK(r.transport.message().find("--ca-bundle") != std::string::npos);
  CHECK(r.transport.message().find("127.0.0.1:") != std::string::npos);
  CHECK(server.served() == 0);

  Response blocking = FetchBlocking(request, {});
  CHECK(blocking.transport.code() == ErrorCode::kNetwork);
  CHECK(blocking.transport.message().find("--ca-bundle") != std::string::npos);
}

TEST_CASE("a CA bundle that holds the server's certificate makes TLS work", "[tls]") {
  TlsTestServer server;
  IoThreads io(1);
  EngineOptions options;
  options.ca_bundle = server.ca_file();
  FetchEngine engine(io.context(), options);
  std::vector<char> out;
  Request request;
  request.url = server.Url("/key");
  request.target = GetTarget::Growable(&out);
  for (int i = 0; i < 3; ++i) {
    Response r = Call(engine, request);
    REQUIRE(r.transport.ok());
    CHECK(r.status == 200);
    CHECK(std::string(out.begin(), out.end()) == "secure");
  }
  CHECK(server.served() == 3);

  Response blocking = FetchBlocking(request, options);
  REQUIRE(blocking.transport.ok());
  CHECK(std::string(out.begin(), out.end()) == "secure");
}

TEST_CASE("verify_tls=false accepts any certificate", "[tls]") {
  TlsTestServer server;
  IoThreads io(1);
  EngineOptions options;
  options.verify_tls = false;
  FetchEngine engine(io.context(), options);
  Request request;
  request.url = server.Url("/key");
  Response r = Call(engine, request);
  REQUIRE(r.transport.ok());
  CHECK(r.body_bytes == 6);
}

TEST_CASE("a missing CA bundle file is reported with its path", "[tls]") {
  TlsTestServer server;
  IoThreads io(1);
  EngineOptions options;
  options.ca_bundle = "/nonexistent/ca.pem";
  FetchEngine engine(io.context(), options);
  Request request;
  request.url = server.Url("/key");
  Response r = Call(engine, request);
  CHECK(r.transport.code() == ErrorCode::kNetwork);
  CHECK_FALSE(r.transport.retryable());
  CHECK(r.transport.message().find("--ca-bundle") != std::string::npos);
}

}  // namespace
}  // namespace ossmount::http
