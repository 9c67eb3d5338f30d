// HttpSession: one HTTP/1.1 connection (keep-alive, pipelining-safe), on its own strand.
//
// Stages: (TLS handshake) -> read header -> classify and plan faults (from the header alone, so
// request-body faults can act before the body is read) -> (100 Continue) -> read body (a
// Content-Length body straight into the request's body in large reads, its MD5 and CRC-64 for
// PutObject/UploadPart/AppendObject computed on another pool thread as it arrives; a chunked
// body through the parser; piece by piece through the parser when paced or cut as planned) ->
// dispatch (authenticate, execute) -> wait the planned time to first byte -> write head and
// body in chunks (memory slices in one write; files in 256 KiB preads; paced, stalled, cut or
// corrupted as planned) -> read the next request or close.
//
// Request-body faults: a reset closes with RST once the planned part of the body has arrived; a
// cut body answers 400 IncompleteBody, then reads and discards the rest (so the client sees the
// answer, not a reset) and closes. Neither request is executed. A lost answer executes the
// request and resets instead of answering.
//
// Lifetime: owned by shared_ptrs held by its pending async operations.
#pragma once

#include <openssl/evp.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
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
  void PlanRequest();
  void DoReadBody();
  void OnReadBody(error_code ec);
  // Piecewise body reading (pacing, planned cuts).
  // Direct body reading (Content-Length, no pacing or cut planned).
  void StartDirectBody();
  void ReadDirectBody();
  void OnReadDirectBody(error_code ec, size_t n);
  void HashReady(bool all);
  void HashPiece(const char* data, size_t size);
  void FinishDirectBody();
  void DoReadBodySome();
  void OnReadBodySome(error_code ec);
  void ContinueBody();
  void CutBody();
  void Dispatch();
  // Builds and starts the answer. `denied`: the authentication failure, if any;
  // `accelerated`: in accelerator mode, what the accelerator found for a GET or HEAD (null
  // otherwise, and for requests the accelerator does not serve).
  void Respond(HttpRequest& req, const std::optional<AuthFailure>& denied,
               const Result<ObjectPtr>* accelerated);
  void BeginResponse();
  void WriteNext();
  void OnWrite(error_code ec, uint64_t new_sent);
  void FinishResponse();
  void WaitThen(std::chrono::steady_clock::duration d, void (HttpSession::*next)());
  void Reset();
  void CloseGracefully();
  // Stops sending, reads and discards until the peer closes (or a few seconds pass), then
  // closes: the peer still sending a body gets our answer instead of a reset.
  void LingeringClose();
  void CloseFile();

  SessionStream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  boost::asio::steady_timer timer_;
  ServerContext& ctx_;

  // The request being read: its classification (from the header) and fault plan.
  RequestInfo info_;
  Status classify_status_;
  FaultPlan plan_;
  bool piecewise_body_ = false;  // read the body piece by piece (pacing or a planned cut)
  uint64_t body_seen_ = 0;       // body bytes already paced
  uint64_t body_cut_at_ = 0;     // planned cut: body bytes read before it
  std::chrono::steady_clock::time_point pace_in_next_{};
  bool linger_after_response_ = false;

  // Direct body reading: the request (header from the parser, body read by us), the body's
  // length and the bytes read and handed to the digests so far. body_base_ is the body's
  // storage, reserved to its full length up front so it never moves while digests read it.
  bool direct_body_ = false;
  HttpRequest req_;
  uint64_t body_len_ = 0;
  uint64_t body_got_ = 0;
  uint64_t body_hashed_ = 0;
  char* body_base_ = nullptr;
  // Digests of the body (PutObject/UploadPart/AppendObject): md5_ and crc_ are touched only by
  // HashPiece and the final step, run in order on hash_strand_ (or inline when there is no
  // pool).
  bool digest_body_ = false;
  std::optional<boost::asio::strand<boost::asio::io_context::executor_type>> hash_strand_;
  EVP_MD_CTX* md5_ = nullptr;
  uint64_t crc_ = 0;

  // The response in flight.
  Response resp_;
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
