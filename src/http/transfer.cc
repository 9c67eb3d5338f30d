#include "http/transfer.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <string_view>

#include "http/curl_errors.h"

namespace ossmount::http::internal {
namespace {

// Growable targets reserve the announced Content-Length up front, but never more than this
// on the word of a server alone.
constexpr uint64_t kMaxReserve = 64ull << 20;
// Receive buffer per easy handle (libcurl's default is 16 KiB): fewer callbacks per body.
constexpr long kReceiveBuffer = 64 * 1024;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool HasHeader(const HeaderList& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (Lower(key) == name) return true;
  }
  return false;
}

// Accumulates the first failing curl_easy_setopt and which option it was.
class OptionSetter {
 public:
  explicit OptionSetter(CURL* easy) : easy_(easy) {}
  template <typename T>
  void Set(CURLoption option, T value) {
    CURLcode code = curl_easy_setopt(easy_, option, value);
    if (code != CURLE_OK && first_error_ == CURLE_OK) {
      first_error_ = code;
      failed_option_ = option;
    }
  }
  CURLcode first_error() const { return first_error_; }
  // "CURLOPT_BUFFERSIZE", or the option's number when this libcurl cannot name it.
  std::string failed_option_name() const {
    const curl_easyoption* known = curl_easy_option_by_id(failed_option_);
    if (known != nullptr && known->name != nullptr) return std::string("CURLOPT_") + known->name;
    return "option " + std::to_string(static_cast<int>(failed_option_));
  }

 private:
  CURL* easy_;
  CURLcode first_error_ = CURLE_OK;
  CURLoption failed_option_ = CURLOPT_URL;
};

}  // namespace

Transfer::Transfer(Request request, ResponseHandler done)
    : request_(std::move(request)), done_(std::move(done)) {}

Transfer::~Transfer() { curl_slist_free_all(header_list_); }

double Transfer::Elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

