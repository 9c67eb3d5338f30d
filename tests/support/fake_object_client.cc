#include "support/fake_object_client.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdio>
#include <cstring>

#include "common/crc64.h"

namespace ossmount::testing {

const char* OpName(Op op) {
  switch (op) {
    case Op::kList:
      return "List";
    case Op::kHead:
      return "Head";
    case Op::kGet:
      return "Get";
    case Op::kPut:
      return "Put";
    case Op::kInitiate:
      return "InitiateMultipart";
    case Op::kUploadPart:
      return "UploadPart";
    case Op::kComplete:
      return "CompleteMultipart";
    case Op::kAbort:
      return "AbortMultipart";
    case Op::kDelete:
      return "Delete";
    case Op::kUploadPartCopy:
      return "UploadPartCopy";
    case Op::kListUploads:
      return "ListMultipartUploads";
    case Op::kCopy:
      return "CopyObject";
    case Op::kDeleteMultiple:
      return "DeleteMultiple";
  }
  return "?";
}

namespace {

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

RequestRecord Simple(Op op, const std::string& key) {
  RequestRecord r;
  r.op = op;
  r.key = key;
  return r;
}

Status NotFound(const std::string& key) {
  Status s(ErrorCode::kNotFound, "The specified key does not exist: " + key);
  s.WithService({404, "NoSuchKey", "fake-request-id", "0026-00000001", ""});
  return s;
}

}  // namespace

FakeObjectClient::FakeObjectClient(boost::asio::io_context& io) : io_(io) {}
FakeObjectClient::~FakeObjectClient() = default;

std::string FakeObjectClient::NewEtagLocked() {
  char buf[48];
  std::snprintf(buf, sizeof buf, "\"FAKE%028llX\"", static_cast<unsigned long long>(next_etag_++));
  return buf;
}

std::string FakeObjectClient::PutObject(const std::string& key, std::string data,
                                        std::optional<int64_t> mtime_sec) {
  std::lock_guard lock(mu_);
  Object obj;
  obj.crc64 = Crc64(0, data.data(), data.size());
  obj.data = std::move(data);
  obj.etag = NewEtagLocked();
  obj.mtime_sec = mtime_sec ? *mtime_sec : next_mtime_++;
  std::string etag = obj.etag;
  objects_[key] = std::move(obj);
  return etag;
}

void FakeObjectClient::DeleteObject(const std::string& key) {
  std::lock_guard lock(mu_);
  objects_.erase(key);
}

bool FakeObjectClient::HasObject(const std::string& key) const {
  std::lock_guard lock(mu_);
  return objects_.count(key) != 0;
}

std::optional<ObjectInfo> FakeObjectClient::Info(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  return InfoLocked(key, it->second, true);
}

std::optional<std::string> FakeObjectClient::Data(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  return it->second.data;
}

size_t FakeObjectClient::ObjectCount() const {
  std::lock_guard lock(mu_);
  return objects_.size();
}

void FakeObjectClient::set_latency(std::chrono::milliseconds latency) {
  std::lock_guard lock(mu_);
  latency_ = latency;
}

void FakeObjectClient::set_page_limit(int limit) {
  std::lock_guard lock(mu_);
  page_limit_ = limit;
}

void FakeObjectClient::set_report_crc64(bool report) {
  std::lock_guard lock(mu_);
  report_crc64_ = report;
}

void FakeObjectClient::set_honour_if_match(bool honour) {
  std::lock_guard lock(mu_);
  honour_if_match_ = honour;
}

void FakeObjectClient::set_min_part_size(uint64_t bytes) {
  std::lock_guard lock(mu_);
  min_part_size_ = bytes;
}

size_t FakeObjectClient::OpenUploadCount() const {
  std::lock_guard lock(mu_);
  return uploads_.size();
}

std::vector<int> FakeObjectClient::UploadedParts(const std::string& upload_id) const {
  std::lock_guard lock(mu_);
  std::vector<int> numbers;
  auto it = uploads_.find(upload_id);
  if (it == uploads_.end()) return numbers;
  for (const auto& [n, part] : it->second.parts) numbers.push_back(n);
  return numbers;
}

void FakeObjectClient::Pause() {
  std::lock_guard lock(mu_);
  paused_ = true;
}

void FakeObjectClient::Resume() {
  std::vector<std::function<void()>> held;
  {
    std::lock_guard lock(mu_);
    paused_ = false;
    held.swap(held_);
  }
  for (auto& f : held) boost::asio::post(io_, std::move(f));
}

void FakeObjectClient::HoldListsOf(std::string prefix) {
  std::lock_guard lock(mu_);
  hold_lists_of_ = std::move(prefix);
}

void FakeObjectClient::ReleaseLists() {
  std::vector<std::function<void()>> held;
  {
    std::lock_guard lock(mu_);
    hold_lists_of_.reset();
    held.swap(held_lists_);
  }
  for (auto& finish : held) finish();
}

uint64_t FakeObjectClient::count(Op op) const {
  std::lock_guard lock(mu_);
  return counters_[static_cast<int>(op)];
}

uint64_t FakeObjectClient::total_count() const {
  std::lock_guard lock(mu_);
  uint64_t total = 0;
  for (uint64_t c : counters_) total += c;
  return total;
}

void FakeObjectClient::ResetCounters() {
  std::lock_guard lock(mu_);
  for (auto& c : counters_) c = 0;
  log_.clear();
  max_in_flight_ = in_flight_;
  cancelled_ = 0;
}

std::vector<RequestRecord> FakeObjectClient::requests() const {
  std::lock_guard lock(mu_);
  return log_;
}

int FakeObjectClient::in_flight() const {
  std::lock_guard lock(mu_);
  return in_flight_;
}

int FakeObjectClient::max_in_flight() const {
  std::lock_guard lock(mu_);
  return max_in_flight_;
}

uint64_t FakeObjectClient::cancelled_count() const {
  std::lock_guard lock(mu_);
  return cancelled_;
}

void FakeObjectClient::RecordLocked(RequestRecord record) {
  counters_[static_cast<int>(record.op)]++;
  log_.push_back(std::move(record));
  ++in_flight_;
  if (in_flight_ > max_in_flight_) max_in_flight_ = in_flight_;
}

ObjectInfo FakeObjectClient::InfoLocked(const std::string& key, const Object& obj,
                                        bool with_type) const {
  ObjectInfo info;
  info.key = key;
  info.size = obj.data.size();
  info.etag = obj.etag;
  info.mtime_sec = obj.mtime_sec;
  if (report_crc64_) info.crc64 = obj.crc64;
  info.storage_class = "Standard";
  if (with_type) info.content_type = "application/octet-stream";
  return info;
}

// The response is computed when the request is made; `complete` delivers it later.
void FakeObjectClient::Finish(std::function<void()> complete) {
  auto self = shared_from_this();
  auto wrapped = [self, complete = std::move(complete)]() {
    {
      std::lock_guard lock(self->mu_);
      --self->in_flight_;
    }
    complete();
  };
  Dispatch(std::move(wrapped));
}

void FakeObjectClient::Dispatch(std::function<void()> complete) {
  auto self = shared_from_this();
  // Checked when the completion fires, so Pause() also holds requests already scheduled.
  auto gate = [self, complete = std::move(complete)]() mutable {
    {
      std::lock_guard lock(self->mu_);
      if (self->paused_) {
        self->held_.push_back(std::move(complete));
        return;
      }
    }
    complete();
  };
  std::chrono::milliseconds latency;
  {
    std::lock_guard lock(mu_);
    latency = latency_;
  }
  if (latency.count() > 0) {
    auto timer = std::make_shared<boost::asio::steady_timer>(io_, latency);
    timer->async_wait(
        [timer, gate = std::move(gate)](const boost::system::error_code&) mutable { gate(); });
  } else {
    boost::asio::post(io_, std::move(gate));
  }
}

void FakeObjectClient::set_token_cycle(int period) {
  std::lock_guard lock(mu_);
  token_cycle_ = period;
}

void FakeObjectClient::List(const ListRequest& request, ListHandler handler) {
  ListPage page;
  {
    std::lock_guard lock(mu_);
    RequestRecord record = Simple(Op::kList, request.prefix);
    record.delimiter = request.delimiter;
    record.max_keys = request.max_keys;
    RecordLocked(std::move(record));
    int max_keys = request.max_keys > 0 ? request.max_keys : 1000;
    if (max_keys > page_limit_) max_keys = page_limit_;
    const std::string& prefix = request.prefix;
    const std::string& delim = request.delimiter;
    // Tokens are "K<key>" (resume after that key) or "C<prefix>" (after that common prefix).
    std::string skip_under;  // keys under this common prefix were already reported
    auto it = objects_.lower_bound(prefix);
    const std::string& token = request.continuation_token;
    if (!token.empty() && !(token_cycle_ > 0 && StartsWith(token, "cycle-"))) {
      std::string after = token.substr(1);
      it = objects_.upper_bound(after);
      if (token[0] == 'C') skip_under = after;
    }
    int emitted = 0;
    std::string last_token;
    for (; it != objects_.end() && StartsWith(it->first, prefix); ++it) {
      const std::string& key = it->first;
      if (!skip_under.empty() && StartsWith(key, skip_under)) continue;
      std::string cp;
      if (!delim.empty()) {
        size_t pos = key.find(delim, prefix.size());
        if (pos != std::string::npos) cp = key.substr(0, pos + delim.size());
      }
      if (emitted == max_keys) {
        page.truncated = true;
        page.next_continuation_token = last_token;
        break;
      }
      if (!cp.empty()) {
        page.common_prefixes.push_back(cp);
        skip_under = cp;
        last_token = "C" + cp;
      } else {
        page.objects.push_back(InfoLocked(key, it->second, false));
        last_token = "K" + key;
      }
      ++emitted;
    }
    if (token_cycle_ > 0 && page.truncated) {
      page.next_continuation_token =
          "cycle-" + std::to_string(cycled_pages_++ % static_cast<uint64_t>(token_cycle_));
    }
  }
  auto finish = [self = shared_from_this(), handler = std::move(handler),
                 page = std::move(page)]() mutable {
    self->Finish([handler = std::move(handler), page = std::move(page)]() mutable {
      handler(std::move(page));
    });
  };
  {
    std::lock_guard lock(mu_);
    if (hold_lists_of_ == request.prefix) {
      held_lists_.push_back(std::move(finish));
      return;
    }
  }
  finish();
}

void FakeObjectClient::Head(const std::string& key, HeadHandler handler) {
  std::optional<ObjectInfo> info;
  {
    std::lock_guard lock(mu_);
    RecordLocked(Simple(Op::kHead, key));
    auto it = objects_.find(key);
    if (it != objects_.end()) info = InfoLocked(key, it->second, true);
  }
  Finish([handler = std::move(handler), info = std::move(info), key]() {
    if (info) {
      handler(*info);
    } else {
      handler(NotFound(key));
    }
  });
}

void FakeObjectClient::Get(const GetRequest& request, GetTarget target, GetHandler handler) {
  Status error;
  std::string body;
  GetResult result;
  {
    std::lock_guard lock(mu_);
    RequestRecord record = Simple(Op::kGet, request.key);
    record.offset = request.offset;
    record.length = request.length;
    record.if_match = request.if_match;
    record.priority = request.priority;
    record.cancellable = request.cancel != nullptr;
    RecordLocked(std::move(record));
    auto it = objects_.find(request.key);
    if (it == objects_.end()) {
      error = NotFound(request.key);
    } else {
      const Object& obj = it->second;
      const uint64_t size = obj.data.size();
      const bool whole = request.offset == 0 && !request.length;
      if (honour_if_match_ && !request.if_match.empty() && request.if_match != obj.etag) {
        error = Status(ErrorCode::kPreconditionFailed,
                       "At least one of the pre-conditions you "
                       "specified did not hold.");
        error.WithService({412, "PreconditionFailed", "fake-request-id", "", ""});
      } else if ((!whole && request.offset >= size) || (request.length && *request.length == 0)) {
        error = Status(ErrorCode::kInvalidRange, "The requested range cannot be satisfied.");
        error.WithService({416, "InvalidRange", "fake-request-id", "", ""});
      } else {
        uint64_t n = size - request.offset;
        if (request.length && *request.length < n) n = *request.length;
        if (target.growable == nullptr && n > target.capacity) {
          error = Status(ErrorCode::kIntegrity, "body longer than the destination buffer");
        } else {
          body = obj.data.substr(request.offset, n);
          result.bytes = n;
          result.object_size = size;
          result.etag = obj.etag;
          result.mtime_sec = obj.mtime_sec;
          if (report_crc64_) result.crc64 = obj.crc64;
        }
      }
    }
  }
  // Bytes delivered before the completion (set_early_bytes), which then writes only the rest.
  uint64_t early = 0;
  bool fail_after_early = false;
  {
    std::lock_guard lock(mu_);
    if (error.ok() && target.data != nullptr && target.on_arrival && request.length &&
        !request.if_match.empty()) {
      early = std::min<uint64_t>(early_bytes_, body.size());
      fail_after_early = early > 0 && fail_after_early_;
    }
  }
  std::string prefix = body.substr(0, early);
  auto complete = [self = shared_from_this(), cancel = request.cancel, handler = std::move(handler),
                   error, body = std::move(body), result, target, early, fail_after_early]() {
    if (cancel && cancel->cancelled) {
      {
        std::lock_guard lock(self->mu_);
        ++self->cancelled_;
      }
      handler(Status(ErrorCode::kCancelled, "request cancelled"));
      return;
    }
    if (!error.ok()) {
      handler(error);
      return;
    }
    if (fail_after_early) {
      handler(Status(ErrorCode::kNetwork, "connection reset after part of the body", true));
      return;
    }
    if (target.growable != nullptr) {
      target.growable->assign(body.begin(), body.end());
    } else if (body.size() > early) {
      // Bytes reported early may be in use: they are not written again.
      std::memcpy(target.data + early, body.data() + early, body.size() - early);
    }
    handler(result);
  };
  if (early == 0) return Finish(std::move(complete));
  boost::asio::post(io_, [self = shared_from_this(), cancel = request.cancel, target, early,
                          prefix = std::move(prefix), complete = std::move(complete)]() mutable {
    if (!(cancel && cancel->cancelled)) {
      std::memcpy(target.data, prefix.data(), early);
      target.on_arrival(early);
    }
    self->Finish(std::move(complete));
  });
}

void FakeObjectClient::set_early_bytes(uint64_t bytes, bool then_fail) {
  std::lock_guard lock(mu_);
  early_bytes_ = bytes;
  fail_after_early_ = then_fail;
}

}  // namespace ossmount::testing
