// FetchEngine against a scripted local HTTP/1.1 server (unit/http/test_http_server.h).
#include <catch2/catch.hpp>

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "http/fetch_engine.h"
#include "support/eventually.h"
#include "unit/http/io_threads.h"
#include "unit/http/test_http_server.h"

namespace ossmount::http {
namespace {

using namespace std::chrono_literals;
using ossmount::testing::Eventually;
using testing::Call;
using testing::Collector;
using testing::IoThreads;
using testing::Route;
using testing::TestHttpServer;

std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen() & 0xff);
  return s;
}

Route Ok(std::string body) {
  Route r;
  r.body = std::move(body);
  return r;
}

// A route whose body the server cuts off after `after` bytes (Content-Length is the whole).
Route CutAfter(std::string body, size_t after) {
  Route r = Ok(std::move(body));
  r.truncate_after = after;
  return r;
}

Request Get(const std::string& url, GetTarget target = {}) {
  Request r;
  r.url = url;
  r.target = target;
  return r;
}

EngineOptions FastFailOptions() {
  EngineOptions o;
  o.timeouts.connect = 5000ms;
  return o;
}

TEST_CASE("200 body lands in a fixed buffer byte for byte", "[fetch_engine]") {
  TestHttpServer server;
  const std::string body = RandomBytes(300 * 1024 + 7, 1);
  Route route = Ok(body);
  route.headers.push_back({"X-Oss-Request-Id", "req-1"});
  server.SetRoute("/obj", route);
  IoThreads io(2);
  FetchEngine engine(io.context(), {});

  std::vector<char> buffer(body.size(), 'z');
  Response r =
      Call(engine, Get(server.Url("/obj?x=1"), GetTarget::Fixed(buffer.data(), buffer.size())));
  REQUIRE(r.transport.ok());
  CHECK(r.status == 200);
  CHECK(r.body_bytes == body.size());
  CHECK_FALSE(r.body_overflow);
  CHECK(std::memcmp(buffer.data(), body.data(), body.size()) == 0);
  REQUIRE(r.Header("X-OSS-REQUEST-ID") != nullptr);
  CHECK(*r.Header("x-oss-request-id") == "req-1");
  REQUIRE(r.Header("content-length") != nullptr);
  CHECK(*r.Header("Content-Length") == std::to_string(body.size()));
  CHECK(r.Header("x-missing") == nullptr);
  for (const auto& [name, value] : r.headers) {
    for (char c : name) CHECK_FALSE(std::isupper(static_cast<unsigned char>(c)));
  }
  CHECK(r.error_body.empty());
}

TEST_CASE("growable target is cleared and receives the whole body", "[fetch_engine]") {
  TestHttpServer server;
  const std::string body = RandomBytes(1 << 20, 2);
  server.SetRoute("/big", Ok(body));
  IoThreads io(1);
  FetchEngine engine(io.context(), {});

  std::vector<char> out = {'j', 'u', 'n', 'k'};
  Response r = Call(engine, Get(server.Url("/big"), GetTarget::Growable(&out)));
  REQUIRE(r.transport.ok());
  CHECK(r.body_bytes == body.size());
  REQUIRE(out.size() == body.size());
  CHECK(std::string(out.begin(), out.end()) == body);
}

TEST_CASE("default target discards the body but counts it", "[fetch_engine]") {
  TestHttpServer server;
  server.SetRoute("/d", Ok(std::string(5000, 'a')));
  IoThreads io(1);
  FetchEngine engine(io.context(), {});
  Response r = Call(engine, Get(server.Url("/d")));
  REQUIRE(r.transport.ok());
  CHECK(r.body_bytes == 5000);
}

TEST_CASE("a body larger than a fixed buffer is kIntegrity with body_overflow", "[fetch_engine]") {
  TestHttpServer server;
  server.SetRoute("/big", Ok(std::string(100000, 'b')));
  server.SetRoute("/small", Ok("fits"));
  IoThreads io(1);
  FetchEngine engine(io.context(), {});

  std::vector<char> buffer(100);
  Response r = Call(engine, Get(server.Url("/big"), GetTarget::Fixed(buffer.data(), 100)));
  CHECK(r.transport.code() == ErrorCode::kIntegrity);
  CHECK(r.body_overflow);
  CHECK(r.status == 200);
  CHECK(r.transport.message().find("100-byte buffer") != std::string::npos);

  // The engine is still usable afterwards.
  Response ok = Call(engine, Get(server.Url("/small"), GetTarget::Fixed(buffer.data(), 100)));
  REQUIRE(ok.transport.ok());
  CHECK(std::string(buffer.data(), ok.body_bytes) == "fits");
}

TEST_CASE("404 keeps the XML body in error_body and leaves the target alone", "[fetch_engine]") {
  TestHttpServer server;
  const std::string xml =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code>"
      "<Message>The specified key does not exist.</Message><RequestId>R1</RequestId></Error>";
  Route route;
  route.status = 404;
  route.body = xml;
  route.headers.push_back({"Content-Type", "application/xml"});
  server.SetRoute("/missing", route);
  IoThreads io(1);
  FetchEngine engine(io.context(), {});

  std::vector<char> buffer(16, 'q');
  Response r = Call(engine, Get(server.Url("/missing"), GetTarget::Fixed(buffer.data(), 16)));
  REQUIRE(r.transport.ok());
  CHECK(r.status == 404);
  CHECK(r.error_body == xml);
  CHECK(r.body_bytes == 0);
  CHECK(std::string(buffer.begin(), buffer.end()) == std::string(16, 'q'));
}

TEST_CASE("error_body keeps only the first 64 KiB", "[fetch_engine]") {
  TestHttpServer server;
  Route route;
  route.status = 500;
  route.body = RandomBytes(200 * 1024, 3);
  server.SetRoute("/err", route);
  IoThreads io(1);
  FetchEngine engine(io.context(), {});
  Response r = Call(engine, Get(server.Url("/err")));
  REQUIRE(r.transport.ok());
  CHECK(r.status == 500);
  CHECK(r.error_body == route.body.substr(0, 64 * 1024));
}

