#include "http_test_client.h"

#include <strings.h>

#include <boost/beast/http.hpp>
#include <limits>

namespace ossmount::testserver {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;

std::string HttpResult::Header(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (::strcasecmp(k.c_str(), name.c_str()) == 0) return v;
  }
  return "";
}

bool HttpResult::HasHeader(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (::strcasecmp(k.c_str(), name.c_str()) == 0) return true;
  }
  return false;
}

HttpTestClient::HttpTestClient(uint16_t port, std::string host)
    : port_(port), host_(std::move(host)) {}

HttpTestClient::~HttpTestClient() = default;

bool HttpTestClient::EnsureConnected(std::string& error) {
  if (stream_ && stream_->socket().is_open()) return true;
  stream_.emplace(ioc_);
  buffer_.clear();
  beast::error_code ec;
  stream_->expires_after(std::chrono::seconds(30));
  stream_->connect(asio::ip::tcp::endpoint(asio::ip::make_address(host_), port_), ec);
  if (ec) {
    error = "connect: " + ec.message();
    stream_.reset();
    return false;
  }
  ++connects_;
  return true;
}

HttpResult HttpTestClient::Request(const std::string& method, const std::string& target,
                                   const std::vector<std::pair<std::string, std::string>>& headers,
                                   const std::string& body) {
  HttpResult result;
  if (!EnsureConnected(result.error)) return result;
  http::request<http::string_body> req;
  req.method_string(method);
  req.target(target);
  req.version(11);
  bool has_host = false;
  for (const auto& [k, v] : headers) {
    if (::strcasecmp(k.c_str(), "host") == 0) has_host = true;
    req.insert(k, v);
  }
  if (!has_host) req.set(http::field::host, host_ + ":" + std::to_string(port_));
  if (!body.empty() || method == "PUT" || method == "POST") {
    req.body() = body;
    req.prepare_payload();
  }
  beast::error_code ec;
  // Generous timeouts: only to avoid hanging a broken test, never to measure.
  stream_->expires_after(std::chrono::seconds(60));
  http::write(*stream_, req, ec);
  if (ec) {
    result.error = "write: " + ec.message();
    stream_.reset();
    return result;
  }
  http::response_parser<http::string_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  if (method == "HEAD") parser.skip(true);
  http::read_header(*stream_, buffer_, parser, ec);
  if (!ec && !parser.is_done()) http::read(*stream_, buffer_, parser, ec);
  if (parser.is_header_done()) {
    const auto& res = parser.get();
    result.status = res.result_int();
    for (const auto& f : res) {
      result.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    }
    result.body = res.body();
  }
  if (ec) {
    result.error = ec.message();
    stream_.reset();
    return result;
  }
  if (!parser.get().keep_alive()) stream_.reset();
  return result;
}

}  // namespace ossmount::testserver
