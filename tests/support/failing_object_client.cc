#include "support/failing_object_client.h"

#include <boost/asio/post.hpp>

namespace ossmount::testing {

FailingObjectClient::FailingObjectClient(boost::asio::io_context& io,
                                         std::shared_ptr<ObjectClient> inner)
    : io_(io), inner_(std::move(inner)) {}

void FailingObjectClient::FailNth(uint64_t n, std::optional<Op> op) {
  std::lock_guard lock(mu_);
  fail_nth_ = n;
  nth_op_ = op;
  calls_ = 0;
}

void FailingObjectClient::FailKey(const std::string& key) {
  std::lock_guard lock(mu_);
  fail_keys_.insert(key);
}

void FailingObjectClient::FailPrefix(const std::string& prefix) {
  std::lock_guard lock(mu_);
  fail_prefixes_.insert(prefix);
}

void FailingObjectClient::ClearFailures() {
  std::lock_guard lock(mu_);
  fail_nth_ = 0;
  nth_op_.reset();
  fail_keys_.clear();
  fail_prefixes_.clear();
  write_faults_.clear();
}

void FailingObjectClient::set_error(Status error) {
  std::lock_guard lock(mu_);
  error_ = std::move(error);
}

void FailingObjectClient::RefuseNext(Op op, int times, std::optional<Status> error,
                                     std::optional<int> part_number) {
  std::lock_guard lock(mu_);
  write_faults_[op] = WriteFault{Fault::kRefuse, times, std::move(error), part_number};
}

void FailingObjectClient::LoseAnswerOfNext(Op op, int times, std::optional<Status> answer) {
  std::lock_guard lock(mu_);
  write_faults_[op] = WriteFault{Fault::kLoseAnswer, times, std::move(answer), std::nullopt};
}

void FailingObjectClient::CutBodyOfNext(Op op, int times) {
  std::lock_guard lock(mu_);
  write_faults_[op] = WriteFault{Fault::kCutBody, times, std::nullopt, std::nullopt};
}

uint64_t FailingObjectClient::calls() const {
  std::lock_guard lock(mu_);
  return calls_;
}

uint64_t FailingObjectClient::failures() const {
  std::lock_guard lock(mu_);
  return failures_;
}

bool FailingObjectClient::ShouldFail(Op op, const std::string& key) {
  std::lock_guard lock(mu_);
  bool fail = false;
  if (!nth_op_ || *nth_op_ == op) {
    ++calls_;
    if (fail_nth_ != 0 && calls_ == fail_nth_) fail = true;
  }
  if (fail_keys_.count(key)) fail = true;
  for (const auto& p : fail_prefixes_) {
    if (key.compare(0, p.size(), p) == 0) fail = true;
  }
  if (fail) ++failures_;
  return fail;
}

template <typename Handler>
void FailingObjectClient::PostError(Handler handler) {
  Status error;
  {
    std::lock_guard lock(mu_);
    error = error_;
  }
  boost::asio::post(io_, [handler = std::move(handler), error]() { handler(error); });
}

void FailingObjectClient::List(const ListRequest& request, ListHandler handler) {
  if (ShouldFail(Op::kList, request.prefix)) return PostError(std::move(handler));
  inner_->List(request, std::move(handler));
}

void FailingObjectClient::Head(const std::string& key, HeadHandler handler) {
  if (ShouldFail(Op::kHead, key)) return PostError(std::move(handler));
  inner_->Head(key, std::move(handler));
}

void FailingObjectClient::Get(const GetRequest& request, GetTarget target, GetHandler handler) {
  if (ShouldFail(Op::kGet, request.key)) return PostError(std::move(handler));
  inner_->Get(request, target, std::move(handler));
}

namespace {

Status CutBody() {
  return Status(ErrorCode::kNetwork, "injected: connection reset while the body was sent", true);
}

Status LostAnswer() {
  return Status(ErrorCode::kNetwork, "injected: connection reset before the answer arrived", true);
}

}  // namespace

FailingObjectClient::Fault FailingObjectClient::NextFault(Op op, const std::string& key,
                                                          int part_number, Status* error) {
  {
    std::lock_guard lock(mu_);
    auto it = write_faults_.find(op);
    if (it != write_faults_.end() && it->second.remaining > 0 &&
        (!it->second.part_number || *it->second.part_number == part_number)) {
      WriteFault& f = it->second;
      --f.remaining;
      ++failures_;
      if (f.fault == Fault::kRefuse) *error = f.error ? *f.error : error_;
      if (f.fault == Fault::kLoseAnswer) *error = f.error ? *f.error : LostAnswer();
      return f.fault;
    }
  }
  if (!ShouldFail(op, key)) return Fault::kNone;
  std::lock_guard lock(mu_);
  *error = error_;
  return Fault::kRefuse;
}

template <typename Handler>
void FailingObjectClient::PostStatus(Handler handler, Status status) {
  boost::asio::post(
      io_, [handler = std::move(handler), status = std::move(status)]() { handler(status); });
}

template <typename Result>
std::function<void(Result)> FailingObjectClient::LoseAnswer(std::function<void(Result)> handler,
                                                            Status answer) {
  // The wrapped client has acted; only its answer goes missing.
  return [handler = std::move(handler), answer = std::move(answer)](Result) { handler(answer); };
}

template <typename Result>
void FailingObjectClient::Dispatch(
    Op op, const std::string& key, int part_number, std::function<void(Result)> handler,
    const std::function<void(std::function<void(Result)>)>& forward) {
  Status error;
  switch (NextFault(op, key, part_number, &error)) {
    case Fault::kNone:
      return forward(std::move(handler));
    case Fault::kRefuse:
      return PostStatus(std::move(handler), std::move(error));
    case Fault::kCutBody:
      return PostStatus(std::move(handler), CutBody());
    case Fault::kLoseAnswer:
      return forward(LoseAnswer<Result>(std::move(handler), std::move(error)));
  }
}

void FailingObjectClient::Put(const std::string& key, SharedBytes body, const WriteOptions& options,
                              PutHandler handler) {
  Dispatch<Result<PutResult>>(Op::kPut, key, 0, std::move(handler), [&](PutHandler h) {
    inner_->Put(key, std::move(body), options, std::move(h));
  });
}

void FailingObjectClient::InitiateMultipart(const std::string& key, InitiateHandler handler) {
  Dispatch<Result<std::string>>(Op::kInitiate, key, 0, std::move(handler),
                                [&](InitiateHandler h) { inner_->InitiateMultipart(key, h); });
}

void FailingObjectClient::UploadPart(const std::string& key, const std::string& upload_id,
                                     int part_number, SharedBytes body, PartHandler handler) {
  Dispatch<Result<PartInfo>>(
      Op::kUploadPart, key, part_number, std::move(handler), [&](PartHandler h) {
        inner_->UploadPart(key, upload_id, part_number, std::move(body), std::move(h));
      });
}

void FailingObjectClient::UploadPartCopy(const std::string& key, const std::string& upload_id,
                                         int part_number, const std::string& source_key,
                                         const std::string& source_etag, uint64_t offset,
                                         uint64_t length, PartHandler handler) {
  Dispatch<Result<PartInfo>>(Op::kUploadPartCopy, key, part_number, std::move(handler),
                             [&](PartHandler h) {
                               inner_->UploadPartCopy(key, upload_id, part_number, source_key,
                                                      source_etag, offset, length, std::move(h));
                             });
}

void FailingObjectClient::CompleteMultipart(const std::string& key, const std::string& upload_id,
                                            std::vector<PartInfo> parts,
                                            const WriteOptions& options, PutHandler handler) {
  Dispatch<Result<PutResult>>(Op::kComplete, key, 0, std::move(handler), [&](PutHandler h) {
    inner_->CompleteMultipart(key, upload_id, std::move(parts), options, std::move(h));
  });
}

void FailingObjectClient::AbortMultipart(const std::string& key, const std::string& upload_id,
                                         StatusHandler handler) {
  Dispatch<Status>(Op::kAbort, key, 0, std::move(handler),
                   [&](StatusHandler h) { inner_->AbortMultipart(key, upload_id, std::move(h)); });
}

void FailingObjectClient::ListMultipartUploads(const std::string& prefix, UploadsHandler handler) {
  Dispatch<Result<std::vector<OpenUpload>>>(
      Op::kListUploads, prefix, 0, std::move(handler),
      [&](UploadsHandler h) { inner_->ListMultipartUploads(prefix, std::move(h)); });
}

void FailingObjectClient::CopyObject(const std::string& source_key, const std::string& source_etag,
                                     const std::string& dest_key, const WriteOptions& options,
                                     PutHandler handler) {
  Dispatch<Result<PutResult>>(Op::kCopy, dest_key, 0, std::move(handler), [&](PutHandler h) {
    inner_->CopyObject(source_key, source_etag, dest_key, options, std::move(h));
  });
}

void FailingObjectClient::Delete(const std::string& key, StatusHandler handler) {
  Dispatch<Status>(Op::kDelete, key, 0, std::move(handler),
                   [&](StatusHandler h) { inner_->Delete(key, std::move(h)); });
}

void FailingObjectClient::DeleteMultiple(std::vector<std::string> keys, StatusHandler handler) {
  const std::string first = keys.empty() ? std::string() : keys.front();
  Dispatch<Status>(Op::kDeleteMultiple, first, 0, std::move(handler),
                   [&](StatusHandler h) { inner_->DeleteMultiple(std::move(keys), std::move(h)); });
}

}  // namespace ossmount::testing
