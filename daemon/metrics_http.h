// --metrics-address: a small HTTP listener serving the metrics registry as Prometheus text.
//
// GET /metrics -> 200, Content-Type "text/plain; version=0.0.4", the registry's
// PrometheusText(); any other path -> 404; any other method -> 405. One request per
// connection (the listener closes after answering), requests over 8 KiB are refused, and a
// client has 10 s to send its request. It runs on the daemon's io_context.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>

#include "ossmount/status.h"

namespace ossmount::daemon {

class MetricsHttpServer {
 public:
  // Binds host:port (port 0: any free port) and starts serving; `render` produces the body.
  static Result<std::unique_ptr<MetricsHttpServer>> Start(boost::asio::io_context& io,
                                                          const std::string& host, uint16_t port,
                                                          std::function<std::string()> render);
  ~MetricsHttpServer();  // stops accepting
  uint16_t port() const;

  struct State;

 private:
  explicit MetricsHttpServer(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace ossmount::daemon
