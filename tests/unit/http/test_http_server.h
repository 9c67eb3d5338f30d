// TestHttpServer: a scriptable HTTP/1.1 server on 127.0.0.1 (ephemeral port) for the fetch
// engine's tests. Boost.Beast parses requests; responses are written by hand so they can
// misbehave on purpose.
//
// Each path (the request target without its query) has a Route: status, headers, body,
// and optionally a delay, a gate (hold the response until OpenGate), a truncated body
// (announce the full Content-Length, send fewer bytes, close), or a stall (send the
// headers, then nothing until the client gives up). Unknown paths get a 404.
//
// It counts accepted connections and the most requests held at once (received, response
// not yet written), and records every request (method, target, headers, body) in arrival
// order.
//
// Threading: one thread accepts, one thread serves each connection (blocking I/O). All
// public methods are thread-safe. The destructor unblocks and joins every thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace ossmount::testing {

struct Route {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds delay{0};
  std::string gate;                      // "" = no gate
  std::optional<size_t> truncate_after;  // send only this many body bytes, then close
  bool stall_after_headers = false;
  bool close_after_response = false;  // close without announcing it (an idle-timeout close)
  bool chunked = false;               // Transfer-Encoding: chunked instead of Content-Length
};

struct RecordedRequest {
  std::string method;
  std::string target;                          // full target, with query
  std::string path;                            // without query
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;
};

class TestHttpServer {
 public:
  TestHttpServer();
  ~TestHttpServer();
  TestHttpServer(const TestHttpServer&) = delete;
  TestHttpServer& operator=(const TestHttpServer&) = delete;

  uint16_t port() const { return port_; }
  // "http://127.0.0.1:<port><path>"
  std::string Url(std::string_view path) const;

  void SetRoute(const std::string& path, Route route);
  // Releases every request held on `gate`, now and in future.
  void OpenGate(const std::string& gate);

  int accepted_connections() const;
  int max_concurrent() const;
  std::vector<RecordedRequest> requests() const;
  size_t CountRequests(const std::string& path) const;
  // Waits until at least n requests for path have arrived; false on timeout.
  bool WaitForRequests(const std::string& path, size_t n,
                       std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;

 private:
  void AcceptLoop();
  void Serve(boost::asio::ip::tcp::socket socket);
  // Waits for the route's delay and gate; false when the server is stopping.
  bool Hold(const Route& route);

  boost::asio::io_context io_;  // only owns the sockets; never run
  boost::asio::ip::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::thread accept_thread_;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, Route> routes_;
  std::set<std::string> open_gates_;
  std::set<int> live_fds_;
  std::vector<std::thread> connection_threads_;
  std::vector<RecordedRequest> requests_;
  int accepted_ = 0;
  int active_ = 0;
  int max_active_ = 0;
};

}  // namespace ossmount::testing
