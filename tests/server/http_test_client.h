// HttpTestClient: a blocking HTTP/1.1 client (Boost.Beast) for tests of the test server.
//
// Keeps one keep-alive connection and reconnects after the server closes it. A response cut
// short (reset, truncated body) is returned with what arrived and a non-empty `error`.
//
// Thread-safety: not thread-safe; one client per thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ossmount::testserver {

struct HttpResult {
  unsigned status = 0;  // 0 when no response head arrived
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string error;  // empty when the whole response arrived
  // Case-insensitive header lookup; "" when absent.
  std::string Header(const std::string& name) const;
  bool HasHeader(const std::string& name) const;
};

class HttpTestClient {
 public:
  explicit HttpTestClient(uint16_t port, std::string host = "127.0.0.1");
  ~HttpTestClient();

  HttpResult Request(const std::string& method, const std::string& target,
                     const std::vector<std::pair<std::string, std::string>>& headers = {},
                     const std::string& body = "");
  // Connections opened so far (reconnects after a close count).
  int connects() const { return connects_; }

 private:
  bool EnsureConnected(std::string& error);
  uint16_t port_;
  std::string host_;
  boost::asio::io_context ioc_;
  std::optional<boost::beast::tcp_stream> stream_;
  boost::beast::flat_buffer buffer_;
  int connects_ = 0;
};

}  // namespace ossmount::testserver
