// Server: the ossmount test object server (OSS and S3 dialects over a directory tree), its
// listener and its thread pool.
//
// Usage: Server s(options); Status st = s.Start(); print s.port(); s.Run() (blocks until
// SIGINT/SIGTERM or Stop()).
//
// Thread-safety: Stop() may be called from any thread; the rest from the owning thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/strand.hpp>
#include <memory>

#include "ossmount/status.h"
#include "server_context.h"

namespace ossmount::testserver {

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();

  // Scans the root, creates the requested buckets, binds and listens. Writes the port file.
  Status Start();
  uint16_t port() const { return port_; }
  // Serves on options.threads threads until Stop() or SIGINT/SIGTERM.
  void Run();
  void Stop();

  ServerContext& context() { return *ctx_; }

 private:
  void DoAccept();

  ServerOptions options_;
  boost::asio::io_context ioc_;
  // On its own strand: accept completions (which test is_open()) and Stop() (which closes
  // it) run on different pool threads otherwise (a data race, found by TSan).
  boost::asio::strand<boost::asio::io_context::executor_type> accept_strand_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::signal_set signals_;
  std::unique_ptr<ServerContext> ctx_;
  std::unique_ptr<boost::asio::ssl::context> tls_;  // set when serving HTTPS
  uint16_t port_ = 0;
};

// Parses the command line (see --help). On --help or an error, returns a Status whose
// message is the text to print; `exit_code` is 0 for --help.
Result<ServerOptions> ParseServerOptions(int argc, char** argv, int* exit_code);

}  // namespace ossmount::testserver