TEST_CASE("HEAD returns headers and no body", "[fetch_engine]") {
  TestHttpServer server;
  Route route = Ok("hello world");
  route.headers.push_back({"ETag", "\"abc\""});
  server.SetRoute("/h", route);
  IoThreads io(1);
  FetchEngine engine(io.context(), {});

  Request request = Get(server.Url("/h"));
  request.method = "HEAD";
  Response r = Call(engine, request);
  REQUIRE(r.transport.ok());
  CHECK(r.status == 200);
  CHECK(r.body_bytes == 0);
  REQUIRE(r.Header("content-length") != nullptr);
  CHECK(*r.Header("content-length") == "11");
  REQUIRE(r.Header("etag") != nullptr);
  CHECK(*r.Header("etag") == "\"abc\"");
  auto seen = server.requests();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].method == "HEAD");
}

TEST_CASE("PUT and POST send the body intact with Content-Length and no Expect", "[fetch_engine]") {
  TestHttpServer server;
  server.SetRoute("/put", Ok(""));
  server.SetRoute("/post", Ok("<InitiateMultipartUploadResult/>"));
  IoThreads io(2);
  FetchEngine engine(io.context(), {});
  const std::string body = RandomBytes(3 * 1024 * 1024 + 11, 4);

  Request put = Get(server.Url("/put"));
  put.method = "PUT";
  put.body = SharedBytes::Copy(body);
  put.headers.push_back({"Content-Type", "application/octet-stream"});
  put.headers.push_back({"x-oss-meta-empty", ""});
  Response r = Call(engine, put);
  REQUIRE(r.transport.ok());
  CHECK(r.status == 200);

  Request post = Get(server.Url("/post?uploads"));
  post.method = "POST";
  post.body = SharedBytes::Copy("<xml/>");
  std::vector<char> out;
  post.target = GetTarget::Growable(&out);
  Response p = Call(engine, post);
  REQUIRE(p.transport.ok());
  CHECK(std::string(out.begin(), out.end()) == "<InitiateMultipartUploadResult/>");

  Request empty_put = Get(server.Url("/put"));
  empty_put.method = "PUT";
  REQUIRE(Call(engine, empty_put).transport.ok());

  auto seen = server.requests();
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].method == "PUT");
  CHECK(seen[0].body.size() == body.size());
  CHECK(seen[0].body == body);
  CHECK(seen[0].headers["content-length"] == std::to_string(body.size()));
  CHECK(seen[0].headers.count("expect") == 0);
  CHECK(seen[0].headers.count("transfer-encoding") == 0);
  CHECK(seen[0].headers["content-type"] == "application/octet-stream");
  REQUIRE(seen[0].headers.count("x-oss-meta-empty") == 1);
  CHECK(seen[0].headers["x-oss-meta-empty"].empty());

  CHECK(seen[1].method == "POST");
  CHECK(seen[1].target == "/post?uploads");
  CHECK(seen[1].body == "<xml/>");
  CHECK(seen[1].headers["content-length"] == "6");
  CHECK(seen[1].headers.count("content-type") == 0);  // no form type slipped in
  CHECK(seen[1].headers.count("expect") == 0);

  CHECK(seen[2].method == "PUT");
  CHECK(seen[2].headers["content-length"] == "0");
  CHECK(seen[2].body.empty());
}

TEST_CASE("DELETE uses the method verbatim", "[fetch_engine]") {
  TestHttpServer server;
  Route route;
  route.status = 204;
  server.SetRoute("/del", route);
  IoThreads io(1);
  FetchEngine engine(io.context(), {});
  Request request = Get(server.Url("/del"));
  request.method = "DELETE";
  Response r = Call(engine, request);
  REQUIRE(r.transport.ok());
  CHECK(r.status == 204);
  auto seen = server.requests();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].method == "DELETE");
}

TEST_CASE("200 concurrent requests on 2 io threads each complete exactly once", "[fetch_engine]") {
  Collector collector;
  TestHttpServer server;
  constexpr int kRequests = 200;
  for (int i = 0; i < kRequests; ++i) {
    server.SetRoute("/c/" + std::to_string(i),
                    Ok("body-" + std::to_string(i) + "-" + std::string(i * 37, 'x')));
  }
  IoThreads io(2);
  std::vector<std::vector<char>> outs(kRequests);
  {
    FetchEngine engine(io.context(), {});
    // Submit from several threads at once: Execute is thread-safe.
    std::vector<std::thread> submitters;
    for (int s = 0; s < 4; ++s) {
      submitters.emplace_back([&, s] {
        for (int i = s; i < kRequests; i += 4) {
          engine.Execute(Get(server.Url("/c/" + std::to_string(i)), GetTarget::Growable(&outs[i])),
                         collector.Handler(i));
        }
      });
    }
    for (auto& t : submitters) t.join();
    REQUIRE(collector.WaitForTotal(kRequests));
    EngineStats stats = engine.Stats();
    CHECK(stats.started == kRequests);
    CHECK(stats.completed == kRequests);
    CHECK(stats.transport_errors == 0);
    CHECK(stats.in_flight == 0);
    CHECK(stats.queued == 0);
  }
  for (int i = 0; i < kRequests; ++i) {
    INFO("request " << i);
    CHECK(collector.calls(i) == 1);
    Response r = collector.response(i);
    CHECK(r.transport.ok());
    CHECK(r.status == 200);
    CHECK(std::string(outs[i].begin(), outs[i].end()) ==
          "body-" + std::to_string(i) + "-" + std::string(i * 37, 'x'));
  }
}

