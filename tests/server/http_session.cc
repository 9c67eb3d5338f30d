#include "http_session.h"

#include "api_util.h"
#include "malformed.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <iostream>

#include "common/crc64.h"

namespace ossmount::testserver {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;

namespace {
constexpr uint64_t kFileChunk = 256 * 1024;
// How long an unanswered Complete holds its connection (FaultSettings::unanswered_complete).
constexpr std::chrono::seconds kUnansweredHold{120};
// Direct body reads ask for up to this much at once (a read returns what has arrived).
constexpr uint64_t kBodyRead = 2 * 1024 * 1024;
// Body bytes are handed to the digests in pieces of at least this much (and the rest at the
// end), and digested in slices of kDigestSlice (MD5 then CRC-64 while the slice is in cache).
constexpr uint64_t kDigestPiece = 1024 * 1024;
constexpr uint64_t kDigestSlice = 128 * 1024;
// The parser's read buffer (chunked bodies): Beast reads at most the free capacity (at least
// 512 bytes) at a time, so an unreserved buffer reads a body 512 bytes per system call.
constexpr size_t kParserBuffer = 64 * 1024;

// The request target for the access log, with signature and token query values replaced:
// presigned URLs carry them, and they never reach a log line.
std::string RedactTarget(std::string_view target) {
  size_t q = target.find('?');
  if (q == std::string_view::npos) return std::string(target);
  std::string out(target.substr(0, q + 1));
  std::string_view query = target.substr(q + 1);
  size_t start = 0;
  while (start <= query.size()) {
    size_t amp = query.find('&', start);
    if (amp == std::string_view::npos) amp = query.size();
    std::string_view part = query.substr(start, amp - start);
    std::string name(part.substr(0, part.find('=')));
    std::string lower = name;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (start > 0) out += '&';
    if (lower.find("signature") != std::string::npos ||
        (lower.find("token") != std::string::npos && lower != "continuation-token") ||
        lower.find("credential") != std::string::npos) {
      out += name + "=REDACTED";
    } else {
      out += part;
    }
    start = amp + 1;
  }
  return out;
}
}  // namespace

HttpSession::HttpSession(asio::ip::tcp::socket socket, ServerContext& ctx, asio::ssl::context* tls)
    : stream_(std::move(socket), tls), timer_(stream_.get_executor()), ctx_(ctx) {
  // Digests run beside the body's reading only when the pool has another thread for them.
  if (ctx_.io && ctx_.options.threads > 1) hash_strand_.emplace(asio::make_strand(*ctx_.io));
}

HttpSession::~HttpSession() {
  CloseFile();
  if (md5_) EVP_MD_CTX_free(md5_);
}

void HttpSession::Start() {
  ctx_.stats.CountConnection();
  error_code ec;
  stream_.tcp().socket().set_option(asio::ip::tcp::no_delay(true), ec);
  if (stream_.is_tls()) {
    // A client that fails verification aborts here; the handshake has its own deadline.
    stream_.tcp().expires_after(std::chrono::seconds(ctx_.options.idle_timeout_s));
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      self->stream_.async_handshake([self](error_code ec2) {
        if (ec2) return self->Reset();
        self->DoReadHeader();
      });
    });
    return;
  }
  asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->DoReadHeader(); });
}

void HttpSession::DoReadHeader() {
  parser_.emplace();
  parser_->header_limit(64 * 1024);
  parser_->body_limit(ctx_.options.max_body_mb << 20);
  stream_.tcp().expires_after(std::chrono::seconds(ctx_.options.idle_timeout_s));
  http::async_read_header(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](error_code ec, size_t) { self->OnReadHeader(ec); });
}

