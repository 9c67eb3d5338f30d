// SessionStream: the byte stream of one HttpSession, either plain TCP or TLS over the same
// TCP stream (--tls-cert/--tls-key). It is an AsyncReadStream/AsyncWriteStream, so Beast's
// http::async_read and asio::async_write work on it unchanged; timeouts and socket options
// (linger for resets, shutdown) go to the lowest layer, tcp().
//
// Thread-safety: like the streams it wraps, one session's strand at a time.
#pragma once

#include <boost/asio/ssl.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <utility>

namespace ossmount::testserver {

class SessionStream {
 public:
  using executor_type = boost::beast::tcp_stream::executor_type;

  // `tls` null = plain TCP. The context must outlive the stream.
  SessionStream(boost::asio::ip::tcp::socket socket, boost::asio::ssl::context* tls)
      : tls_(tls != nullptr), stream_(std::move(socket), tls ? *tls : Unused()) {}

  executor_type get_executor() { return stream_.get_executor(); }
  boost::beast::tcp_stream& tcp() { return stream_.next_layer(); }
  bool is_tls() const { return tls_; }

  // The server side of the TLS handshake; calls `handler(error_code)`. Only when is_tls().
  template <class Handler>
  void async_handshake(Handler&& handler) {
    stream_.async_handshake(boost::asio::ssl::stream_base::server, std::forward<Handler>(handler));
  }

  template <class MutableBuffers, class Handler>
  void async_read_some(const MutableBuffers& buffers, Handler&& handler) {
    if (tls_) {
      stream_.async_read_some(buffers, std::forward<Handler>(handler));
    } else {
      tcp().async_read_some(buffers, std::forward<Handler>(handler));
    }
  }

  template <class ConstBuffers, class Handler>
  void async_write_some(const ConstBuffers& buffers, Handler&& handler) {
    if (tls_) {
      stream_.async_write_some(buffers, std::forward<Handler>(handler));
    } else {
      tcp().async_write_some(buffers, std::forward<Handler>(handler));
    }
  }

 private:
  // ssl_stream needs a context even when it is never used (plain TCP sessions).
  static boost::asio::ssl::context& Unused() {
    static boost::asio::ssl::context context(boost::asio::ssl::context::tls_server);
    return context;
  }

  bool tls_;
  boost::beast::ssl_stream<boost::beast::tcp_stream> stream_;
};

}  // namespace ossmount::testserver
