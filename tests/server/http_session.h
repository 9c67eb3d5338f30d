// HttpSession: one HTTP/1.1 connection (keep-alive, pipelining-safe), on its own strand.
//
// Stages: (TLS handshake) -> read header -> (100 Continue) -> read body -> dispatch (classify,
// authenticate, plan faults, execute) -> wait the planned time to first byte -> write head and body
// in chunks (memory slices in one write; files in 256 KiB preads; paced, stalled, cut or corrupted
// as planned) -> read the next request or close.
//
// Lifetime: owned by shared_ptrs held by its pending async operations.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server_context.h"
#include "session_stream.h"

namespace ossmount::testserver {

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  // `tls` null = plain HTTP; else the TLS context of --tls-cert/--tls-key (outlives this).
  HttpSession(boost::asio::ip::tcp::socket socket, ServerContext& ctx,
              boost::asio::ssl::context* tls = nullptr);
  ~HttpSession();
  void Start();

 private:
  using error_code = boost::beast::error_code;

  void DoReadHeader();
  void OnReadHeader(error_code ec);
  void DoReadBody();
  void OnReadBody(error_code ec);
  void Dispatch();
  void BeginResponse();
  void WriteNext();
  void OnWrite(error_code ec, uint64_t new_sent);
  void FinishResponse();
  void WaitThen(std::chrono::steady_clock::duration d, void (HttpSession::*next)());
  void Reset();
  void CloseGracefully();
  void CloseFile();

  SessionStream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  boost::asio::steady_timer timer_;
  ServerContext& ctx_;

  // The response in flight.
  Response resp_;
  FaultPlan plan_;
  bool keep_alive_ = true;
  std::string head_;
  bool head_sent_ = false;
  uint64_t total_ = 0;  // body bytes the head announces
  uint64_t limit_ = 0;  // body bytes that will actually be sent
  uint64_t sent_ = 0;
  bool stall_pending_ = false;
  uint64_t stall_at_ = 0;
  bool corrupt_pending_ = false;
  uint64_t corrupt_at_ = 0;
  int fd_ = -1;
  std::vector<char> file_buf_;
  std::string scratch_;
  std::chrono::steady_clock::time_point pace_next_{};
  std::string log_line_;
};

}  // namespace ossmount::testserver