TEST_CASE("keep-alive: 50 sequential requests use one connection", "[fetch_engine]") {
  TestHttpServer server;
  server.SetRoute("/k", Ok(std::string(10000, 'k')));
  IoThreads io(2);
  FetchEngine engine(io.context(), {});
  for (int i = 0; i < 50; ++i) {
    std::vector<char> out;
    Response r = Call(engine, Get(server.Url("/k"), GetTarget::Growable(&out)));
    REQUIRE(r.transport.ok());
    REQUIRE(out.size() == 10000);
  }
  CHECK(server.CountRequests("/k") == 50);
  CHECK(server.accepted_connections() == 1);
}

TEST_CASE("the in-flight cap holds requests back until a slot frees", "[fetch_engine]") {
  Collector collector;
  TestHttpServer server;
  Route held = Ok("done");
  held.gate = "g";
  server.SetRoute("/held", held);
  IoThreads io(2);
  EngineOptions options;
  options.max_in_flight = 2;
  FetchEngine engine(io.context(), options);
  for (int i = 0; i < 6; ++i) engine.Execute(Get(server.Url("/held")), collector.Handler(i));

  REQUIRE(server.WaitForRequests("/held", 2));
  // Give a wrongly started third request every chance to arrive before looking.
  std::this_thread::sleep_for(300ms);
  CHECK(server.CountRequests("/held") == 2);
  EngineStats stats = engine.Stats();
  CHECK(stats.in_flight == 2);
  CHECK(stats.queued == 4);

  server.OpenGate("g");
  REQUIRE(collector.WaitForTotal(6));
  CHECK(server.max_concurrent() == 2);
  for (int i = 0; i < 6; ++i) CHECK(collector.response(i).transport.ok());
}

TEST_CASE("queued foreground requests start before earlier-queued background ones",
          "[fetch_engine]") {
  Collector collector;
  TestHttpServer server;
  Route slow = Ok("slow");
  slow.gate = "slow";
  server.SetRoute("/slow", slow);
  for (const char* p : {"/bg1", "/bg2", "/pf1", "/fg1", "/fg2"}) server.SetRoute(p, Ok(p));
  IoThreads io(2);
  EngineOptions options;
  options.max_in_flight = 1;
  FetchEngine engine(io.context(), options);

  engine.Execute(Get(server.Url("/slow")), collector.Handler(0));
  REQUIRE(server.WaitForRequests("/slow", 1));
  auto submit = [&](const char* path, Priority priority, int index) {
    Request r = Get(server.Url(path));
    r.priority = priority;
    engine.Execute(r, collector.Handler(index));
  };
  submit("/bg1", Priority::kBackground, 1);
  submit("/bg2", Priority::kBackground, 2);
  submit("/pf1", Priority::kPrefetch, 3);
  submit("/fg1", Priority::kForeground, 4);
  submit("/fg2", Priority::kForeground, 5);
  // Execute() only posts; wait until all five are in the engine's queue.
  Eventually([&] { return engine.Stats().queued >= 5; });
  REQUIRE(engine.Stats().queued == 5);

  server.OpenGate("slow");
  REQUIRE(collector.WaitForTotal(6));
  std::vector<std::string> order;
  for (const auto& r : server.requests()) order.push_back(r.path);
  CHECK(order == std::vector<std::string>{"/slow", "/fg1", "/fg2", "/pf1", "/bg1", "/bg2"});
}

TEST_CASE("an on-demand request overtakes a queue of 50 prefetches", "[fetch_engine]") {
  // What dataset prefetch relies on: however many kPrefetch GETs are queued behind the cap,
  // a reader's kForeground GET is the next to start.
  Collector collector;
  TestHttpServer server;
  Route slow = Ok("slow");
  slow.gate = "slow";
  server.SetRoute("/slow", slow);
  server.SetRoute("/pf", Ok("pf"));
  server.SetRoute("/read", Ok("read"));
  IoThreads io(2);
  EngineOptions options;
  options.max_in_flight = 1;
  FetchEngine engine(io.context(), options);

  engine.Execute(Get(server.Url("/slow")), collector.Handler(0));
  REQUIRE(server.WaitForRequests("/slow", 1));
  for (int i = 1; i <= 50; ++i) {
    Request r = Get(server.Url("/pf"));
    r.priority = Priority::kPrefetch;
    engine.Execute(r, collector.Handler(i));
  }
  Eventually([&] { return engine.Stats().queued >= 50; });
  REQUIRE(engine.Stats().queued == 50);
  engine.Execute(Get(server.Url("/read")), collector.Handler(51));  // kForeground by default
  Eventually([&] { return engine.Stats().queued >= 51; });
  REQUIRE(engine.Stats().queued == 51);

  server.OpenGate("slow");
  REQUIRE(collector.WaitForTotal(52));
  std::vector<std::string> order;
  for (const auto& r : server.requests()) order.push_back(r.path);
  REQUIRE(order.size() == 52);
  CHECK(order[0] == "/slow");
  CHECK(order[1] == "/read");
}

TEST_CASE("a cancelled queued request is dropped with kCancelled", "[fetch_engine]") {
  Collector collector;
  TestHttpServer server;
  Route hold = Ok("held");
  hold.gate = "hold";
  server.SetRoute("/hold", hold);
  server.SetRoute("/queued", Ok("never"));
  IoThreads io(2);
  EngineOptions options;
  options.max_in_flight = 1;
  FetchEngine engine(io.context(), options);

  engine.Execute(Get(server.Url("/hold")), collector.Handler(0));
  REQUIRE(server.WaitForRequests("/hold", 1));
  Request queued = Get(server.Url("/queued"));
  queued.cancel = std::make_shared<CancelFlag>();
  engine.Execute(queued, collector.Handler(1));
  queued.cancel->cancelled = true;

  // The cancelled request completes while the in-flight one is still held.
  REQUIRE(collector.WaitForTotal(1));
  CHECK(collector.calls(1) == 1);
  CHECK(collector.calls(0) == 0);
  CHECK(collector.response(1).transport.code() == ErrorCode::kCancelled);
  CHECK_FALSE(collector.response(1).transport.retryable());

  server.OpenGate("hold");
  REQUIRE(collector.WaitForTotal(2));
  CHECK(collector.response(0).transport.ok());
  CHECK(server.CountRequests("/queued") == 0);
}

