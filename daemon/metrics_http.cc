#include "metrics_http.h"

#include <spdlog/spdlog.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace ossmount::daemon {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct MetricsHttpServer::State : std::enable_shared_from_this<MetricsHttpServer::State> {
  State(asio::io_context& io, std::function<std::string()> r)
      : strand(asio::make_strand(io)), acceptor(strand), render(std::move(r)) {}
  asio::strand<asio::io_context::executor_type> strand;
  tcp::acceptor acceptor;
  std::function<std::string()> render;
  uint16_t port = 0;
  std::atomic<bool> stopped{false};

  void Accept();
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::function<std::string()> render)
      : stream_(std::move(socket)), render_(std::move(render)) {}

  void Start() {
    parser_.body_limit(8192);
    parser_.header_limit(8192);
    stream_.expires_after(std::chrono::seconds(10));
    http::async_read(stream_, buffer_, parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (!ec) self->Answer();
                     });
  }

 private:
  void Answer() {
    const auto& req = parser_.get();
    response_.version(req.version());
    response_.keep_alive(false);
    response_.set(http::field::server, "ossmount");
    std::string_view target(req.target().data(), req.target().size());
    target = target.substr(0, target.find('?'));
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
      response_.result(http::status::method_not_allowed);
      response_.set(http::field::allow, "GET, HEAD");
      response_.body() = "only GET /metrics\n";
    } else if (target != "/metrics") {
      response_.result(http::status::not_found);
      response_.body() = "metrics are at /metrics\n";
    } else {
      response_.result(http::status::ok);
      response_.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      if (req.method() == http::verb::get) response_.body() = render_();
    }
    if (response_.result() != http::status::ok) {
      response_.set(http::field::content_type, "text/plain; charset=utf-8");
    }
    response_.prepare_payload();
    http::async_write(stream_, response_,
                      [self = shared_from_this()](beast::error_code, std::size_t) {
                        beast::error_code ignored;
                        self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
                      });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request_parser<http::string_body> parser_;
  http::response<http::string_body> response_;
  std::function<std::string()> render_;
};

}  // namespace

void MetricsHttpServer::State::Accept() {
  acceptor.async_accept([self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
    if (self->stopped.load() || ec == asio::error::operation_aborted) return;
    if (!ec) std::make_shared<Session>(std::move(socket), self->render)->Start();
    self->Accept();
  });
}

MetricsHttpServer::MetricsHttpServer(std::shared_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    asio::io_context& io, const std::string& host, uint16_t port,
    std::function<std::string()> render) {
  auto state = std::make_shared<State>(io, std::move(render));
  beast::error_code ec;
  auto address = asio::ip::make_address(host, ec);
  tcp::endpoint endpoint(address, port);
  if (!ec) state->acceptor.open(endpoint.protocol(), ec);
  if (!ec) state->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) state->acceptor.bind(endpoint, ec);
  if (!ec) state->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(ErrorCode::kInvalidArgument, "--metrics-address " + host + ":" +
                                                   std::to_string(port) +
                                                   " cannot be listened on: " + ec.message());
  }
  state->port = state->acceptor.local_endpoint().port();
  asio::post(state->strand, [state] { state->Accept(); });
  return std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer(std::move(state)));
}

MetricsHttpServer::~MetricsHttpServer() {
  state_->stopped = true;
  asio::post(state_->strand, [state = state_] {
    beast::error_code ignored;
    state->acceptor.close(ignored);
  });
}

uint16_t MetricsHttpServer::port() const { return state_->port; }

}  // namespace ossmount::daemon
