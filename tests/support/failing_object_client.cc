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
}

void FailingObjectClient::set_error(Status error) {
  std::lock_guard lock(mu_);
  error_ = std::move(error);
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

void FailingObjectClient::Put(const std::string& key, std::shared_ptr<const std::string> body,
                              PutHandler handler) {
  if (ShouldFail(Op::kPut, key)) return PostError(std::move(handler));
  inner_->Put(key, std::move(body), std::move(handler));
}

void FailingObjectClient::InitiateMultipart(const std::string& key, InitiateHandler handler) {
  if (ShouldFail(Op::kInitiate, key)) return PostError(std::move(handler));
  inner_->InitiateMultipart(key, std::move(handler));
}

void FailingObjectClient::UploadPart(const std::string& key, const std::string& upload_id,
                                     int part_number, std::shared_ptr<const std::string> body,
                                     PartHandler handler) {
  if (ShouldFail(Op::kUploadPart, key)) return PostError(std::move(handler));
  inner_->UploadPart(key, upload_id, part_number, std::move(body), std::move(handler));
}

void FailingObjectClient::CompleteMultipart(const std::string& key, const std::string& upload_id,
                                            std::vector<PartInfo> parts, PutHandler handler) {
  if (ShouldFail(Op::kComplete, key)) return PostError(std::move(handler));
  inner_->CompleteMultipart(key, upload_id, std::move(parts), std::move(handler));
}

void FailingObjectClient::AbortMultipart(const std::string& key, const std::string& upload_id,
                                         StatusHandler handler) {
  if (ShouldFail(Op::kAbort, key)) return PostError(std::move(handler));
  inner_->AbortMultipart(key, upload_id, std::move(handler));
}

void FailingObjectClient::Delete(const std::string& key, StatusHandler handler) {
  if (ShouldFail(Op::kDelete, key)) return PostError(std::move(handler));
  inner_->Delete(key, std::move(handler));
}

}  // namespace ossmount::testing