TEST_CASE("a request cancelled before Execute never reaches the server", "[fetch_engine]") {
  TestHttpServer server;
  server.SetRoute("/x", Ok("x"));
  IoThreads io(1);
  FetchEngine engine(io.context(), {});
  Request r = Get(server.Url("/x"));
  r.cancel = std::make_shared<CancelFlag>();
  r.cancel->cancelled = true;
  CHECK(Call(engine, r).transport.code() == ErrorCode::kCancelled);
  CHECK(server.CountRequests("/x") == 0);
}

TEST_CASE("an in-flight request is aborted by its CancelFlag", "[fetch_engine]") {
  Collector collector;
  TestHttpServer server;
  Route hold = Ok("held");
  hold.gate = "hold";
  server.SetRoute("/hold", hold);
  server.SetRoute("/after", Ok("after"));
  IoThreads io(2);
  FetchEngine engine(io.context(), {});

  Request r = Get(server.Url("/hold"));
  r.cancel = std::make_shared<CancelFlag>();
  engine.Execute(r, collector.Handler(0));
  REQUIRE(server.WaitForRequests("/hold", 1));
  r.cancel->cancelled = true;
  REQUIRE(collector.WaitForTotal(1));
  CHECK(collector.response(0).transport.code() == ErrorCode::kCancelled);
  CHECK(engine.Stats().in_flight == 0);

  server.OpenGate("hold");
  CHECK(Call(engine, Get(server.Url("/after"))).transport.ok());
  CHECK(collector.calls(0) == 1);
}

// libcurl 7.88 refuses CURLOPT_BUFFERSIZE on a handle removed while it waited for a
// connection slot, even after curl_easy_reset; such a handle back in the pool made every
// request that took it fail (a burst of EIO under many readers with cancellations).
TEST_CASE("a request cancelled while waiting for a connection does not spoil the next",
          "[fetch_engine]") {
  Collector collector;
  TestHttpServer server;
  Route hold = Ok("held");
  hold.gate = "hold";
  server.SetRoute("/hold", hold);
  server.SetRoute("/waiting", Ok("never"));
  server.SetRoute("/after", Ok("after"));
  IoThreads io(2);
  EngineOptions options;
  options.max_connections_per_host = 1;  // /waiting waits inside libcurl for /hold's connection
  FetchEngine engine(io.context(), options);

  engine.Execute(Get(server.Url("/hold")), collector.Handler(0));
  REQUIRE(server.WaitForRequests("/hold", 1));
  Request waiting = Get(server.Url("/waiting"));
  waiting.cancel = std::make_shared<CancelFlag>();
  engine.Execute(waiting, collector.Handler(1));
  REQUIRE(Eventually([&] { return engine.Stats().in_flight == 2; }));
  waiting.cancel->cancelled = true;
  REQUIRE(collector.WaitForTotal(1));
  CHECK(collector.response(1).transport.code() == ErrorCode::kCancelled);

  // Started while /hold still holds the only connection, so it takes whatever handle the
  // engine kept from the cancelled request; both then complete once the gate opens.
  for (int i = 2; i < 6; ++i) engine.Execute(Get(server.Url("/after")), collector.Handler(i));
  server.OpenGate("hold");
  REQUIRE(collector.WaitForTotal(6));
  CHECK(collector.response(0).transport.ok());
  for (int i = 2; i < 6; ++i) {
    INFO("request " << i << ": " << collector.response(i).transport.message());
    CHECK(collector.response(i).transport.ok());
    CHECK(collector.response(i).status == 200);
  }
  CHECK(server.CountRequests("/waiting") == 0);
  CHECK(server.CountRequests("/after") == 4);
}

TEST_CASE("an option libcurl refuses fails the request with the option's name", "[fetch_engine]") {
  TestHttpServer server;
  server.SetRoute("/x", Ok("x"));
  IoThreads io(1);
  FetchEngine engine(io.context(), {});
  // libcurl refuses any string option longer than 8 MB.
  const std::string huge_url = server.Url("/x") + "?" + std::string(9 << 20, 'a');
  Response r = Call(engine, Get(huge_url));
  CHECK(r.transport.code() == ErrorCode::kInternal);
  CHECK_THAT(r.transport.message(), Catch::Contains("CURLOPT_URL"));
  // The refused handle is not kept: the next request is unaffected.
  CHECK(Call(engine, Get(server.Url("/x"))).transport.ok());
  CHECK(server.CountRequests("/x") == 1);
}

TEST_CASE("connection refused is a retryable kNetwork naming host and port", "[fetch_engine]") {
  IoThreads io(1);
  FetchEngine engine(io.context(), FastFailOptions());
  Response r = Call(engine, Get("http://127.0.0.1:1/bucket/key"));
  CHECK(r.transport.code() == ErrorCode::kNetwork);
  CHECK(r.transport.retryable());
  CHECK(r.transport.message() ==
        "could not connect to 127.0.0.1:1 (connection refused); check the endpoint");
  CHECK(r.status == 0);
  CHECK(engine.Stats().transport_errors == 1);
}

TEST_CASE("an unresolvable host is a kNetwork error naming the host", "[fetch_engine]") {
  IoThreads io(1);
  FetchEngine engine(io.context(), FastFailOptions());
  Response r = Call(engine, Get("http://no-such-host.invalid/key"));
  CHECK(r.transport.code() == ErrorCode::kNetwork);
  CHECK(r.transport.retryable());
  CHECK(r.transport.message() ==
        "could not resolve host 'no-such-host.invalid'; check the endpoint");
}