Status Transfer::Configure(CURL* easy, const EngineOptions& options) {
  easy_ = easy;
  options_ = options;
  start_ = std::chrono::steady_clock::now();
  error_buffer_[0] = '\0';
  response_ = Response{};
  status_ = 0;
  content_length_.reset();
  body_bytes_ = 0;
  overflow_ = false;
  header_lines_ = 0;
  header_bytes_ = 0;
  headers_overflow_ = false;
  vouched_ = -1;
  differs_from_reported_ = false;
  upload_offset_ = 0;
  if (request_.target.growable != nullptr) request_.target.growable->clear();
  if (request_.resume_from > 0 &&
      (request_.target.data == nullptr || request_.resume_from > request_.target.capacity)) {
    return Status(ErrorCode::kInvalidArgument,
                  "a resumed transfer needs a fixed target holding the bytes it resumes after");
  }

  curl_slist_free_all(header_list_);
  header_list_ = nullptr;
  const std::string& method = request_.method;
  const bool sends_body = method == "PUT" || method == "POST" || !request_.body.empty();
  for (const auto& [name, value] : request_.headers) {
    // "Name:" would make libcurl drop the header; "Name;" sends it with an empty value.
    std::string line = value.empty() ? name + ";" : name + ": " + value;
    header_list_ = curl_slist_append(header_list_, line.c_str());
  }
  if (sends_body) {
    // No "Expect: 100-continue" round trip before the body.
    header_list_ = curl_slist_append(header_list_, "Expect:");
    // libcurl would add a form Content-Type to POST, which signatures do not cover.
    if (!HasHeader(request_.headers, "content-type")) {
      header_list_ = curl_slist_append(header_list_, "Content-Type:");
    }
  }
  if (!request_.headers.empty() || sends_body) {
    if (header_list_ == nullptr) {
      return Status(ErrorCode::kInternal, "out of memory building request headers");
    }
  }

  OptionSetter o(easy);
  o.Set(CURLOPT_URL, request_.url.c_str());
  // Object keys may hold "." and ".." segments ("a/../b" is a valid key): send the path as
  // built, never let curl squash dot segments into a different key.
  o.Set(CURLOPT_PATH_AS_IS, 1L);
  o.Set(CURLOPT_PRIVATE, static_cast<void*>(this));
  o.Set(CURLOPT_ERRORBUFFER, error_buffer_);
  o.Set(CURLOPT_NOSIGNAL, 1L);
  o.Set(CURLOPT_TCP_NODELAY, 1L);
  o.Set(CURLOPT_TCP_KEEPALIVE, 1L);
  o.Set(CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  o.Set(CURLOPT_BUFFERSIZE, kReceiveBuffer);
  o.Set(CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options.timeouts.connect.count()));
  if (options.timeouts.low_speed_time.count() > 0 && options.timeouts.low_speed_bytes > 0) {
    o.Set(CURLOPT_LOW_SPEED_LIMIT, options.timeouts.low_speed_bytes);
    o.Set(CURLOPT_LOW_SPEED_TIME, static_cast<long>(options.timeouts.low_speed_time.count()));
  }
  if (options.timeouts.request.count() > 0) {
    o.Set(CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeouts.request.count()));
  }
  o.Set(CURLOPT_SSL_VERIFYPEER, options.verify_tls ? 1L : 0L);
  o.Set(CURLOPT_SSL_VERIFYHOST, options.verify_tls ? 2L : 0L);
  if (!options.ca_bundle.empty()) o.Set(CURLOPT_CAINFO, options.ca_bundle.c_str());
  if (header_list_ != nullptr) o.Set(CURLOPT_HTTPHEADER, header_list_);
  o.Set(CURLOPT_HEADERFUNCTION, &Transfer::OnHeader);
  o.Set(CURLOPT_HEADERDATA, static_cast<void*>(this));
  o.Set(CURLOPT_WRITEFUNCTION, &Transfer::OnWrite);
  o.Set(CURLOPT_WRITEDATA, static_cast<void*>(this));
  o.Set(CURLOPT_XFERINFOFUNCTION, &Transfer::OnProgress);
  o.Set(CURLOPT_XFERINFODATA, static_cast<void*>(this));
  o.Set(CURLOPT_NOPROGRESS, 0L);

  const curl_off_t body_size = static_cast<curl_off_t>(request_.body.size());
  if (method == "GET") {
    o.Set(CURLOPT_HTTPGET, 1L);
  } else if (method == "HEAD") {
    o.Set(CURLOPT_NOBODY, 1L);
  } else if (method == "PUT") {
    o.Set(CURLOPT_UPLOAD, 1L);
    o.Set(CURLOPT_INFILESIZE_LARGE, body_size);
    o.Set(CURLOPT_READFUNCTION, &Transfer::OnRead);
    o.Set(CURLOPT_READDATA, static_cast<void*>(this));
    o.Set(CURLOPT_SEEKFUNCTION, &Transfer::OnSeek);
    o.Set(CURLOPT_SEEKDATA, static_cast<void*>(this));
  } else {
    if (method != "POST") o.Set(CURLOPT_CUSTOMREQUEST, method.c_str());
    if (method == "POST" || !request_.body.empty()) {
      // POSTFIELDS does not copy: request_.body stays alive as long as this Transfer.
      o.Set(CURLOPT_POSTFIELDSIZE_LARGE, body_size);
      o.Set(CURLOPT_POSTFIELDS, request_.body.data());
    }
  }
  if (o.first_error() != CURLE_OK) {
    return Status(ErrorCode::kInternal, "libcurl rejected the request option " +
                                            o.failed_option_name() + ": " +
                                            curl_easy_strerror(o.first_error()));
  }
  return Status::Ok();
}

