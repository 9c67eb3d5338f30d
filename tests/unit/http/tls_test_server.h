// TlsTestServer: an HTTPS/1.1 server on 127.0.0.1 with a freshly generated self-signed
// certificate (for IP 127.0.0.1 and DNS localhost), for the fetch engine's TLS tests.
// Every request gets "200 OK" with body "secure". The certificate's PEM is written to a
// temporary file (ca_file()) that a client can trust via EngineOptions::ca_bundle.
//
// Threading: one thread accepts, one thread serves each connection (blocking I/O). The
// destructor unblocks and joins every thread and removes the file.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace ossmount::testing {

class TlsTestServer {
 public:
  TlsTestServer();
  ~TlsTestServer();
  TlsTestServer(const TlsTestServer&) = delete;
  TlsTestServer& operator=(const TlsTestServer&) = delete;

  // "https://127.0.0.1:<port><path>"
  std::string Url(const std::string& path) const;
  const std::string& ca_file() const { return ca_file_; }
  // Requests received over an established TLS session (a rejected handshake never gets here).
  int served() const;

 private:
  void AcceptLoop();
  void Serve(boost::asio::ip::tcp::socket socket);

  boost::asio::io_context io_;  // owns the sockets; never run
  boost::asio::ssl::context ssl_;
  boost::asio::ip::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::string ca_file_;
  std::thread accept_thread_;

  mutable std::mutex mu_;
  bool stopping_ = false;
  std::set<int> live_fds_;
  std::vector<std::thread> threads_;
  int served_ = 0;
};

}  // namespace ossmount::testing