TEST_CASE("a malformed URL is kInvalidArgument", "[fetch_engine]") {
  IoThreads io(1);
  FetchEngine engine(io.context(), {});
  Response r = Call(engine, Get("nosuchscheme://host/key"));
  CHECK(r.transport.code() == ErrorCode::kInvalidArgument);
  CHECK_FALSE(r.transport.retryable());
}

TEST_CASE("a stalled body hits the stall deadline as kTimeout", "[fetch_engine]") {
  TestHttpServer server;
  Route stall = Ok(std::string(100000, 's'));
  stall.stall_after_headers = true;
  server.SetRoute("/stall", stall);
  IoThreads io(1);
  EngineOptions options;
  options.timeouts.low_speed_time = std::chrono::seconds(1);
  options.timeouts.low_speed_bytes = 1;
  FetchEngine engine(io.context(), options);
  std::vector<char> out;
  Response r = Call(engine, Get(server.Url("/stall"), GetTarget::Growable(&out)));
  CHECK(r.transport.code() == ErrorCode::kTimeout);
  CHECK(r.transport.retryable());
  CHECK(r.transport.message().find("stall") != std::string::npos);
  CHECK(r.status == 200);
}

TEST_CASE("the request timeout caps a slow response", "[fetch_engine]") {
  TestHttpServer server;
  Route hold = Ok("late");
  hold.gate = "never";
  server.SetRoute("/late", hold);
  IoThreads io(1);
  EngineOptions options;
  options.timeouts.request = 500ms;
  FetchEngine engine(io.context(), options);
  Response r = Call(engine, Get(server.Url("/late")));
  CHECK(r.transport.code() == ErrorCode::kTimeout);
  CHECK(r.transport.retryable());
  CHECK(r.transport.message().find("request timeout") != std::string::npos);
}

TEST_CASE("a truncated body is a retryable kIntegrity", "[fetch_engine]") {
  TestHttpServer server;
  server.SetRoute("/cut", CutAfter(std::string(20000, 't'), 5000));
  server.SetRoute("/fine", Ok("fine"));
  IoThreads io(1);
  FetchEngine engine(io.context(), {});
  std::vector<char> buffer(20000);
  Response r = Call(engine, Get(server.Url("/cut"), GetTarget::Fixed(buffer.data(), 20000)));
  CHECK(r.transport.code() == ErrorCode::kIntegrity);
  CHECK(r.transport.retryable());
  CHECK(r.transport.message().find("5000 of 20000") != std::string::npos);
  CHECK(Call(engine, Get(server.Url("/fine"))).transport.ok());
}

// A BodyProgress that records its reports, checking at each that the target's first bytes are
// the expected body's (it runs on the engine's thread, after the bytes were written).
struct RecordingProgress {
  std::shared_ptr<BodyProgress> progress = std::make_shared<BodyProgress>();
  std::mutex mu;
  std::vector<size_t> reports;
  int vouch_calls = 0;
  long vouched_status = 0;
  bool prefix_right = true;

  RecordingProgress(const char* target, const std::string* expected, bool vouch = true) {
    progress->vouch = [this, vouch](long status, const HeaderList& headers) {
      std::lock_guard lock(mu);
      ++vouch_calls;
      vouched_status = status;
      bool has_length = false;
      for (const auto& [name, value] : headers) has_length |= name == "content-length";
      return vouch && has_length;  // the headers are complete when asked
    };
    progress->arrived = [this, target, expected](size_t n) {
      std::lock_guard lock(mu);
      if (!reports.empty() && n <= reports.back()) prefix_right = false;  // must grow
      if (std::memcmp(target, expected->data(), n) != 0) prefix_right = false;
      reports.push_back(n);
    };
  }
};

TEST_CASE("a vouched body is reported while it arrives, growing, up to its length",
          "[fetch_engine]") {
  TestHttpServer server;
  const std::string body = RandomBytes(2 << 20, 31);
  server.SetRoute("/big", Ok(body));
  server.SetRoute("/cut", CutAfter(body, 1 << 20));
  IoThreads io(1);
  FetchEngine engine(io.context(), {});
  std::vector<char> buffer(body.size());

  RecordingProgress rec(buffer.data(), &body);
  Request request = Get(server.Url("/big"), GetTarget::Fixed(buffer.data(), buffer.size()));
  request.progress = rec.progress;
  Response r = Call(engine, request);
  REQUIRE(r.transport.ok());
  CHECK(rec.vouch_calls == 1);
  CHECK(rec.vouched_status == 200);
  CHECK(rec.prefix_right);
  REQUIRE(rec.reports.size() > 1);  // 2 MiB arrive in more than one write
  CHECK(rec.reports.back() == body.size());
  CHECK(rec.progress->reported == body.size());

  // A body cut short still reported the bytes that came; the response is the usual error.
  RecordingProgress cut_rec(buffer.data(), &body);
  Request cut_request = Get(server.Url("/cut"), GetTarget::Fixed(buffer.data(), buffer.size()));
  cut_request.progress = cut_rec.progress;
  Response c = Call(engine, cut_request);
  CHECK(c.transport.code() == ErrorCode::kIntegrity);
  CHECK(cut_rec.prefix_right);
  REQUIRE_FALSE(cut_rec.reports.empty());
  CHECK(cut_rec.reports.back() == size_t{1} << 20);
}