void HttpSession::OnReadHeader(error_code ec) {
  if (ec) {
    CloseGracefully();
    return;
  }
  PlanRequest();
  auto& req = parser_->get();
  if (parser_->is_done()) {
    if (plan_.body_cut == FaultPlan::BodyCut::kReset) return CutBody();
    Dispatch();
    return;
  }
  auto expect = req.find(http::field::expect);
  if (expect != req.end() && beast::iequals(expect->value(), "100-continue")) {
    static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    asio::async_write(stream_, asio::buffer(kContinue),
                      [self = shared_from_this()](error_code ec2, size_t) {
                        if (ec2) return self->CloseGracefully();
                        self->DoReadBody();
                      });
    return;
  }
  DoReadBody();
}

void HttpSession::PlanRequest() {
  const auto& req = parser_->get();
  auto classified =
      ClassifyRequest(req, [this](const std::string& b) { return ctx_.store.BucketExists(b); });
  classify_status_ = classified.status();
  if (classified.ok()) {
    info_ = std::move(classified.value());
  } else {
    info_ = RequestInfo();
    info_.method = std::string(req.method_string());
    info_.op = Op::kUnsupported;
  }
  info_.request_id = NewRequestId();
  // Counted when the head arrives: a request cut short in its body was still seen.
  ctx_.stats.Count(StatOpFor(info_.op));
  if (info_.op == Op::kGetObject && req.find(http::field::range) != req.end()) {
    ctx_.stats.Count(StatOp::kGetRange);
  }
  if (info_.op == Op::kGetObject && classified.ok()) {
    ctx_.object_gets.Count(info_.bucket, info_.key);
  }
  plan_ = FaultPlan();
  if (info_.op != Op::kControl) {
    WriteTarget write{info_.key, info_.op == Op::kCompleteMultipart,
                      info_.op == Op::kCopyObject || info_.op == Op::kUploadPartCopy};
    plan_ = ctx_.faults.Plan(FaultOpFor(info_.op), IsWriteOp(info_.op) ? &write : nullptr);
  }
  body_seen_ = 0;
  linger_after_response_ = false;
  const uint64_t length = parser_->content_length().value_or(0);
  if (plan_.body_cut == FaultPlan::BodyCut::kTruncate && length == 0) {
    plan_.body_cut = FaultPlan::BodyCut::kNone;  // nothing to cut short
  }
  body_cut_at_ =
      length == 0
          ? 0
          : std::min<uint64_t>(length - 1, static_cast<uint64_t>(plan_.body_cut_fraction * length));
  piecewise_body_ = plan_.body_cut != FaultPlan::BodyCut::kNone || plan_.bytes_per_second > 0;
  pace_in_next_ = Clock::now();
}

void HttpSession::DoReadBody() {
  if (piecewise_body_) {
    ContinueBody();
    return;
  }
  if (parser_->content_length() && !parser_->chunked()) {
    StartDirectBody();
    return;
  }
  if (buffer_.capacity() < kParserBuffer) buffer_.reserve(kParserBuffer);
  stream_.tcp().expires_after(std::chrono::seconds(ctx_.options.idle_timeout_s));
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](error_code ec, size_t) { self->OnReadBody(ec); });
}

void HttpSession::OnReadBody(error_code ec) {
  if (ec) {
    CloseGracefully();
    return;
  }
  Dispatch();
}

void HttpSession::StartDirectBody() {
  direct_body_ = true;
  body_len_ = *parser_->content_length();
  req_ = parser_->release();  // the header; the body holds what the parser took (normally none)
  std::string& body = req_.body();
  body_got_ = body.size();
  body_hashed_ = 0;
  body.reserve(body_len_);
  // Body bytes that arrived with the header (anything after the body is the next request).
  const uint64_t buffered = std::min<uint64_t>(buffer_.size(), body_len_ - body_got_);
  if (buffered > 0) {
    body.resize(body_got_ + buffered);
    asio::buffer_copy(asio::buffer(body.data() + body_got_, buffered), buffer_.data());
    buffer_.consume(buffered);
    body_got_ += buffered;
  }
  body_base_ = body.data();
  digest_body_ = classify_status_.ok() &&
                 (info_.op == Op::kPutObject || info_.op == Op::kUploadPart ||
                  info_.op == Op::kAppendObject) &&
                 body_len_ > 0;
  if (digest_body_) {
    if (!md5_) md5_ = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md5_, EVP_md5(), nullptr);
    crc_ = 0;
  }
  ReadDirectBody();
}

