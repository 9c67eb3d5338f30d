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
// Write faults, each for the next `times` calls of one operation (counted separately from
// FailNth, checked before it):
//   - RefuseNext: the call fails with `error` (default: the set_error one) without reaching
//     the wrapped client. For UploadPart/UploadPartCopy it can be limited to one part
//     number ("part 3 refused twice").
//   - LoseAnswerOfNext: the call reaches the wrapped client, which applies it, but the
//     caller gets kNetwork (retryable), as when the connection drops after the server acted
//     (a lost Complete answer: the object exists, the upload id is gone), or `answer` when
//     given (what a retry after the lost answer got: "already exists" for a copy made with
//     forbid-overwrite).
//   - CutBodyOfNext: the call fails with kNetwork (retryable) without reaching the wrapped
//     client, as when the connection is cut while the body is sent: the server keeps nothing.
//
// Ownership: holds the wrapped client. Thread-safety: all methods are thread-safe.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <map>
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

  void RefuseNext(Op op, int times, std::optional<Status> error = std::nullopt,
                  std::optional<int> part_number = std::nullopt);
  void LoseAnswerOfNext(Op op, int times, std::optional<Status> answer = std::nullopt);
  void CutBodyOfNext(Op op, int times);

  uint64_t calls() const;     // calls matching the FailNth filter since it was set
  uint64_t failures() const;  // calls that were failed (answers lost included)

  void List(const ListRequest& request, ListHandler handler) override;
  void Head(const std::string& key, HeadHandler handler) override;
  void Get(const GetRequest& request, GetTarget target, GetHandler handler) override;
  void Put(const std::string& key, SharedBytes body, const WriteOptions& options,
           PutHandler handler) override;
  void InitiateMultipart(const std::string& key, InitiateHandler handler) override;
  void UploadPart(const std::string& key, const std::string& upload_id, int part_number,
                  SharedBytes body, PartHandler handler) override;
  void UploadPartCopy(const std::string& key, const std::string& upload_id, int part_number,
                      const std::string& source_key, const std::string& source_etag,
                      uint64_t offset, uint64_t length, PartHandler handler) override;
  void CompleteMultipart(const std::string& key, const std::string& upload_id,
                         std::vector<PartInfo> parts, const WriteOptions& options,
                         PutHandler handler) override;
  void AbortMultipart(const std::string& key, const std::string& upload_id,
                      StatusHandler handler) override;
  void ListMultipartUploads(const std::string& prefix, UploadsHandler handler) override;
  void CopyObject(const std::string& source_key, const std::string& source_etag,
                  const std::string& dest_key, const WriteOptions& options,
                  PutHandler handler) override;
  void Delete(const std::string& key, StatusHandler handler) override;
  void DeleteMultiple(std::vector<std::string> keys, StatusHandler handler) override;

 private:
  enum class Fault { kNone, kRefuse, kLoseAnswer, kCutBody };
  struct WriteFault {
    Fault fault = Fault::kNone;
    int remaining = 0;
    std::optional<Status> error;
    std::optional<int> part_number;
  };

  // Decides whether this call fails; counts it.
  bool ShouldFail(Op op, const std::string& key);
  // The write fault this call gets (consuming one of its `times`), else kNone; then, when
  // none, ShouldFail. `part_number` 0 for calls without one. *error is set for kRefuse.
  Fault NextFault(Op op, const std::string& key, int part_number, Status* error);
  template <typename Handler>
  void PostError(Handler handler);
  template <typename Handler>
  void PostStatus(Handler handler, Status status);
  // The handler to give the wrapped client when its answer is to be lost.
  template <typename Result>
  std::function<void(Result)> LoseAnswer(std::function<void(Result)> handler, Status answer);
  // Runs `forward` unless a fault applies, in which case the handler gets the fault.
  template <typename Result>
  void Dispatch(Op op, const std::string& key, int part_number, std::function<void(Result)> handler,
                const std::function<void(std::function<void(Result)>)>& forward);

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
  std::map<Op, WriteFault> write_faults_;
};

}  // namespace ossmount::testing