TEST_CASE("a body the caller does not vouch for, or an error response, is never reported",
          "[fetch_engine]") {
  TestHttpServer server;
  const std::string body = RandomBytes(300000, 32);
  server.SetRoute("/obj", Ok(body));
  IoThreads io(1);
  FetchEngine engine(io.context(), {});
  std::vector<char> buffer(body.size());

  RecordingProgress refused(buffer.data(), &body, /*vouch=*/false);
  Request request = Get(server.Url("/obj"), GetTarget::Fixed(buffer.data(), buffer.size()));
  request.progress = refused.progress;
  REQUIRE(Call(engine, request).transport.ok());
  CHECK(refused.vouch_calls == 1);
  CHECK(refused.reports.empty());
  CHECK(std::memcmp(buffer.data(), body.data(), body.size()) == 0);  // written as usual

  RecordingProgress missing(buffer.data(), &body);
  Request not_found = Get(server.Url("/missing"), GetTarget::Fixed(buffer.data(), buffer.size()));
  not_found.progress = missing.progress;
  CHECK(Call(engine, not_found).status == 404);
  CHECK(missing.vouch_calls == 0);
  CHECK(missing.reports.empty());
}

TEST_CASE(
    "a retry continues the bytes an earlier attempt reported: the same bytes are accepted, "
    "different or unvouched ones abort it, and a resumed attempt writes after them",
    "[fetch_engine]") {
  TestHttpServer server;
  const std::string body = RandomBytes(200000, 33);
  server.SetRoute("/cut", CutAfter(body, 50000));
  server.SetRoute("/same", Ok(body));
  std::string other = body;
  other[1000] ^= 0x55;  // differs inside the reported prefix
  server.SetRoute("/other", Ok(other));
  server.SetRoute("/rest", Ok(body.substr(50000)));
  server.SetRoute("/too-long", Ok(body.substr(40000)));
  IoThreads io(1);
  FetchEngine engine(io.context(), {});
  std::vector<char> buffer(body.size());
  auto attempt = [&](const char* path, const std::shared_ptr<BodyProgress>& progress,
                     size_t resume_from = 0) {
    Request request = Get(server.Url(path), GetTarget::Fixed(buffer.data(), buffer.size()));
    request.progress = progress;
    request.resume_from = resume_from;
    return Call(engine, request);
  };

  RecordingProgress rec(buffer.data(), &body);
  CHECK(attempt("/cut", rec.progress).transport.code() == ErrorCode::kIntegrity);
  REQUIRE(rec.progress->reported == 50000);

  SECTION("the same bytes again: accepted, reports go on past them") {
    const size_t reports_before = rec.reports.size();
    Response r = attempt("/same", rec.progress);
    REQUIRE(r.transport.ok());
    CHECK(r.body_bytes == body.size());
    CHECK(std::memcmp(buffer.data(), body.data(), body.size()) == 0);
    CHECK(rec.prefix_right);
    REQUIRE(rec.reports.size() > reports_before);
    CHECK(rec.reports[reports_before] > 50000);  // nothing at or below what was reported
    CHECK(rec.reports.back() == body.size());
  }
  SECTION("other bytes where some were reported: aborted, the reported bytes untouched") {
    Response r = attempt("/other", rec.progress);
    CHECK(r.transport.code() == ErrorCode::kIntegrity);
    CHECK(r.transport.retryable());
    CHECK(r.transport.message().find("does not begin with the bytes") != std::string::npos);
    CHECK(std::memcmp(buffer.data(), body.data(), 50000) == 0);
    CHECK(rec.progress->reported == 50000);
  }
  SECTION("a response the caller does not vouch for cannot continue them") {
    rec.progress->vouch = [](long, const HeaderList&) { return false; };
    Response r = attempt("/same", rec.progress);
    CHECK(r.transport.code() == ErrorCode::kIntegrity);
    CHECK(rec.progress->reported == 50000);
  }
  SECTION("a resumed attempt (it asked only for the rest): the rest lands after them") {
    const size_t reports_before = rec.reports.size();
    Response r = attempt("/rest", rec.progress, 50000);
    REQUIRE(r.transport.ok());
    CHECK(r.body_bytes == body.size() - 50000);  // this attempt's bytes only
    CHECK(std::memcmp(buffer.data(), body.data(), body.size()) == 0);
    CHECK(rec.prefix_right);  // every report checked the target against the whole body
    REQUIRE(rec.reports.size() > reports_before);
    CHECK(rec.reports[reports_before] > 50000);
    CHECK(rec.reports.back() == body.size());
  }
  SECTION("more than the room after the kept bytes: refused before the body, kept bytes intact") {
    Response r = attempt("/too-long", rec.progress, 50000);
    CHECK(r.transport.code() == ErrorCode::kIntegrity);
    CHECK(r.body_overflow);
    CHECK(r.transport.message().find("150000-byte buffer") != std::string::npos);
    CHECK(std::memcmp(buffer.data(), body.data(), 50000) == 0);
    CHECK(rec.progress->reported == 50000);
  }
  SECTION("keeping more bytes than the target holds is refused") {
    Response r = attempt("/rest", rec.progress, buffer.size() + 1);
    CHECK(r.transport.code() == ErrorCode::kInvalidArgument);
    CHECK(rec.progress->reported == 50000);
  }
}

TEST_CASE("destroying the engine calls every queued and in-flight handler once", "[fetch_engine]") {
  Collector collector;
  TestHttpServer server;
  Route held = Ok("held");
  held.gate = "g";
  server.SetRoute("/held", held);
  IoThreads io(2);
  EngineOptions options;
  options.max_in_flight = 2;
  auto engine = std::make_unique<FetchEngine>(io.context(), options);
  for (int i = 0; i < 5; ++i) engine->Execute(Get(server.Url("/held")), collector.Handler(i));
  REQUIRE(server.WaitForRequests("/held", 2));
  engine.reset();
  REQUIRE(collector.WaitForTotal(5));
  server.OpenGate("g");
  std::this_thread::sleep_for(200ms);  // a second call, if any, would have arrived by now
  CHECK(collector.total() == 5);
  for (int i = 0; i < 5; ++i) {
    CHECK(collector.calls(i) == 1);
    CHECK(collector.response(i).transport.code() == ErrorCode::kCancelled);
  }
}