void HttpSession::ReadDirectBody() {
  HashReady(false);
  if (body_got_ >= body_len_) {
    FinishDirectBody();
    return;
  }
  std::string& body = req_.body();
  const uint64_t end = std::min<uint64_t>(body_len_, body_got_ + kBodyRead);
  // Grows only (each byte is zeroed once); never beyond the reserve, so body_base_ stays.
  if (body.size() < end) body.resize(end);
  stream_.tcp().expires_after(std::chrono::seconds(ctx_.options.idle_timeout_s));
  stream_.async_read_some(
      asio::buffer(body_base_ + body_got_, end - body_got_),
      [self = shared_from_this()](error_code ec, size_t n) { self->OnReadDirectBody(ec, n); });
}

void HttpSession::OnReadDirectBody(error_code ec, size_t n) {
  if (ec) {
    CloseGracefully();
    return;
  }
  body_got_ += n;
  ReadDirectBody();
}

void HttpSession::HashReady(bool all) {
  if (!digest_body_) return;
  const uint64_t ready = body_got_ - body_hashed_;
  if (ready == 0 || (ready < kDigestPiece && !all)) return;
  const char* data = body_base_ + body_hashed_;
  body_hashed_ = body_got_;
  if (!hash_strand_) {
    HashPiece(data, ready);
    return;
  }
  asio::post(*hash_strand_,
             [self = shared_from_this(), data, ready] { self->HashPiece(data, ready); });
}

void HttpSession::HashPiece(const char* data, size_t size) {
  for (size_t done = 0; done < size; done += kDigestSlice) {
    const size_t n = std::min<size_t>(kDigestSlice, size - done);
    EVP_DigestUpdate(md5_, data + done, n);
    crc_ = Crc64(crc_, data + done, n);
  }
}

void HttpSession::FinishDirectBody() {
  // The body string is complete; its size is exactly the Content-Length.
  if (!digest_body_) {
    Dispatch();
    return;
  }
  HashReady(true);
  auto finish = [this] {
    Md5Digest md5{};
    unsigned int len = 0;
    EVP_DigestFinal_ex(md5_, md5.data(), &len);
    info_.body_digests.md5 = md5;
    info_.body_digests.crc64 = crc_;
  };
  if (!hash_strand_) {
    finish();
    Dispatch();
    return;
  }
  asio::post(*hash_strand_, [self = shared_from_this(), finish] {
    finish();
    asio::post(self->stream_.get_executor(), [self] { self->Dispatch(); });
  });
}

void HttpSession::DoReadBodySome() {
  // Paced and fault-cut bodies too: without room, Beast reads 512 bytes per system call and
  // a paced upload then pays a timer per 512 bytes (one stream managed about 10 MB/s).
  if (buffer_.capacity() < kParserBuffer) buffer_.reserve(kParserBuffer);
  stream_.tcp().expires_after(std::chrono::seconds(ctx_.options.idle_timeout_s));
  http::async_read_some(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](error_code ec, size_t) { self->OnReadBodySome(ec); });
}

void HttpSession::OnReadBodySome(error_code ec) {
  if (ec) {
    CloseGracefully();
    return;
  }
  const uint64_t got = parser_->get().body().size();
  if (plan_.bytes_per_second > 0 && got > body_seen_) {
    // Reads come in pieces of up to 64 KiB; each is paid for before the next one (or the
    // dispatch), so the body arrives at the planned rate on average.
    auto cost = std::chrono::duration<double>(static_cast<double>(got - body_seen_) /
                                              plan_.bytes_per_second);
    pace_in_next_ =
        std::max(pace_in_next_, Clock::now()) + std::chrono::duration_cast<Clock::duration>(cost);
  }
  body_seen_ = got;
  auto now = Clock::now();
  if (pace_in_next_ > now) {
    WaitThen(pace_in_next_ - now, &HttpSession::ContinueBody);
    return;
  }
  ContinueBody();
}

