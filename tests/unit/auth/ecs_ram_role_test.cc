// The ECS RAM role provider against a fake metadata service: token, role discovery, caching,
// refresh, failure messages and concurrency.
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "unit/auth/provider_test_util.h"

namespace ossmount::auth {
namespace {

using namespace ossmount::auth::testing;  // NOLINT
namespace fs = std::filesystem;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

// ---- ECS RAM role ------------------------------------------------------------------------------

struct FakeMetadata {
  struct Call {
    std::string method, url;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string Header(const std::string& name) const {
      for (const auto& [n, v] : headers) {
        if (n == name) return v;
      }
      return "<absent>";
    }
  };
  std::mutex mu;
  std::map<std::string, Result<HttpFetchResult>> responses;  // "METHOD url"
  std::vector<Call> calls;

  void Respond(const std::string& method, const std::string& url, long status, std::string body) {
    std::lock_guard<std::mutex> l(mu);
    responses.insert_or_assign(method + " " + url, HttpFetchResult{status, std::move(body)});
  }
  void Fail(const std::string& method, const std::string& url) {
    std::lock_guard<std::mutex> l(mu);
    responses.insert_or_assign(method + " " + url,
                               Status(ErrorCode::kNetwork, "connection refused"));
  }
  size_t CountOf(const std::string& url) {
    std::lock_guard<std::mutex> l(mu);
    size_t n = 0;
    for (const Call& c : calls) n += c.url == url;
    return n;
  }
  HttpFetcher Fetcher() {
    return [this](const std::string& method, const std::string& url,
                  const std::vector<std::pair<std::string, std::string>>& headers)
               -> Result<HttpFetchResult> {
      std::lock_guard<std::mutex> l(mu);
      calls.push_back({method, url, headers});
      auto it = responses.find(method + " " + url);
      if (it == responses.end()) return HttpFetchResult{404, "not found"};
      return it->second;
    };
  }
};

const std::string kBase = "http://100.100.100.200";
const std::string kTokenUrl = kBase + "/latest/api/token";
const std::string kRolesUrl = kBase + "/latest/meta-data/ram/security-credentials/";

std::string EcsJson(const std::string& id, const std::string& secret, const std::string& token,
                    SystemTime expiration, const std::string& code = "Success") {
  return "{\"AccessKeyId\":\"" + id + "\",\"AccessKeySecret\":\"" + secret +
         "\",\"SecurityToken\":\"" + token + "\",\"Expiration\":\"" + Iso(expiration) +
         "\",\"LastUpdated\":\"2023-12-16T10:00:00Z\",\"Code\":\"" + code + "\"}";
}

TEST_CASE("ECS RAM role: token, discovery, credentials, caching and refresh") {
  EnvGuard env;
  TempDir dir;
  FakeClock clock;
  SystemTime t0 = *clock.now;
  FakeMetadata md;
  md.Respond("PUT", kTokenUrl, 200, "MDTOKEN-imds");
  md.Respond("GET", kRolesUrl, 200, "TrainingRole\n");
  md.Respond("GET", kRolesUrl + "TrainingRole", 200,
             EcsJson("STS.id1", "SECRET-ecs-1", "TOKEN-ecs-1", t0 + hours(6)));
  CredentialSources s;
  s.ram_role = "auto";
  s.fetcher = md.Fetcher();
  auto built = BuildCredentialsProvider(s, NoDefaults(dir), clock.fn());
  REQUIRE(built.ok());
  CredentialsProvider& p = **built;
  REQUIRE(md.calls.size() == 3);
  CHECK(md.calls[0].method == "PUT");
  CHECK(md.calls[0].url == kTokenUrl);
  CHECK(md.calls[0].Header("X-aliyun-ecs-metadata-token-ttl-seconds") == "21600");
  CHECK(md.calls[1].url == kRolesUrl);
  CHECK(md.calls[1].Header("X-aliyun-ecs-metadata-token") == "MDTOKEN-imds");
  CHECK(md.calls[2].url == kRolesUrl + "TrainingRole");
  CHECK(md.calls[2].Header("X-aliyun-ecs-metadata-token") == "MDTOKEN-imds");

  Credentials c = MustGet(p);
  CHECK(c.access_key_id == "STS.id1");
  CHECK(c.access_key_secret == "SECRET-ecs-1");
  CHECK(c.security_token == "TOKEN-ecs-1");
  CHECK(*c.expiration == t0 + hours(6));
  // Cached: many Get() calls, no more requests.
  for (int i = 0; i < 100; ++i) MustGet(p);
  clock.Advance(hours(5));
  MustGet(p);
  CHECK(md.calls.size() == 3);

  // Within the refresh margin: new credentials; the discovered role is remembered.
  md.Respond("GET", kRolesUrl + "TrainingRole", 200,
             EcsJson("STS.id2", "SECRET-ecs-2", "TOKEN-ecs-2", t0 + hours(12)));
  clock.Advance(minutes(50));
  CHECK(MustGet(p).access_key_id == "STS.id2");
  CHECK(md.CountOf(kRolesUrl) == 1);
  CHECK(md.CountOf(kRolesUrl + "TrainingRole") == 2);
  CHECK(p.Describe().find("SECRET") == std::string::npos);
}

TEST_CASE(
    "ECS RAM role: credentials served within the margin are re-fetched at most every "
    "retry_interval") {
  // Regression: the service answering with credentials that expire within refresh_margin
  // made every Get() (every signed request) do three synchronous metadata calls.
  FakeClock clock;
  FakeMetadata md;
  md.Respond("PUT", kTokenUrl, 200, "MDTOKEN-imds");
  md.Respond("GET", kRolesUrl + "r", 200,
             EcsJson("STS.id1", "SECRET-ecs-1", "TOKEN-ecs-1", *clock.now + minutes(10)));
  EcsRamRoleOptions o;
  o.role = "r";
  o.fetcher = md.Fetcher();
  o.clock = clock.fn();
  auto p = MakeEcsRamRoleProvider(o);
  for (int i = 0; i < 100; ++i) CHECK(p->Get().ok());
  CHECK(md.CountOf(kRolesUrl + "r") == 1);
  // After retry_interval the service is asked again, and its new credentials are used.
  md.Respond("GET", kRolesUrl + "r", 200,
             EcsJson("STS.id2", "SECRET-ecs-2", "TOKEN-ecs-2", *clock.now + hours(6)));
  clock.Advance(o.retry_interval);
  CHECK(MustGet(*p).access_key_id == "STS.id2");
  CHECK(md.CountOf(kRolesUrl + "r") == 2);
  for (int i = 0; i < 100; ++i) MustGet(*p);
  CHECK(md.CountOf(kRolesUrl + "r") == 2);
}

TEST_CASE("ECS RAM role: continues without a metadata token when the token call fails") {
  for (bool network_error : {true, false}) {
    FakeClock clock;
    FakeMetadata md;
    if (network_error) {
      md.Fail("PUT", kTokenUrl);
    } else {
      md.Respond("PUT", kTokenUrl, 403, "forbidden");
    }
    md.Respond("GET", kRolesUrl + "named", 200,
               EcsJson("STS.id1", "SECRET-ecs-1", "TOKEN-ecs-1", *clock.now + hours(6)));
    EcsRamRoleOptions o;
    o.role = "named";
    o.fetcher = md.Fetcher();
    o.clock = clock.fn();
    auto p = MakeEcsRamRoleProvider(o);
    CHECK(MustGet(*p).access_key_id == "STS.id1");
    REQUIRE(md.calls.size() == 2);  // no discovery for a named role
    CHECK(md.calls[1].Header("X-aliyun-ecs-metadata-token") == "<absent>");
  }
}

TEST_CASE("ECS RAM role: failures say what failed and never quote the response") {
  FakeClock clock;
  FakeMetadata md;
  md.Respond("PUT", kTokenUrl, 200, "MDTOKEN-imds");
  EcsRamRoleOptions o;
  o.role = "auto";
  o.fetcher = md.Fetcher();
  o.clock = clock.fn();

  {  // no role attached
    auto p = MakeEcsRamRoleProvider(o);
    Result<Credentials> r = p->Get();
    REQUIRE(!r.ok());
    CHECK(r.status().message().find("no RAM role") != std::string::npos);
    CheckNoSecret(r.status());
  }
  md.Respond("GET", kRolesUrl, 200, "role1");
  {  // Code is not Success
    md.Respond("GET", kRolesUrl + "role1", 200,
               EcsJson("STS.id1", "SECRET-ecs-1", "TOKEN-ecs-1", *clock.now + hours(1), "Failed"));
    Result<Credentials> r = MakeEcsRamRoleProvider(o)->Get();
    REQUIRE(!r.ok());
    CHECK(r.status().message().find("'Failed'") != std::string::npos);
    CheckNoSecret(r.status());
  }
  {  // Expiration past what system_clock holds (regression: was an int64 overflow)
    md.Respond("GET", kRolesUrl + "role1", 200,
               "{\"AccessKeyId\":\"STS.id1\",\"AccessKeySecret\":\"SECRET-ecs-1\","
               "\"SecurityToken\":\"TOKEN-ecs-1\",\"Expiration\":\"9999-01-01T00:00:00Z\","
               "\"Code\":\"Success\"}");
    Result<Credentials> r = MakeEcsRamRoleProvider(o)->Get();
    REQUIRE(!r.ok());
    CHECK(r.status().message().find("Expiration is out of range") != std::string::npos);
    CheckNoSecret(r.status());
  }
  {  // not JSON
    md.Respond("GET", kRolesUrl + "role1", 200, "<html>SECRET-ecs-1</html>");
    Result<Credentials> r = MakeEcsRamRoleProvider(o)->Get();
    REQUIRE(!r.ok());
    CHECK(r.status().code() == ErrorCode::kProtocol);
    CheckNoSecret(r.status());
  }
  {  // oversize and over-deep replies: refused by the bounded parser, not quoted
    md.Respond("GET", kRolesUrl + "role1", 200,
               "{\"AccessKeySecret\":\"SECRET-ecs-1\",\"Pad\":\"" +
                   std::string(kMaxEcsResponseBytes, ' ') + "\"}");
    Result<Credentials> r = MakeEcsRamRoleProvider(o)->Get();
    REQUIRE(!r.ok());
    CHECK(r.status().code() == ErrorCode::kProtocol);
    CHECK(r.status().message().find("over the 65536-byte limit") != std::string::npos);
    CheckNoSecret(r.status());
    md.Respond("GET", kRolesUrl + "role1", 200, std::string(60'000, '['));
    r = MakeEcsRamRoleProvider(o)->Get();
    REQUIRE(!r.ok());
    CHECK(r.status().code() == ErrorCode::kProtocol);
    CHECK(r.status().message().find("nested deeper than 32 levels") != std::string::npos);
  }
  {  // network failure
    md.Fail("GET", kRolesUrl + "role1");
    Result<Credentials> r = MakeEcsRamRoleProvider(o)->Get();
    REQUIRE(!r.ok());
    CHECK(r.status().code() == ErrorCode::kNetwork);
    CHECK(r.status().message().find(kRolesUrl + "role1") != std::string::npos);
    CHECK(r.status().message().find("role1") != std::string::npos);
  }
  {  // server error
    md.Respond("GET", kRolesUrl + "role1", 500, "SECRET-ecs-1");
    Result<Credentials> r = MakeEcsRamRoleProvider(o)->Get();
    REQUIRE(!r.ok());
    CHECK(r.status().message().find("HTTP 500") != std::string::npos);
    CheckNoSecret(r.status());
  }
  {  // the builder reports it too, and a missing fetcher is a clear error
    CredentialSources s;
    s.ram_role = "role1";
    TempDir dir;
    EnvGuard env;
    auto p = BuildCredentialsProvider(s, NoDefaults(dir), clock.fn());
    REQUIRE(!p.ok());
    CHECK(p.status().message().find("fetcher") != std::string::npos);
  }
}

TEST_CASE("ECS RAM role: a failed refresh keeps valid credentials - expiry then fails") {
  FakeClock clock;
  SystemTime t0 = *clock.now;
  FakeMetadata md;
  md.Respond("PUT", kTokenUrl, 200, "MDTOKEN-imds");
  md.Respond("GET", kRolesUrl + "r", 200,
             EcsJson("STS.id1", "SECRET-ecs-1", "TOKEN-ecs-1", t0 + hours(1)));
  EcsRamRoleOptions o;
  o.role = "r";
  o.fetcher = md.Fetcher();
  o.clock = clock.fn();
  auto p = MakeEcsRamRoleProvider(o);
  CHECK(MustGet(*p).access_key_id == "STS.id1");
  md.Fail("GET", kRolesUrl + "r");
  clock.Advance(minutes(50));  // within the refresh margin
  CHECK(MustGet(*p).access_key_id == "STS.id1");
  size_t calls = md.CountOf(kRolesUrl + "r");
  MustGet(*p);  // inside the retry interval: no new attempt
  CHECK(md.CountOf(kRolesUrl + "r") == calls);
  clock.Advance(minutes(11));  // expired
  Result<Credentials> r = p->Get();
  REQUIRE(!r.ok());
  CHECK(r.status().code() == ErrorCode::kNetwork);
  // The service recovers; Invalidate() forces a fetch even with time left.
  md.Respond("GET", kRolesUrl + "r", 200,
             EcsJson("STS.id2", "SECRET-ecs-2", "TOKEN-ecs-2", t0 + hours(8)));
  CHECK(MustGet(*p).access_key_id == "STS.id2");
  md.Respond("GET", kRolesUrl + "r", 200,
             EcsJson("STS.id3", "SECRET-ecs-2", "TOKEN-ecs-2", t0 + hours(9)));
  CHECK(MustGet(*p).access_key_id == "STS.id2");
  p->Invalidate();
  CHECK(MustGet(*p).access_key_id == "STS.id3");
}

TEST_CASE("ECS RAM role: concurrent Get() calls all succeed and share one fetch") {
  FakeClock clock;
  FakeMetadata md;
  md.Respond("PUT", kTokenUrl, 200, "MDTOKEN-imds");
  md.Respond("GET", kRolesUrl + "r", 200,
             EcsJson("STS.id1", "SECRET-ecs-1", "TOKEN-ecs-1", *clock.now + hours(6)));
  EcsRamRoleOptions o;
  o.role = "r";
  o.fetcher = md.Fetcher();
  o.clock = clock.fn();
  auto p = MakeEcsRamRoleProvider(o);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 50; ++j) ok += p->Get().ok();
    });
  }
  for (auto& t : threads) t.join();
  CHECK(ok == 400);
  CHECK(md.CountOf(kRolesUrl + "r") == 1);
}

TEST_CASE("ECS RAM role: callers with valid credentials do not wait for a slow refresh") {
  FakeClock clock;
  SystemTime t0 = *clock.now;
  FakeMetadata md;
  md.Respond("GET", kRolesUrl + "r", 200,
             EcsJson("STS.id1", "SECRET-ecs-1", "TOKEN-ecs-1", t0 + hours(1)));
  std::promise<void> entered, release;
  std::shared_future<void> release_f = release.get_future().share();
  std::atomic<bool> block{false};
  HttpFetcher inner = md.Fetcher();
  EcsRamRoleOptions o;
  o.role = "r";
  o.clock = clock.fn();
  o.fetcher = [&](const std::string& method, const std::string& url,
                  const std::vector<std::pair<std::string, std::string>>& headers) {
    if (block.exchange(false)) {
      entered.set_value();
      release_f.wait();
    }
    return inner(method, url, headers);
  };
  auto p = MakeEcsRamRoleProvider(o);
  CHECK(MustGet(*p).access_key_id == "STS.id1");
  md.Respond("GET", kRolesUrl + "r", 200,
             EcsJson("STS.id2", "SECRET-ecs-2", "TOKEN-ecs-2", t0 + hours(8)));
  clock.Advance(minutes(50));  // inside the refresh margin, still valid
  block = true;
  std::thread refresher([&] { CHECK(MustGet(*p).access_key_id == "STS.id2"); });
  entered.get_future().wait();  // the refresher is now inside the fetch
  auto other = std::async(std::launch::async, [&] { return p->Get(); });
  bool finished = other.wait_for(seconds(60)) == std::future_status::ready;
  CHECK(finished);  // generous: only guards against a hang
  release.set_value();
  refresher.join();
  Result<Credentials> c = other.get();
  REQUIRE(c.ok());
  CHECK(c->access_key_id == "STS.id1");
  CHECK(MustGet(*p).access_key_id == "STS.id2");
}

TEST_CASE("ECS RAM role configured through an INI credentials file") {
  EnvGuard env;
  TempDir dir;
  FakeClock clock;
  FakeMetadata md;
  md.Respond("GET", kRolesUrl + "IniRole", 200,
             EcsJson("STS.ini", "SECRET-ecs-1", "TOKEN-ecs-1", *clock.now + hours(6)));
  CredentialSources s;
  s.fetcher = md.Fetcher();
  s.credentials_file =
      dir.Write("creds.ini", "[default]\ntype = ecs_ram_role\nrole_name = IniRole\n");
  auto p = BuildCredentialsProvider(s, NoDefaults(dir), clock.fn());
  REQUIRE(p.ok());
  CHECK(MustGet(**p).access_key_id == "STS.ini");
  CHECK((*p)->Describe().find("IniRole") != std::string::npos);
}

}  // namespace
}  // namespace ossmount::auth