TEST_CASE("handlers are never run inline from Execute", "[fetch_engine]") {
  boost::asio::io_context io;  // not running yet
  std::atomic<int> calls{0};
  {
    FetchEngine engine(io, {});
    Request r = Get("http://127.0.0.1:1/x");
    r.cancel = std::make_shared<CancelFlag>();
    r.cancel->cancelled = true;
    engine.Execute(r, [&](Response resp) {
      CHECK(resp.transport.code() == ErrorCode::kCancelled);
      ++calls;
    });
    CHECK(calls == 0);
    io.run();
    CHECK(calls == 1);
    io.restart();
  }
  io.run();
  CHECK(calls == 1);
}

}  // namespace
}  // namespace ossmount::http

namespace ossmount::http {
namespace {

TEST_CASE("connections the server closed while idle are replaced transparently", "[fetch_engine]") {
  TestHttpServer server;
  Route route = Ok("short-lived");
  route.close_after_response = true;
  server.SetRoute("/once", route);
  IoThreads io(2);
  FetchEngine engine(io.context(), {});
  for (int i = 0; i < 10; ++i) {
    std::vector<char> out;
    Response r = Call(engine, Get(server.Url("/once"), GetTarget::Growable(&out)));
    REQUIRE(r.transport.ok());
    CHECK(std::string(out.begin(), out.end()) == "short-lived");
  }
  CHECK(server.CountRequests("/once") == 10);
  CHECK(server.accepted_connections() == 10);
}

TEST_CASE("a handler may destroy the engine while other requests are in flight", "[fetch_engine]") {
  Collector collector;
  TestHttpServer server;
  server.SetRoute("/quick", Ok("quick"));
  Route held = Ok("held");
  held.gate = "g";
  server.SetRoute("/held", held);
  IoThreads io(2);
  auto engine = std::make_unique<FetchEngine>(io.context(), EngineOptions{});
  std::promise<void> destroyed;
  engine->Execute(Get(server.Url("/held")), collector.Handler(1));
  REQUIRE(server.WaitForRequests("/held", 1));
  engine->Execute(Get(server.Url("/quick")), [&](Response r) {
    CHECK(r.transport.ok());
    engine.reset();  // from an io thread, inside a handler
    destroyed.set_value();
  });
  REQUIRE(destroyed.get_future().wait_for(60s) == std::future_status::ready);
  REQUIRE(collector.WaitForTotal(1));
  CHECK(collector.response(1).transport.code() == ErrorCode::kCancelled);
  server.OpenGate("g");
}

// Names other than IP literals and "localhost" go through libcurl's threaded resolver,
// whose wake-up descriptor the engine waits on through a mirror (see fetch_engine.cc).
TEST_CASE("host names resolved by the threaded resolver work, engine after engine",
          "[fetch_engine]") {
  char name[256] = {0};
  REQUIRE(gethostname(name, sizeof(name) - 1) == 0);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  bool loopback = false;
  if (getaddrinfo(name, nullptr, &hints, &found) == 0) {
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
      auto* in = reinterpret_cast<sockaddr_in*>(a->ai_addr);
      if (ntohl(in->sin_addr.s_addr) == INADDR_LOOPBACK) loopback = true;
    }
    freeaddrinfo(found);
  }
  if (!loopback) {
    WARN("host name '" << name << "' does not resolve to 127.0.0.1; test not applicable");
    return;
  }
  Collector collector;
  TestHttpServer server;
  server.SetRoute("/r", Ok("resolved"));
  IoThreads io(2);
  const std::string url =
      "http://" + std::string(name) + ":" + std::to_string(server.port()) + "/r";
  int index = 0;
  for (int round = 0; round < 5; ++round) {
    FetchEngine engine(io.context(), {});  // a fresh DNS cache every round
    for (int i = 0; i < 8; ++i) engine.Execute(Get(url), collector.Handler(index++));
    REQUIRE(collector.WaitForTotal(index));
  }
  for (int i = 0; i < index; ++i) {
    INFO("request " << i << ": " << collector.response(i).transport.ToString());
    CHECK(collector.response(i).transport.ok());
    CHECK(collector.response(i).body_bytes == 8);
  }
}

}  // namespace
}  // namespace ossmount::http

