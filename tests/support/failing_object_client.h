// FailingObjectClient: wraps another ObjectClient and makes chosen calls fail, for
// fail-matrix tests ("fail call 1, then call 2, ... and check what each failure does").
//
// A call fails, without reaching the wrapped client, when
//   - it is the Nth call counted so far (1-based; all operations, or only `op` if set), or
//   - its key (the prefix, for List) equals a key given to FailKey, or starts with a
//     prefix given to FailPrefix.
// The handler then gets `error` (default: kServerError, not retryable), posted to the
// io_context like a real completion. Other calls pass through unchanged.
//
// Ownership: holds the wrapped client. Thread-safety: all methods are thread-safe.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "ossmount/object_client.h"
#include "support/fake_object_client.h"

namespace ossmount::testing {

class FailingObjectClient : public ObjectClient {
 public:
  FailingObjectClient(boost::asio::io_context& io, std::shared_ptr<ObjectClient> inner);

  // Fails the nth matching call (1-based) from now on; 0 disables. Counting restarts.
  void FailNth(uint64_t n, std::optional<Op> op = std::nullopt);
  void FailKey(const std::string& key);
  void FailPrefix(const std::string& prefix);
  void ClearFailures();
  void set_error(Status error);

  uint64_t calls() const;     // calls matching the FailNth filter since it was set
  uint64_t failures() const;  // calls that were failed

  void List(const ListRequest& request, ListHandler handler) override;
  void Head(const std::string& key, HeadHandler handler) override;
  void Get(const GetRequest& request, GetTarget target, GetHandler handler) override;
  void Put(const std::string& key, std::shared_ptr<const std::string> body,
           PutHandler handler) override;
  void InitiateMultipart(const std::string& key, InitiateHandler handler) override;
  void UploadPart(const std::string& key, const std::string& upload_id, int part_number,
                  std::shared_ptr<const std::string> body, PartHandler handler) override;
  void CompleteMultipart(const std::string& key, const std::string& upload_id,
                         std::vector<PartInfo> parts, PutHandler handler) override;
  void AbortMultipart(const std::string& key, const std::string& upload_id,
                      StatusHandler handler) override;
  void Delete(const std::string& key, StatusHandler handler) override;

 private:
  // Decides whether this call fails; counts it.
  bool ShouldFail(Op op, const std::string& key);
  template <typename Handler>
  void PostError(Handler handler);

  boost::asio::io_context& io_;
  std::shared_ptr<ObjectClient> inner_;
  // mu_ guards the fields below; never held while calling inner_ or a handler.
  mutable std::mutex mu_;
  uint64_t fail_nth_ = 0;
  std::optional<Op> nth_op_;
  uint64_t calls_ = 0;
  uint64_t failures_ = 0;
  std::set<std::string> fail_keys_;
  std::set<std::string> fail_prefixes_;
  Status error_{ErrorCode::kServerError, "injected failure", false};
};

}  // namespace ossmount::testing