void HttpSession::ContinueBody() {
  if (plan_.body_cut != FaultPlan::BodyCut::kNone &&
      (body_seen_ >= body_cut_at_ || parser_->is_done())) {
    CutBody();
    return;
  }
  if (parser_->is_done()) {
    Dispatch();
    return;
  }
  DoReadBodySome();
}

void HttpSession::CutBody() {
  ctx_.stats.AddBytesReceived(body_seen_);
  const bool reset = plan_.body_cut == FaultPlan::BodyCut::kReset;
  if (ctx_.options.access_log) {
    log_line_ = info_.method + " " + RedactTarget(parser_->get().target()) +
                (reset ? " reset" : " 400") + " after " + std::to_string(body_seen_) +
                " body bytes";
    if (reset) std::fprintf(stderr, "%s\n", log_line_.c_str());
  }
  if (reset) {
    ctx_.stats.CountFault(StatFault::kBodyReset);
    Reset();
    return;
  }
  // What S3 answers when a body ends before its Content-Length; OSS uses the same code.
  ctx_.stats.CountFault(StatFault::kBodyTruncate);
  resp_ = ObjectApi::Error(info_, 400, "IncompleteBody",
                           "You did not provide the number of bytes specified by the "
                           "Content-Length HTTP header.");
  resp_.close = true;
  ObjectApi::AddCommonHeaders(info_, resp_);
  ctx_.stats.CountStatus(resp_.status);
  plan_.delay = {};
  plan_.cut = FaultPlan::Cut::kNone;
  linger_after_response_ = true;
  BeginResponse();
}

void HttpSession::Dispatch() {
  HttpRequest req = direct_body_ ? std::move(req_) : parser_->release();
  direct_body_ = false;
  digest_body_ = false;
  body_base_ = nullptr;
  keep_alive_ = req.keep_alive();
  ctx_.stats.AddBytesReceived(req.body().size());
  if (info_.op == Op::kControl || !classify_status_.ok()) {
    Respond(req, std::nullopt, nullptr);
    return;
  }
  std::optional<AuthFailure> denied = ctx_.auth.Check(info_, req);
  const bool object_read = info_.op == Op::kGetObject || info_.op == Op::kHeadObject;
  if (!ctx_.accelerator || denied || plan_.error || !object_read) {
    Respond(req, denied, nullptr);
    return;
  }
  // Accelerator mode: the object comes from memory or from the origin, maybe after a wait on
  // the origin (on another thread); the answer is built back on this session's strand.
  auto held = std::make_shared<HttpRequest>(std::move(req));
  ctx_.accelerator->Get(info_.bucket, info_.key, HeaderValue(*held, "If-Match"),
                        [self = shared_from_this(), held](Result<ObjectPtr> got) {
                          auto result = std::make_shared<Result<ObjectPtr>>(std::move(got));
                          asio::dispatch(self->stream_.get_executor(), [self, held, result] {
                            self->Respond(*held, std::nullopt, result.get());
                          });
                        });
}

