// OriginClient: the accelerator's HTTP client to its origin (--origin http://HOST:PORT), an
// OriginFetcher that sends whole-object GETs over keep-alive connections on the server's own
// io_context.
//
// Authentication: each request is signed with OSS V1 (the project's signer, src/auth) with
// the accelerator's own key pair (--access-key-id/--access-key-secret), so an origin running
// with --auth on checks it like any client's; without a key pair (--auth off and no keys) the
// requests go unsigned, which an origin with --auth off accepts. No route of the origin is
// special: the accelerator is just another client, as the real OSS Accelerator is to OSS.
//
// Connections: idle ones are kept for reuse; a request that fails on a reused connection
// before any answer arrived (the origin closed it while idle) is retried once on a new one.
// Every request has a 60 s deadline. HTTP only (no TLS to the origin).
//
// Thread-safety: Fetch may be called from any thread; `done` runs on a pool thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "accelerator.h"
#include "ossmount/status.h"

namespace ossmount::testserver {

struct OriginSettings {
  std::string url;                       // http://HOST:PORT (HOST an address or a resolvable name)
  std::string access_key_id;             // empty: unsigned requests
  std::string access_key_secret;         // secret: never logged
  uint64_t max_body_bytes = 1ull << 30;  // a larger object is refused (kTooBig)
};

class OriginClient : public OriginFetcher {
 public:
  // Resolves the origin's address once. kInvalidArgument for a URL that is not http://HOST:PORT.
  static Result<std::unique_ptr<OriginClient>> Create(boost::asio::io_context& io,
                                                      OriginSettings settings);
  ~OriginClient() override;

  void Fetch(const std::string& bucket, const std::string& key,
             std::function<void(Result<OriginReply>)> done) override;

 private:
  struct Exchange;
  OriginClient(boost::asio::io_context& io, OriginSettings settings,
               boost::asio::ip::tcp::endpoint endpoint, std::string host_header);
  // An idle connection, or nullptr.
  std::unique_ptr<boost::beast::tcp_stream> TakeIdle();
  void GiveBack(std::unique_ptr<boost::beast::tcp_stream> stream);
  void Start(std::shared_ptr<Exchange> x, bool allow_reuse);

  boost::asio::io_context& io_;
  const OriginSettings settings_;
  const boost::asio::ip::tcp::endpoint endpoint_;
  const std::string host_header_;
  std::mutex mu_;
  std::vector<std::unique_ptr<boost::beast::tcp_stream>> idle_;  // guarded by mu_
};

// Splits "http://HOST:PORT[/]" into host and port. kInvalidArgument otherwise (https, no port).
Result<std::pair<std::string, uint16_t>> ParseOriginUrl(const std::string& url);

}  // namespace ossmount::testserver