namespace ossmount::http {
namespace {

TEST_CASE("chunked bodies land in fixed and growable targets and overflow is still detected",
          "[fetch_engine]") {
  TestHttpServer server;
  const std::string body = RandomBytes(150000, 9);
  Route route = Ok(body);
  route.chunked = true;
  server.SetRoute("/chunked", route);
  IoThreads io(1);
  FetchEngine engine(io.context(), {});

  std::vector<char> grown;
  Response g = Call(engine, Get(server.Url("/chunked"), GetTarget::Growable(&grown)));
  REQUIRE(g.transport.ok());
  CHECK(std::string(grown.begin(), grown.end()) == body);

  std::vector<char> exact(body.size());
  Response f =
      Call(engine, Get(server.Url("/chunked"), GetTarget::Fixed(exact.data(), exact.size())));
  REQUIRE(f.transport.ok());
  CHECK(f.body_bytes == body.size());
  CHECK(std::string(exact.begin(), exact.end()) == body);

  std::vector<char> small(1000);
  Response o =
      Call(engine, Get(server.Url("/chunked"), GetTarget::Fixed(small.data(), small.size())));
  CHECK(o.transport.code() == ErrorCode::kIntegrity);
  CHECK(o.body_overflow);
  CHECK(o.body_bytes <= small.size());
}

TEST_CASE("a truncated chunked body is a retryable kIntegrity", "[fetch_engine]") {
  TestHttpServer server;
  Route route = Ok(std::string(50000, 'c'));
  route.chunked = true;
  route.truncate_after = 20000;
  server.SetRoute("/cut", route);
  IoThreads io(1);
  FetchEngine engine(io.context(), {});
  std::vector<char> out;
  Response r = Call(engine, Get(server.Url("/cut"), GetTarget::Growable(&out)));
  INFO(r.transport.ToString());
  CHECK(r.transport.code() == ErrorCode::kIntegrity);
  CHECK(r.transport.retryable());
}

TEST_CASE("a Content-Length beyond a fixed buffer aborts before the body", "[fetch_engine]") {
  TestHttpServer server;
  server.SetRoute("/big", Ok(std::string(1 << 20, 'b')));
  IoThreads io(1);
  FetchEngine engine(io.context(), {});
  std::vector<char> buffer(4096, 'u');
  Response r = Call(engine, Get(server.Url("/big"), GetTarget::Fixed(buffer.data(), 4096)));
  CHECK(r.transport.code() == ErrorCode::kIntegrity);
  CHECK(r.body_overflow);
  CHECK(r.body_bytes == 0);
  CHECK(std::string(buffer.begin(), buffer.end()) == std::string(4096, 'u'));
}

TEST_CASE("a body over a growable target's limit is refused as kProtocol", "[fetch_engine]") {
  // A hostile server answering a LIST with an endless 200 body: with a Content-Length the
  // transfer stops before the body, without one (chunked) at the limit.
  TestHttpServer server;
  server.SetRoute("/announced", Ok(std::string(1 << 20, 'l')));
  Route endless = Ok(std::string(1 << 20, 'l'));
  endless.chunked = true;
  server.SetRoute("/endless", endless);
  IoThreads io(1);
  FetchEngine engine(io.context(), {});
  for (const char* path : {"/announced", "/endless"}) {
    INFO(path);
    std::vector<char> out;
    Response r = Call(engine, Get(server.Url(path), GetTarget::Growable(&out, 64 * 1024)));
    CHECK(r.transport.code() == ErrorCode::kProtocol);
    CHECK_FALSE(r.transport.retryable());
    CHECK(r.body_overflow);
    CHECK(r.transport.message().find("larger than the 65536-byte limit") != std::string::npos);
    CHECK(out.size() <= 64 * 1024);
  }
  std::vector<char> fits;
  Response r = Call(engine, Get(server.Url("/announced"), GetTarget::Growable(&fits, 1 << 20)));
  REQUIRE(r.transport.ok());
  CHECK(fits.size() == 1u << 20);
}

TEST_CASE("a response with too many or too large headers is refused as kProtocol",
          "[fetch_engine]") {
  TestHttpServer server;
  Route many = Ok("x");
  for (int i = 0; i < 300; ++i) many.headers.push_back({"X-Oss-Meta-H" + std::to_string(i), "v"});
  server.SetRoute("/many", many);
  Route large = Ok("x");
  for (int i = 0; i < 2; ++i) large.headers.push_back({"X-Big", std::string(40 * 1024, 'h')});
  server.SetRoute("/large", large);
  Route plenty = Ok("x");  // a generous real response: within both limits
  for (int i = 0; i < 200; ++i) {
    plenty.headers.push_back({"X-Oss-Meta-H" + std::to_string(i), std::string(100, 'v')});
  }
  server.SetRoute("/plenty", plenty);
  IoThreads io(1);
  FetchEngine engine(io.context(), {});

  for (const char* path : {"/many", "/large"}) {
    INFO(path);
    Response r = Call(engine, Get(server.Url(path)));
    CHECK(r.transport.code() == ErrorCode::kProtocol);
    CHECK_FALSE(r.transport.retryable());
    CHECK(r.transport.message().find("more than 256 header lines or 65536 bytes of headers") !=
          std::string::npos);
    CHECK(r.headers.size() <= 256);
  }
  Response r = Call(engine, Get(server.Url("/plenty")));
  REQUIRE(r.transport.ok());
  CHECK(r.headers.size() >= 200);
  // A blocking fetch has the same limits.
  Response b = FetchBlocking(Get(server.Url("/many")), {});
  CHECK(b.transport.code() == ErrorCode::kProtocol);
}

TEST_CASE("URL paths are sent as built, dot segments and escapes included", "[fetch_engine]") {
  TestHttpServer server;
  IoThreads io(1);
  FetchEngine engine(io.context(), {});
  Response r = Call(engine, Get(server.Url("/bucket/a/../b/./c%20d?x=%2F")));
  REQUIRE(r.transport.ok());
  CHECK(r.status == 404);  // no route: the point is what arrived
  auto seen = server.requests();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].target == "/bucket/a/../b/./c%20d?x=%2F");
}

}  // namespace
}  // namespace ossmount::http

namespace ossmount::http {
namespace {

// A listener whose accept queue is full and never drained: the kernel drops further SYNs,
// so a new connect() neither succeeds nor fails until the client gives up.
class FullListener {
 public:
  FullListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    REQUIRE(::listen(fd_, 0) == 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    for (int i = 0; i < 8; ++i) {
      int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      ::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
      fillers_.push_back(c);
    }
    std::this_thread::sleep_for(100ms);  // let the fillers occupy the queue
  }
  ~FullListener() {
    for (int c : fillers_) ::close(c);
    ::close(fd_);
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/x"; }
  std::string HostPort() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::vector<int> fillers_;
};

TEST_CASE("a connect that never completes is a retryable kTimeout", "[fetch_engine]") {
  FullListener listener;
  IoThreads io(1);
  EngineOptions options;
  options.timeouts.connect = 500ms;
  FetchEngine engine(io.context(), options);
  Response r = Call(engine, Get(listener.Url()));
  CHECK(r.transport.code() == ErrorCode::kTimeout);
  CHECK(r.transport.retryable());
  CHECK(r.transport.message() == "could not connect to " + listener.HostPort() +
                                     " within 500 ms (connect timeout); check the endpoint "
                                     "and the network");
  Response blocking = FetchBlocking(Get(listener.Url()), options);
  CHECK(blocking.transport.code() == ErrorCode::kTimeout);
}

}  // namespace
}  // namespace ossmount::http