void HttpSession::Respond(HttpRequest& req, const std::optional<AuthFailure>& denied,
                          const Result<ObjectPtr>* accelerated) {
  RequestInfo& info = info_;
  if (info.op == Op::kControl) {
    resp_ = HandleControl(info, ctx_);
  } else {
    if (!classify_status_.ok()) {
      resp_ = ObjectApi::Error(info, 400, "InvalidURI", classify_status_.message());
    } else if (denied) {
      ctx_.stats.CountAuthFailure();
      resp_ = ObjectApi::Error(info, denied->status, denied->code, denied->message);
    } else if (plan_.error) {
      ctx_.stats.CountFault(plan_.write_error ? StatFault::kWriteError : StatFault::kError);
      resp_ = ObjectApi::Error(info, plan_.error_kind.status, plan_.error_kind.code,
                               plan_.error_kind.message);
      if (plan_.retry_after_s > 0) resp_.Add("Retry-After", std::to_string(plan_.retry_after_s));
    } else if (ctx_.accelerator && accelerated == nullptr) {
      // Listings, writes and bucket operations belong to the origin, as on the real
      // accelerator: a client that sends them here is misconfigured, and says so loudly.
      resp_ = ObjectApi::Error(info, 501, "NotImplemented",
                               "This accelerator serves GetObject and HeadObject only; send "
                               "other requests to the origin endpoint.");
    } else if (accelerated != nullptr && !accelerated->ok()) {
      // The origin failed: a server error the client retries, as for an unreachable backend.
      resp_ = ObjectApi::Error(info, 503, "ServiceUnavailable",
                               "The accelerator could not fetch the object from its origin: " +
                                   accelerated->status().message());
    } else if (plan_.unanswered != FaultPlan::Unanswered::kNo) {
      // The client's request is in, and no answer ever comes: it cannot know whether the
      // Complete was applied. The connection stays silent until the client closes it (or the
      // hold ends), as when a server hangs with a request in its socket.
      ctx_.stats.CountFault(StatFault::kUnansweredComplete);
      if (plan_.unanswered == FaultPlan::Unanswered::kApplied) ctx_.api.Handle(info, req);
      if (ctx_.options.access_log) {
        std::fprintf(
            stderr, "%s %s (%s, never answered)\n", info.method.c_str(),
            RedactTarget(req.target()).c_str(),
            plan_.unanswered == FaultPlan::Unanswered::kApplied ? "applied" : "not applied");
      }
      // Until the client gives up and closes (or sends anything more), or the hold ends.
      stream_.tcp().socket().async_wait(
          asio::socket_base::wait_read,
          [self = shared_from_this()](error_code) { self->timer_.cancel(); });
      WaitThen(kUnansweredHold, &HttpSession::Reset);
      return;
    } else {
      if (accelerated == nullptr) {
        resp_ = ctx_.api.Handle(info, req);
      } else if (!accelerated->value()) {
        resp_ =
            ObjectApi::Error(info, 404, "NoSuchKey", "The specified key does not exist.", info.key);
      } else {
        resp_ = ctx_.api.ServeObject(info, req, accelerated->value(), info.op == Op::kHeadObject);
      }
      if (plan_.lose_answer && resp_.status == 200) {
        // Done, but the answer never arrives: a Complete's retry meets NoSuchUpload, a
        // copy's makes the copy again.
        ctx_.stats.CountFault(info.op == Op::kCompleteMultipart ? StatFault::kLostComplete
                                                                : StatFault::kLostCopy);
        if (ctx_.options.access_log) {
          std::fprintf(stderr, "%s %s 200 (answer dropped)\n", info.method.c_str(),
                       RedactTarget(req.target()).c_str());
        }
        Reset();
        return;
      }
      // --corrupt-key: a range damaged inside, consistent with its length and headers.
      if (resp_.status == 206 && !plan_.corrupt_key.empty() &&
          info.key.find(plan_.corrupt_key) != std::string::npos) {
        plan_.corrupt = true;
        plan_.corrupt_fraction = 0.5;
      }
      if (!plan_.malformed.empty() && resp_.status < 300 &&
          ApplyMalformed(plan_.malformed, resp_)) {
        ctx_.stats.CountFault(StatFault::kMalformed);
      }
    }
    ObjectApi::AddCommonHeaders(info, resp_);
  }
  if (info.op != Op::kControl) ctx_.stats.CountStatus(resp_.status);
  if (ctx_.options.access_log) {
    log_line_ = info.method + " " + RedactTarget(req.target()) + " " + std::to_string(resp_.status);
  }
  if (plan_.delay.count() > 0) {
    ctx_.stats.CountFault(StatFault::kDelayed);
    WaitThen(plan_.delay, &HttpSession::BeginResponse);
  } else {
    BeginResponse();
  }
}

