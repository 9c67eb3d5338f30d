// ClientRig: the production object client (real FetchEngine, real signers, real clock) on
// its own io_context threads, with blocking wrappers so integration tests read top-down.
//
// Ownership: the rig owns the io_context, engine and client; the destructor drops the
// client, then the engine (which aborts anything in flight), then stops the threads.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "auth/credentials.h"
#include "http/fetch_engine.h"
#include "ossmount/client_options.h"
#include "ossmount/object_client.h"

namespace ossmount::itest {

// Fixed credentials that can be swapped while the client runs; counts Invalidate() calls.
class TestCredentials final : public auth::CredentialsProvider {
 public:
  TestCredentials(std::string id, std::string secret, std::string token = "");
  Result<auth::Credentials> Get() override;
  std::string Describe() const override { return "integration-test credentials"; }
  void Invalidate() override;
  void Set(std::string id, std::string secret, std::string token);
  int invalidations() const;
  // Called on Invalidate() (e.g. to rotate to fresh credentials, like a file re-read).
  std::function<void(TestCredentials&)> on_invalidate;

 private:
  mutable std::mutex mu_;
  auth::Credentials creds_;
  int invalidations_ = 0;
};

class ClientRig {
 public:
  // REQUIRES: options.credentials set. Fails the calling test (REQUIRE) if the client
  // cannot be built.
  explicit ClientRig(ClientOptions options, int threads = 2);
  ~ClientRig();

  ObjectClient& client() { return *client_; }
  http::EngineStats stats() const { return engine_->Stats(); }

  Result<ListPage> List(const ListRequest& request);
  // Every page of a listing; `pages` counts them.
  Result<std::pair<std::vector<ObjectInfo>, std::vector<std::string>>> ListAll(
      const std::string& prefix, const std::string& delimiter, int max_keys, int* pages);
  Result<ObjectInfo> Head(const std::string& key);
  // GET into a vector; the result's bytes come back as a string.
  Result<std::string> Get(const std::string& key, uint64_t offset = 0,
                          std::optional<uint64_t> length = std::nullopt,
                          GetResult* details = nullptr, const std::string& if_match = "");
  // GET into a fixed buffer of `capacity` bytes.
  Result<std::string> GetFixed(const std::string& key, uint64_t offset,
                               std::optional<uint64_t> length, size_t capacity);
  Result<PutResult> Put(const std::string& key, const std::string& data);
  // Many PUTs, `concurrency` in flight; the first error, or OK.
  Status PutMany(const std::vector<std::pair<std::string, std::string>>& objects, int concurrency);
  Status Delete(const std::string& key);
  Result<std::string> Initiate(const std::string& key);
  Result<PartInfo> UploadPart(const std::string& key, const std::string& id, int n,
                              const std::string& data);
  Result<PutResult> Complete(const std::string& key, const std::string& id,
                             std::vector<PartInfo> parts);
  Status Abort(const std::string& key, const std::string& id);

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::vector<std::thread> threads_;
  std::unique_ptr<http::FetchEngine> engine_;
  std::shared_ptr<ObjectClient> client_;
};

// A free TCP port on 127.0.0.1 (bound, read, released).
int FreePort();
// True once a TCP connection to 127.0.0.1:port succeeds, polling for up to `seconds`.
bool WaitForPort(int port, int seconds);
// A fresh directory under /tmp.
std::string MakeTempDir(const std::string& prefix);
// Deterministic test content.
std::string Content(size_t size, uint32_t seed);

}  // namespace ossmount::itest
