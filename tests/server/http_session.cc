#include "http_session.h"

#include "malformed.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <iostream>

namespace ossmount::testserver {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;

namespace {
constexpr uint64_t kFileChunk = 256 * 1024;

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
    : stream_(std::move(socket), tls), timer_(stream_.get_executor()), ctx_(ctx) {}

HttpSession::~HttpSession() { CloseFile(); }

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
  auto& req = parser_->get();
  if (parser_->is_done()) {
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

void HttpSession::DoReadBody() {
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

void HttpSession::Dispatch() {
  HttpRequest req = parser_->release();
  keep_alive_ = req.keep_alive();
  plan_ = FaultPlan();
  ctx_.stats.AddBytesReceived(req.body().size());
  auto classified =
      ClassifyRequest(req, [this](const std::string& b) { return ctx_.store.BucketExists(b); });
  RequestInfo info;
  if (classified.ok()) {
    info = std::move(classified.value());
  } else {
    info.method = std::string(req.method_string());
    info.op = Op::kUnsupported;
  }
  info.request_id = NewRequestId();
  ctx_.stats.Count(StatOpFor(info.op));
  if (info.op == Op::kGetObject && req.find(http::field::range) != req.end()) {
    ctx_.stats.Count(StatOp::kGetRange);
  }

  if (info.op == Op::kControl) {
    resp_ = HandleControl(info, ctx_);
  } else {
    plan_ = ctx_.faults.Plan(FaultOpFor(info.op));
    std::optional<AuthFailure> denied;
    if (!classified.ok()) {
      resp_ = ObjectApi::Error(info, 400, "InvalidURI", classified.status().message());
    } else if ((denied = ctx_.auth.Check(info, req))) {
      ctx_.stats.CountAuthFailure();
      resp_ = ObjectApi::Error(info, denied->status, denied->code, denied->message);
    } else if (plan_.error) {
      ctx_.stats.CountFault(StatFault::kError);
      resp_ = ObjectApi::Error(info, plan_.error_kind.status, plan_.error_kind.code,
                               plan_.error_kind.message);
      if (plan_.retry_after_s > 0) resp_.Add("Retry-After", std::to_string(plan_.retry_after_s));
    } else {
      resp_ = ctx_.api.Handle(info, req);
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

void HttpSession::CloseGracefully() {
  CloseFile();
  error_code ec;
  stream_.tcp().socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  stream_.tcp().socket().close(ec);
}

}  // namespace ossmount::testserver
