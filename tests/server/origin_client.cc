#include "origin_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>

#include "common/url.h"
#ifdef OSSMOUNT_TESTSERVER_HAVE_VERIFIERS
#include "auth/signer.h"
#endif

namespace ossmount::testserver {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {
constexpr std::chrono::seconds kDeadline{60};
// Beast reads at most the buffer's free capacity (at least 512 bytes) per system call, so an
// unreserved buffer reads a 115 KB body in over 200 reads.
constexpr size_t kReadBuffer = 64 * 1024;
}  // namespace

Result<std::pair<std::string, uint16_t>> ParseOriginUrl(const std::string& url) {
  static constexpr std::string_view kScheme = "http://";
  auto bad = [&] {
    return Status(ErrorCode::kInvalidArgument,
                  "--origin must be http://HOST:PORT, not '" + url + "'");
  };
  if (url.compare(0, kScheme.size(), kScheme) != 0) return bad();
  std::string rest = url.substr(kScheme.size());
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || rest.find('/') != std::string::npos) {
    return bad();
  }
  const std::string port_text = rest.substr(colon + 1);
  if (port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos) {
    return bad();
  }
  const unsigned long port = std::stoul(port_text);
  if (port == 0 || port > 65535) return bad();
  return std::make_pair(rest.substr(0, colon), static_cast<uint16_t>(port));
}

// One request and its answer. Owned by the shared_ptrs its async operations hold.
struct OriginClient::Exchange {
  std::string bucket, key;
  std::function<void(Result<OriginReply>)> done;
  std::unique_ptr<beast::tcp_stream> stream;
  bool reused = false;
  http::request<http::empty_body> request;
  beast::flat_buffer buffer;
  std::optional<http::response_parser<http::string_body>> parser;
};

OriginClient::OriginClient(asio::io_context& io, OriginSettings settings, tcp::endpoint endpoint,
                           std::string host_header)
    : io_(io),
      settings_(std::move(settings)),
      endpoint_(std::move(endpoint)),
      host_header_(std::move(host_header)) {}

OriginClient::~OriginClient() = default;

Result<std::unique_ptr<OriginClient>> OriginClient::Create(asio::io_context& io,
                                                           OriginSettings settings) {
  auto parsed = ParseOriginUrl(settings.url);
  if (!parsed.ok()) return parsed.status();
  const auto& [host, port] = parsed.value();
#ifndef OSSMOUNT_TESTSERVER_HAVE_VERIFIERS
  if (!settings.access_key_id.empty()) {
    return Status(ErrorCode::kNotSupported,
                  "signed origin requests need src/auth, which this build lacks");
  }
#endif
  tcp::resolver resolver(io);
  boost::system::error_code ec;
  auto results = resolver.resolve(host, std::to_string(port), ec);
  if (ec || results.empty()) {
    return Status(ErrorCode::kInvalidArgument,
                  "cannot resolve the origin host '" + host + "': " + ec.message());
  }
  std::string host_header = host + ":" + std::to_string(port);
  return std::unique_ptr<OriginClient>(
      new OriginClient(io, std::move(settings), results.begin()->endpoint(), host_header));
}

std::unique_ptr<beast::tcp_stream> OriginClient::TakeIdle() {
  std::lock_guard lock(mu_);
  if (idle_.empty()) return nullptr;
  auto s = std::move(idle_.back());
  idle_.pop_back();
  return s;
}

void OriginClient::GiveBack(std::unique_ptr<beast::tcp_stream> stream) {
  std::lock_guard lock(mu_);
  idle_.push_back(std::move(stream));
}

void OriginClient::Fetch(const std::string& bucket, const std::string& key,
                         std::function<void(Result<OriginReply>)> done) {
  auto x = std::make_shared<Exchange>();
  x->bucket = bucket;
  x->key = key;
  x->done = std::move(done);
  // Path style: the origin is addressed by IP, so virtual-hosted names would not resolve.
  x->request.method(http::verb::get);
  x->request.target("/" + PercentEncode(bucket) + "/" + PercentEncode(key, /*keep_slash=*/true));
  x->request.version(11);
  x->request.set(http::field::host, host_header_);
  x->request.set(http::field::user_agent, "ossmount-testserver-accelerator");
#ifdef OSSMOUNT_TESTSERVER_HAVE_VERIFIERS
  if (!settings_.access_key_id.empty()) {
    auth::SignableRequest signable;
    signable.method = "GET";
    signable.bucket = bucket;
    signable.key = key;
    signable.path = "/" + bucket + "/" + key;
    signable.headers = {{"Host", host_header_}};
    auth::Credentials creds;
    creds.access_key_id = settings_.access_key_id;
    creds.access_key_secret = settings_.access_key_secret;
    static const auto signer = auth::MakeOssV1Signer();
    signer->Sign(signable, creds, std::chrono::system_clock::now());
    for (const auto& [name, value] : signable.headers) {
      if (!beast::iequals(name, "Host")) x->request.set(name, value);
    }
  }
#endif
  Start(std::move(x), true);
}

void OriginClient::Start(std::shared_ptr<Exchange> x, bool allow_reuse) {
  x->stream = allow_reuse ? TakeIdle() : nullptr;
  x->reused = x->stream != nullptr;
  x->buffer.clear();
  x->buffer.reserve(kReadBuffer);
  x->parser.emplace();
  x->parser->body_limit(settings_.max_body_bytes);
  auto fail = [this](const std::shared_ptr<Exchange>& x, const beast::error_code& ec,
                     bool answered) {
    if (x->reused && !answered) {
      // The origin closed the idle connection: once more on a new one.
      Start(x, false);
      return;
    }
    x->done(Status(ec == beast::error::timeout ? ErrorCode::kTimeout : ErrorCode::kNetwork,
                   "origin request failed: " + ec.message()));
  };
  auto send = [this, fail](std::shared_ptr<Exchange> x) {
    x->stream->expires_after(kDeadline);
    http::async_write(*x->stream, x->request, [this, x, fail](beast::error_code ec, size_t) {
      if (ec) return fail(x, ec, false);
      x->stream->expires_after(kDeadline);
      http::async_read(*x->stream, x->buffer, *x->parser,
                       [this, x, fail](beast::error_code ec2, size_t) {
                         if (ec2) return fail(x, ec2, x->parser->is_header_done());
                         auto response = x->parser->release();
                         OriginReply reply;
                         reply.status = response.result_int();
                         for (const auto& field : response) {
                           reply.headers.emplace_back(std::string(field.name_string()),
                                                      std::string(field.value()));
                         }
                         reply.body = std::move(response.body());
                         if (response.keep_alive()) GiveBack(std::move(x->stream));
                         x->done(std::move(reply));
                       });
    });
  };
  if (x->stream) {
    send(std::move(x));
    return;
  }
  x->stream = std::make_unique<beast::tcp_stream>(asio::make_strand(io_));
  x->stream->expires_after(kDeadline);
  x->stream->async_connect(endpoint_, [x, send, fail](beast::error_code ec) {
    if (ec) return fail(x, ec, true);
    beast::error_code ignored;
    x->stream->socket().set_option(tcp::no_delay(true), ignored);
    send(x);
  });
}

}  // namespace ossmount::testserver
