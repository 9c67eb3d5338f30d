#include "unit/http/test_http_server.h"

#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cstdio>

namespace ossmount::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 206:
      return "Partial Content";
    case 404:
      return "Not Found";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

}  // namespace

TestHttpServer::TestHttpServer() : acceptor_(io_) {
  tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
  acceptor_.open(endpoint.protocol());
  acceptor_.set_option(asio::socket_base::reuse_address(true));
  acceptor_.bind(endpoint);
  acceptor_.listen();
  port_ = acceptor_.local_endpoint().port();
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

TestHttpServer::~TestHttpServer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    // Unblock accept() and every blocking read/write.
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    for (int fd : live_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  cv_.notify_all();
  accept_thread_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    threads.swap(connection_threads_);
  }
  for (auto& t : threads) t.join();
}

std::string TestHttpServer::Url(std::string_view path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
}

void TestHttpServer::SetRoute(const std::string& path, Route route) {
  std::lock_guard<std::mutex> lock(mu_);
  routes_[path] = std::move(route);
}

void TestHttpServer::OpenGate(const std::string& gate) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    open_gates_.insert(gate);
  }
  cv_.notify_all();
}

int TestHttpServer::accepted_connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return accepted_;
}

int TestHttpServer::max_concurrent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return max_active_;
}

std::vector<RecordedRequest> TestHttpServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

size_t TestHttpServer::CountRequests(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::count_if(requests_.begin(), requests_.end(),
                       [&](const RecordedRequest& r) { return r.path == path; });
}

bool TestHttpServer::WaitForRequests(const std::string& path, size_t n,
                                     std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] {
    return static_cast<size_t>(
               std::count_if(requests_.begin(), requests_.end(),
                             [&](const RecordedRequest& r) { return r.path == path; })) >= n;
  });
}

void TestHttpServer::AcceptLoop() {
  for (;;) {
    boost::system::error_code ec;
    tcp::socket socket(io_);
    acceptor_.accept(socket, ec);
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    if (ec) continue;
    ++accepted_;
    live_fds_.insert(socket.native_handle());
    connection_threads_.emplace_back(
        [this, s = std::move(socket)]() mutable { Serve(std::move(s)); });
  }
}

bool TestHttpServer::Hold(const Route& route) {
  std::unique_lock<std::mutex> lock(mu_);
  if (route.delay.count() > 0) {
    cv_.wait_for(lock, route.delay, [&] { return stopping_; });
  }
  if (!route.gate.empty()) {
    cv_.wait(lock, [&] { return stopping_ || open_gates_.count(route.gate) > 0; });
  }
  return !stopping_;
}

void TestHttpServer::Serve(tcp::socket socket) {
  beast::flat_buffer buffer;
  for (;;) {
    boost::system::error_code ec;
    http::request_parser<http::string_body> parser;
    parser.body_limit(256u << 20);
    http::read(socket, buffer, parser, ec);
    if (ec) break;
    const auto& req = parser.get();

    RecordedRequest record;
    record.method = std::string(req.method_string());
    record.target = std::string(req.target());
    record.path = record.target.substr(0, record.target.find('?'));
    for (const auto& field : req) {
      record.headers[Lower(field.name_string())] = std::string(field.value());
    }
    record.body = req.body();
    const bool keep_alive = req.keep_alive();
    const bool head = req.method() == http::verb::head;

    Route route;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = routes_.find(record.path);
      if (it != routes_.end()) {
        route = it->second;
      } else {
        route.status = 404;
        route.body = "no route for " + record.path;
      }
      requests_.push_back(std::move(record));
      max_active_ = std::max(max_active_, ++active_);
    }
    cv_.notify_all();

    const bool go_on = Hold(route);
    {
      // Counted down before the response is written: the client may start its next
      // request the moment it has this one, and must not find it still counted.
      std::lock_guard<std::mutex> lock(mu_);
      --active_;
    }
    if (!go_on) break;

    std::string head_text =
        "HTTP/1.1 " + std::to_string(route.status) + " " + Reason(route.status) + "\r\n";
    for (const auto& [name, value] : route.headers) head_text += name + ": " + value + "\r\n";
    std::string body = route.body;
    if (route.chunked) {
      head_text += "Transfer-Encoding: chunked\r\n";
      char size_hex[32];
      std::snprintf(size_hex, sizeof(size_hex), "%zx", route.body.size());
      body = route.body.empty() ? "0\r\n\r\n"
                                : std::string(size_hex) + "\r\n" + route.body + "\r\n0\r\n\r\n";
    } else {
      head_text += "Content-Length: " + std::to_string(route.body.size()) + "\r\n";
    }
    if (!keep_alive) head_text += "Connection: close\r\n";
    head_text += "\r\n";

    if (route.stall_after_headers) {
      asio::write(socket, asio::buffer(head_text), ec);
      char byte;
      socket.read_some(asio::buffer(&byte, 1), ec);  // until the client hangs up
      break;
    }
    if (route.truncate_after) {
      std::string partial = head_text + body.substr(0, *route.truncate_after);
      asio::write(socket, asio::buffer(partial), ec);
      break;
    }
    std::string out = head ? head_text : head_text + body;
    asio::write(socket, asio::buffer(out), ec);
    if (ec || !keep_alive || route.close_after_response) break;
  }
  std::lock_guard<std::mutex> lock(mu_);
  live_fds_.erase(socket.native_handle());
  boost::system::error_code ignored;
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
}

}  // namespace ossmount::testing