size_t Transfer::OnHeader(char* data, size_t size, size_t n, void* self_ptr) {
  auto* self = static_cast<Transfer*>(self_ptr);
  const size_t len = size * n;
  std::string_view line = Trim(std::string_view(data, len));
  const bool status_line = line.starts_with("HTTP/");
  if (status_line) {
    self->header_lines_ = 0;
    self->header_bytes_ = 0;
  }
  // A server may send header lines without end: past the limits the transfer is aborted
  // before they take more memory.
  if (++self->header_lines_ > kMaxResponseHeaders ||
      (self->header_bytes_ += len) > kMaxResponseHeaderBytes) {
    self->headers_overflow_ = true;
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  if (status_line) {
    // A new response begins (after a 1xx, or the only one): forget earlier headers.
    self->response_.headers.clear();
    self->content_length_.reset();
    self->status_ = 0;
    size_t space = line.find(' ');
    if (space != std::string_view::npos) {
      std::string_view rest = line.substr(space + 1);
      long code = 0;
      std::from_chars(rest.data(), rest.data() + rest.size(), code);
      self->status_ = code;
    }
    return len;
  }
  size_t colon = line.find(':');
  if (line.empty() || colon == std::string_view::npos) return len;
  std::string name = Lower(Trim(line.substr(0, colon)));
  std::string_view value = Trim(line.substr(colon + 1));
  if (name == "content-length") {
    uint64_t length = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
    if (ec == std::errc() && ptr == value.data() + value.size()) {
      self->content_length_ = length;
      const GetTarget& target = self->request_.target;
      if (self->Is2xx() && !self->IsHead()) {
        if (target.growable != nullptr && target.growable_limit > 0 &&
            length > target.growable_limit) {
          // Known too large before any byte of it arrives: do not download it.
          self->overflow_ = true;
          self->response_.headers.emplace_back(std::move(name), std::string(value));
          return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
        } else if (target.growable != nullptr) {
          target.growable->reserve(static_cast<size_t>(std::min<uint64_t>(length, kMaxReserve)));
        } else if (target.data != nullptr &&
                   length > target.capacity - self->request_.resume_from) {
          // Known too large before any byte of it arrives: do not download it.
          self->overflow_ = true;
          self->response_.headers.emplace_back(std::move(name), std::string(value));
          return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
        }
      }
    }
  }
  self->response_.headers.emplace_back(std::move(name), std::string(value));
  return len;
}

size_t Transfer::OnWrite(char* data, size_t size, size_t n, void* self_ptr) {
  auto* self = static_cast<Transfer*>(self_ptr);
  const size_t len = size * n;
  if (!self->Is2xx()) {
    std::string& body = self->response_.error_body;
    size_t room = kMaxErrorBody - std::min(kMaxErrorBody, body.size());
    body.append(data, std::min(room, len));
    return len;  // keep reading so the connection can be reused
  }
  GetTarget& target = self->request_.target;
  if (target.growable != nullptr) {
    if (target.growable_limit > 0 && len > target.growable_limit - target.growable->size()) {
      self->overflow_ = true;
      return 0;  // over the limit (no or a lying Content-Length): abort the transfer
    }
    target.growable->insert(target.growable->end(), data, data + len);
  } else if (target.data != nullptr) {
    if (len > target.capacity - self->request_.resume_from - self->body_bytes_) {
      self->overflow_ = true;
      return 0;  // any value other than len aborts the transfer (CURLE_WRITE_ERROR)
    }
    if (!self->WriteFixed(data, len)) return 0;
    return len;
  }
  self->body_bytes_ += len;
  return len;
}

bool Transfer::WriteFixed(const char* data, size_t len) {
  // Where this chunk goes, from the target's start (after the bytes a resumed attempt keeps).
  const size_t position = request_.resume_from + body_bytes_;
  char* at = request_.target.data + position;
  BodyProgress* progress = request_.progress.get();
  if (progress == nullptr) {
    std::memcpy(at, data, len);
    body_bytes_ += len;
    return true;
  }
  if (vouched_ < 0) vouched_ = progress->vouch && progress->vouch(status_, response_.headers);
  // Only this thread writes `reported` while the transfer runs (attempts never overlap).
  const size_t reported = progress->reported.load(std::memory_order_acquire);
  size_t same = 0;  // leading bytes of this chunk that a reader may already be using
  if (position < reported) {
    same = std::min(len, reported - position);
    if (vouched_ == 0 || std::memcmp(at, data, same) != 0) {
      differs_from_reported_ = true;
      return false;
    }
  }
  std::memcpy(at + same, data + same, len - same);
  body_bytes_ += len;
  if (vouched_ == 1 && position + len > reported) {
    progress->reported.store(position + len, std::memory_order_release);
    progress->arrived(position + len);
  }
  return true;
}

size_t Transfer::OnRead(char* buffer, size_t size, size_t n, void* self_ptr) {
  auto* self = static_cast<Transfer*>(self_ptr);
  const SharedBytes& body = self->request_.body;
  size_t count = std::min(size * n, body.size() - self->upload_offset_);
  std::memcpy(buffer, body.data() + self->upload_offset_, count);
  self->upload_offset_ += count;
  return count;
}

int Transfer::OnSeek(void* self_ptr, curl_off_t offset, int origin) {
  auto* self = static_cast<Transfer*>(self_ptr);
  size_t size = self->request_.body.size();
  if (origin != SEEK_SET || offset < 0 || static_cast<size_t>(offset) > size) {
    return CURL_SEEKFUNC_CANTSEEK;
  }
  self->upload_offset_ = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

int Transfer::OnProgress(void* self_ptr, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  // Non-zero aborts the transfer with CURLE_ABORTED_BY_CALLBACK.
  return static_cast<Transfer*>(self_ptr)->cancel_requested() ? 1 : 0;
}

Response Transfer::Finish(CURLcode code) {
  Response r = std::move(response_);
  response_ = Response{};
  long info_status = 0;
  if (curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &info_status) == CURLE_OK &&
      info_status != 0) {
    status_ = info_status;
  }
  r.status = status_;
  r.body_bytes = Is2xx() ? body_bytes_ : 0;
  r.body_overflow = overflow_;
  r.seconds = Elapsed();

  const bool cut_short = Is2xx() && !IsHead() && content_length_ && body_bytes_ < *content_length_;
  if (code == CURLE_OK && !cut_short && !overflow_ && !differs_from_reported_ &&
      !headers_overflow_) {
    return r;  // the common case
  }

  std::string host, host_port;
  ParseHostPort(request_.url, &host, &host_port);
  if (headers_overflow_) {
    r.transport = Status(ErrorCode::kProtocol,
                         "the response from " + host_port + " has more than " +
                             std::to_string(kMaxResponseHeaders) + " header lines or " +
                             std::to_string(kMaxResponseHeaderBytes) +
                             " bytes of headers, far more than a valid reply; refused",
                         false);
  } else if (overflow_ && request_.target.growable != nullptr) {
    r.transport = Status(ErrorCode::kProtocol,
                         "response body from " + host_port + " is larger than the " +
                             std::to_string(request_.target.growable_limit) +
                             "-byte limit, far more than a valid reply; refused",
                         false);
  } else if (overflow_) {
    r.transport =
        Status(ErrorCode::kIntegrity,
               "response body from " + host_port + " is larger than the " +
                   std::to_string(request_.target.capacity - request_.resume_from) + "-byte buffer",
               false);
  } else if (differs_from_reported_) {
    r.transport = Status(ErrorCode::kIntegrity,
                         "a retried response from " + host_port +
                             " does not begin with the bytes an earlier attempt delivered",
                         true);
  } else if (code == CURLE_ABORTED_BY_CALLBACK && cancel_requested()) {
    r.transport = Status(ErrorCode::kCancelled, "request cancelled", false);
  } else if (cut_short && (code == CURLE_OK || code == CURLE_PARTIAL_FILE)) {
    r.transport = Status(ErrorCode::kIntegrity,
                         "response body from " + host_port + " was cut short: received " +
                             std::to_string(body_bytes_) + " of " +
                             std::to_string(*content_length_) + " bytes",
                         true);
  } else {
    TransportFacts facts;
    facts.host = host;
    facts.host_port = host_port;
    long os_errno = 0;
    if (curl_easy_getinfo(easy_, CURLINFO_OS_ERRNO, &os_errno) == CURLE_OK) {
      facts.os_errno = os_errno;
    }
    facts.curl_message = std::string(Trim(error_buffer_));
    facts.timeouts = options_.timeouts;
    facts.ca_bundle = options_.ca_bundle;
    r.transport = MapCurlError(code, facts);
  }
  return r;
}

Response Transfer::Fail(Status status) {
  Response r = std::move(response_);
  response_ = Response{};
  r.status = status_;
  r.body_bytes = Is2xx() ? body_bytes_ : 0;
  r.transport = std::move(status);
  if (start_ != std::chrono::steady_clock::time_point{}) r.seconds = Elapsed();
  return r;
}

}  // namespace ossmount::http::internal