void HttpSession::WaitThen(Clock::duration d, void (HttpSession::*next)()) {
  timer_.expires_after(d);
  timer_.async_wait([self = shared_from_this(), next](error_code ec) {
    if (ec) return self->CloseGracefully();
    ((*self).*next)();
  });
}

void HttpSession::BeginResponse() {
  if (ctx_.options.access_log) std::fprintf(stderr, "%s\n", log_line_.c_str());
  const bool keep = keep_alive_ && !resp_.close;
  head_ = SerializeHead(resp_, keep);
  head_sent_ = false;
  sent_ = 0;
  total_ = resp_.omit_body ? 0 : resp_.body_length;
  limit_ = total_;
  stall_pending_ = corrupt_pending_ = false;
  using Cut = FaultPlan::Cut;
  // Data faults only touch successful responses; an error response is already the fault.
  const bool data_faults = resp_.status < 300;
  if (data_faults &&
      (plan_.cut == Cut::kResetBeforeHeaders || (plan_.cut == Cut::kResetInBody && total_ == 0))) {
    ctx_.stats.CountFault(StatFault::kReset);
    Reset();
    return;
  }
  if (data_faults && total_ > 0) {
    if (plan_.cut == Cut::kResetInBody || plan_.cut == Cut::kTruncate) {
      limit_ = std::min<uint64_t>(total_ - 1, static_cast<uint64_t>(plan_.cut_fraction * total_));
      ctx_.stats.CountFault(plan_.cut == Cut::kResetInBody ? StatFault::kReset
                                                           : StatFault::kTruncate);
    }
    if (plan_.stall) {
      stall_pending_ = true;
      stall_at_ = static_cast<uint64_t>(plan_.stall_fraction * limit_);
      ctx_.stats.CountFault(StatFault::kStall);
    }
    if (plan_.corrupt) {
      corrupt_at_ =
          std::min<uint64_t>(total_ - 1, static_cast<uint64_t>(plan_.corrupt_fraction * total_));
      if (corrupt_at_ < limit_) {
        corrupt_pending_ = true;
        ctx_.stats.CountFault(StatFault::kCorrupt);
      }
    }
  }
  if (limit_ > 0 && !resp_.body) {
    fd_ = ::open(resp_.file_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      Reset();  // the file vanished after the head was decided: nothing honest to send
      return;
    }
    struct stat st {};
    const bool same_file =
        ::fstat(fd_, &st) == 0 && static_cast<uint64_t>(st.st_ino) == resp_.file_ino &&
        static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec ==
            resp_.file_mtime_ns &&
        static_cast<uint64_t>(st.st_size) == resp_.file_size;
    if (resp_.file_ino != 0 && !same_file) {
      Reset();  // replaced after the head was decided: its bytes belong to another ETag
      return;
    }
    file_buf_.resize(kFileChunk);
  }
  WriteNext();
}

