#include "server.h"

#include <boost/asio/strand.hpp>
#include <fstream>
#include <thread>

#include "http_session.h"
#include "origin_client.h"

namespace ossmount::testserver {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

Server::Server(ServerOptions options)
    : options_(std::move(options)),
      ioc_(std::max(1, options_.threads)),
      accept_strand_(asio::make_strand(ioc_)),
      acceptor_(accept_strand_),
      signals_(ioc_, SIGINT, SIGTERM),
      ctx_(std::make_unique<ServerContext>(options_)) {
  ctx_->io = &ioc_;
}

Server::~Server() = default;

Status Server::Start() {
  Status s = ctx_->store.Scan();
  if (!s.ok()) return s;
  if (!options_.origin.empty()) {
    OriginSettings origin;
    origin.url = options_.origin;
    origin.access_key_id = options_.auth.access_key_id;
    origin.access_key_secret = options_.auth.access_key_secret;
    auto client = OriginClient::Create(ioc_, origin);
    if (!client.ok()) return client.status();
    ctx_->origin = std::move(client.value());
    ctx_->accelerator =
        std::make_unique<Accelerator>(*ctx_->origin, options_.accelerator_cache_mb << 20);
  }
  for (const auto& b : options_.buckets) {
    s = ctx_->store.CreateBucket(b);
    if (!s.ok()) return s.Prefix("bucket '" + b + "'");
  }
  boost::system::error_code ec;
  if (!options_.tls_cert.empty()) {
    tls_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
    tls_->set_options(asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                      asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
    tls_->use_certificate_chain_file(options_.tls_cert, ec);
    if (ec) return Status(ErrorCode::kInvalidArgument, "--tls-cert: " + ec.message());
    tls_->use_private_key_file(options_.tls_key, asio::ssl::context::pem, ec);
    if (ec) return Status(ErrorCode::kInvalidArgument, "--tls-key: " + ec.message());
  }
  auto address = asio::ip::make_address(options_.host, ec);
  if (ec) return Status(ErrorCode::kInvalidArgument, "bad --host '" + options_.host + "'");
  tcp::endpoint endpoint(address, options_.port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(ErrorCode::kInvalidArgument, "cannot listen on " + options_.host + ":" +
                                                   std::to_string(options_.port) + ": " +
                                                   ec.message());
  }
  port_ = acceptor_.local_endpoint().port();
  if (!options_.port_file.empty()) {
    std::string tmp = options_.port_file + ".tmp";
    {
      std::ofstream f(tmp);
      f << port_ << "\n";
      if (!f) return Status(ErrorCode::kInvalidArgument, "cannot write --port-file");
    }
    std::rename(tmp.c_str(), options_.port_file.c_str());
  }
  signals_.async_wait([this](const boost::system::error_code& e, int) {
    if (!e) Stop();
  });
  DoAccept();
  return Status::Ok();
}

void Server::DoAccept() {
  acceptor_.async_accept(
      asio::make_strand(ioc_), [this](boost::system::error_code ec, tcp::socket socket) {
        if (!ec) {
          std::make_shared<HttpSession>(std::move(socket), *ctx_, tls_.get())->Start();
        }
        if (acceptor_.is_open()) DoAccept();
      });
}

void Server::Run() {
  std::vector<std::thread> threads;
  for (int i = 1; i < options_.threads; ++i) threads.emplace_back([this] { ioc_.run(); });
  ioc_.run();
  for (auto& t : threads) t.join();
}

void Server::Stop() {
  asio::post(accept_strand_, [this] {
    boost::system::error_code ec;
    acceptor_.close(ec);
    signals_.cancel(ec);
    ioc_.stop();
  });
}

}  // namespace ossmount::testserver
