#include "client_rig.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <future>

#include "object/client_factory.h"

namespace ossmount::itest {

TestCredentials::TestCredentials(std::string id, std::string secret, std::string token) {
  Set(std::move(id), std::move(secret), std::move(token));
}

Result<auth::Credentials> TestCredentials::Get() {
  std::lock_guard<std::mutex> lock(mu_);
  return creds_;
}

void TestCredentials::Invalidate() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++invalidations_;
  }
  if (on_invalidate) on_invalidate(*this);
}

void TestCredentials::Set(std::string id, std::string secret, std::string token) {
  std::lock_guard<std::mutex> lock(mu_);
  creds_.access_key_id = std::move(id);
  creds_.access_key_secret = std::move(secret);
  creds_.security_token = std::move(token);
}

int TestCredentials::invalidations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return invalidations_;
}

ClientRig::ClientRig(ClientOptions options, int threads) : guard_(io_.get_executor()) {
  http::EngineOptions eo;
  eo.timeouts = options.timeouts;
  eo.max_in_flight = options.max_in_flight;
  eo.max_connections_per_host = options.max_connections_per_host;
  eo.verify_tls = options.verify_tls;
  eo.ca_bundle = options.ca_bundle;
  engine_ = std::make_unique<http::FetchEngine>(io_, eo);
  auto made = object::MakeObjectClient(io_, *engine_, options);
  if (!made.ok()) FAIL("MakeObjectClient: " << made.status().ToString());
  client_ = made.value();
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { io_.run(); });
}

ClientRig::~ClientRig() {
  client_.reset();
  engine_.reset();
  guard_.reset();
  io_.stop();
  for (auto& t : threads_) t.join();
}

namespace {

template <typename T, typename Start>
T Await(Start start) {
  auto done = std::make_shared<std::promise<T>>();
  auto future = done->get_future();
  start([done](T value) { done->set_value(std::move(value)); });
  // Generous: only there so that a lost handler fails the test instead of hanging it.
  if (future.wait_for(std::chrono::minutes(5)) != std::future_status::ready) {
    FAIL("object client handler never called");
  }
  return future.get();
}

}  // namespace

Result<ListPage> ClientRig::List(const ListRequest& request) {
  return Await<Result<ListPage>>([&](auto h) { client_->List(request, std::move(h)); });
}

Result<std::pair<std::vector<ObjectInfo>, std::vector<std::string>>> ClientRig::ListAll(
    const std::string& prefix, const std::string& delimiter, int max_keys, int* pages) {
  std::pair<std::vector<ObjectInfo>, std::vector<std::string>> all;
  ListRequest request;
  request.prefix = prefix;
  request.delimiter = delimiter;
  request.max_keys = max_keys;
  *pages = 0;
  for (;;) {
    auto page = List(request);
    if (!page.ok()) return page.status();
    ++*pages;
    for (auto& o : page->objects) all.first.push_back(std::move(o));
    for (auto& p : page->common_prefixes) all.second.push_back(std::move(p));
    if (!page->truncated) return all;
    request.continuation_token = page->next_continuation_token;
    if (*pages > 100000) return Status(ErrorCode::kInternal, "listing does not end");
  }
}

Result<ObjectInfo> ClientRig::Head(const std::string& key) {
  return Await<Result<ObjectInfo>>([&](auto h) { client_->Head(key, std::move(h)); });
}

Result<std::string> ClientRig::Get(const std::string& key, uint64_t offset,
                                   std::optional<uint64_t> length, GetResult* details,
                                   const std::string& if_match) {
  auto out = std::make_shared<std::vector<char>>();
  GetRequest request;
  request.key = key;
  request.offset = offset;
  request.length = length;
  request.if_match = if_match;
  auto got = Await<Result<GetResult>>(
      [&](auto h) { client_->Get(request, GetTarget::Growable(out.get()), std::move(h)); });
  if (!got.ok()) return got.status();
  if (details) *details = got.value();
  REQUIRE(got->bytes == out->size());
  return std::string(out->begin(), out->end());
}

Result<std::string> ClientRig::GetFixed(const std::string& key, uint64_t offset,
                                        std::optional<uint64_t> length, size_t capacity) {
  auto buf = std::make_shared<std::vector<char>>(capacity);
  GetRequest request;
  request.key = key;
  request.offset = offset;
  request.length = length;
  auto got = Await<Result<GetResult>>([&](auto h) {
    client_->Get(request, GetTarget::Fixed(buf->data(), buf->size()), std::move(h));
  });
  if (!got.ok()) return got.status();
  return std::string(buf->data(), got->bytes);
}

Result<PutResult> ClientRig::Put(const std::string& key, const std::string& data) {
  auto body = SharedBytes::Copy(data);
  return Await<Result<PutResult>>(
      [&](auto h) { client_->Put(key, body, WriteOptions{}, std::move(h)); });
}

Status ClientRig::PutMany(const std::vector<std::pair<std::string, std::string>>& objects,
                          int concurrency) {
  std::mutex mu;
  std::condition_variable cv;
  size_t next = 0, done = 0;
  int in_flight = 0;
  Status first_error;
  std::unique_lock<std::mutex> lock(mu);
  while (done < objects.size()) {
    while (in_flight < concurrency && next < objects.size()) {
      const auto& [key, data] = objects[next++];
      ++in_flight;
      auto body = SharedBytes::Copy(data);
      lock.unlock();
      client_->Put(key, body, WriteOptions{}, [&](Result<PutResult> r) {
        std::lock_guard<std::mutex> l(mu);
        if (!r.ok() && first_error.ok()) first_error = r.status();
        --in_flight;
        ++done;
        cv.notify_all();
      });
      lock.lock();
    }
    cv.wait(lock, [&] {
      return (in_flight < concurrency && next < objects.size()) || done == objects.size();
    });
  }
  return first_error;
}

Status ClientRig::Delete(const std::string& key) {
  return Await<Status>([&](auto h) { client_->Delete(key, std::move(h)); });
}

Result<std::string> ClientRig::Initiate(const std::string& key) {
  return Await<Result<std::string>>([&](auto h) { client_->InitiateMultipart(key, std::move(h)); });
}

Result<PartInfo> ClientRig::UploadPart(const std::string& key, const std::string& id, int n,
                                       const std::string& data) {
  auto body = SharedBytes::Copy(data);
  return Await<Result<PartInfo>>(
      [&](auto h) { client_->UploadPart(key, id, n, body, std::move(h)); });
}

Result<PutResult> ClientRig::Complete(const std::string& key, const std::string& id,
                                      std::vector<PartInfo> parts) {
  return Await<Result<PutResult>>([&](auto h) {
    client_->CompleteMultipart(key, id, std::move(parts), WriteOptions{}, std::move(h));
  });
}

Status ClientRig::Abort(const std::string& key, const std::string& id) {
  return Await<Status>([&](auto h) { client_->AbortMultipart(key, id, std::move(h)); });
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return -1;
  }
  int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

bool WaitForPort(int port, int seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    ::close(fd);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::string MakeTempDir(const std::string& prefix) {
  std::string pattern = "/tmp/" + prefix + "-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  char* dir = ::mkdtemp(buf.data());
  return dir ? std::string(dir) : std::string();
}

std::string Content(size_t size, uint32_t seed) {
  std::string s(size, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    s[i] = static_cast<char>(x & 0xFF);
  }
  return s;
}

}  // namespace ossmount::itest