void HttpSession::WriteNext() {
  if (head_sent_ && sent_ >= limit_) {
    FinishResponse();
    return;
  }
  if (stall_pending_ && head_sent_ && sent_ >= stall_at_) {
    stall_pending_ = false;
    WaitThen(plan_.stall_for, &HttpSession::WriteNext);
    return;
  }
  uint64_t end = limit_;
  if (stall_pending_) end = std::min(end, stall_at_);
  if (plan_.bytes_per_second > 0 && end > sent_) {
    auto now = Clock::now();
    if (head_sent_ && pace_next_ > now) {
      WaitThen(pace_next_ - now, &HttpSession::WriteNext);
      return;
    }
    // About 10 ms worth of bytes per write.
    uint64_t chunk =
        std::clamp<uint64_t>(static_cast<uint64_t>(plan_.bytes_per_second / 100), 1, kFileChunk);
    end = std::min(end, sent_ + chunk);
    auto cost =
        std::chrono::duration<double>(static_cast<double>(end - sent_) / plan_.bytes_per_second);
    pace_next_ = std::max(pace_next_, now) + std::chrono::duration_cast<Clock::duration>(cost);
  }
  std::vector<asio::const_buffer> buffers;
  if (!head_sent_) buffers.push_back(asio::buffer(head_));
  if (end > sent_) {
    const char* data = nullptr;
    uint64_t len = 0;
    if (resp_.body) {
      data = resp_.body->data() + resp_.body_offset + sent_;
      len = end - sent_;
    } else {
      len = std::min<uint64_t>(end - sent_, kFileChunk);
      end = sent_ + len;
      uint64_t got = 0;
      while (got < len) {
        ssize_t n = ::pread(fd_, file_buf_.data() + got, len - got,
                            static_cast<off_t>(resp_.body_offset + sent_ + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<uint64_t>(n);
      }
      if (got != len) {  // the file shrank under us: cut the connection, do not send garbage
        Reset();
        return;
      }
      data = file_buf_.data();
    }
    if (corrupt_pending_ && corrupt_at_ >= sent_ && corrupt_at_ < end) {
      corrupt_pending_ = false;
      if (resp_.body) {
        scratch_.assign(data, len);
        data = scratch_.data();
      }
      char* p = const_cast<char*>(data) + (corrupt_at_ - sent_);  // our own copy
      *p = static_cast<char>(*p ^ 0xFF);
    }
    buffers.push_back(asio::buffer(data, len));
  }
  stream_.tcp().expires_after(std::chrono::seconds(ctx_.options.write_timeout_s));
  asio::async_write(stream_, buffers, [self = shared_from_this(), end](error_code ec, size_t) {
    self->OnWrite(ec, end);
  });
}

void HttpSession::OnWrite(error_code ec, uint64_t new_sent) {
  if (ec) {
    CloseFile();
    error_code ignored;
    stream_.tcp().socket().close(ignored);
    return;
  }
  ctx_.stats.AddBytesSent(new_sent - sent_);
  sent_ = new_sent;
  head_sent_ = true;
  WriteNext();
}

void HttpSession::FinishResponse() {
  CloseFile();
  scratch_.clear();
  if (limit_ < total_) {
    if (plan_.cut == FaultPlan::Cut::kResetInBody) {
      Reset();
    } else {
      CloseGracefully();
    }
    return;
  }
  if (linger_after_response_) {
    LingeringClose();
    return;
  }
  if (!keep_alive_ || resp_.close) {
    CloseGracefully();
    return;
  }
  resp_ = Response();
  DoReadHeader();
}

void HttpSession::CloseFile() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void HttpSession::Reset() {
  CloseFile();
  error_code ec;
  stream_.tcp().socket().set_option(asio::socket_base::linger(true, 0), ec);
  stream_.tcp().socket().close(ec);
}

void HttpSession::LingeringClose() {
  CloseFile();
  error_code ec;
  stream_.tcp().socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  scratch_.resize(64 * 1024);
  stream_.tcp().expires_after(std::chrono::seconds(5));
  stream_.async_read_some(asio::buffer(scratch_),
                          [self = shared_from_this()](error_code ec2, size_t) {
                            if (ec2) {
                              error_code ignored;
                              self->stream_.tcp().socket().close(ignored);
                              return;
                            }
                            self->LingeringClose();
                          });
}

void HttpSession::CloseGracefully() {
  CloseFile();
  error_code ec;
  stream_.tcp().socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  stream_.tcp().socket().close(ec);
}

}  // namespace ossmount::testserver
