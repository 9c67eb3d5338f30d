// ossmount-testserver-load: keep-alive GET load from N concurrent connections, for the test
// server's benchmark numbers (docs/BENCHMARKS.md). Reads targets ("/bucket/key", one per
// line) from --targets, cycles through them from every connection (each connection starts at
// a different offset) for --seconds, and prints requests/s, MB/s and latency percentiles.
// Any response other than 200/206 or a short body counts as an error.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;

struct Totals {
  std::mutex mu;
  uint64_t requests = 0, bytes = 0, errors = 0;
  std::vector<double> latencies_ms;
};

class Conn : public std::enable_shared_from_this<Conn> {
 public:
  Conn(asio::io_context& ioc, asio::ip::tcp::endpoint ep, const std::vector<std::string>& targets,
       size_t start, Clock::time_point end, Totals& totals)
      : stream_(asio::make_strand(ioc)),
        ep_(ep),
        targets_(targets),
        next_(start),
        end_(end),
        totals_(totals) {}
  void Start() {
    stream_.async_connect(ep_, [self = shared_from_this()](beast::error_code ec) {
      if (ec) {
        std::fprintf(stderr, "connect: %s\n", ec.message().c_str());
        return;
      }
      self->Send();
    });
  }

 private:
  void Send() {
    if (Clock::now() >= end_) {
      Flush();
      return;
    }
    req_ = {};
    req_.method(http::verb::get);
    req_.target(targets_[next_++ % targets_.size()]);
    req_.version(11);
    req_.set(http::field::host, "127.0.0.1");
    started_ = Clock::now();
    http::async_write(stream_, req_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->Fail();
      self->parser_.emplace();
      self->parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
      http::async_read(
          self->stream_, self->buffer_, *self->parser_, [self](beast::error_code ec2, size_t) {
            if (ec2) return self->Fail();
            auto& res = self->parser_->get();
            bool ok = res.result_int() == 200 || res.result_int() == 206;
            ++requests_local(self);
            if (!ok) ++self->errors_;
            self->bytes_ += res.body().size();
            self->lat_.push_back(
                std::chrono::duration<double, std::milli>(Clock::now() - self->started_).count());
            self->Send();
          });
    });
  }
  static uint64_t& requests_local(const std::shared_ptr<Conn>& c) { return c->requests_; }
  void Fail() {
    ++errors_;
    Flush();
  }
  void Flush() {
    std::lock_guard lock(totals_.mu);
    totals_.requests += requests_;
    totals_.bytes += bytes_;
    totals_.errors += errors_;
    totals_.latencies_ms.insert(totals_.latencies_ms.end(), lat_.begin(), lat_.end());
  }

  beast::tcp_stream stream_;
  asio::ip::tcp::endpoint ep_;
  const std::vector<std::string>& targets_;
  size_t next_;
  Clock::time_point end_;
  Totals& totals_;
  beast::flat_buffer buffer_;
  http::request<http::empty_body> req_;
  std::optional<http::response_parser<http::string_body>> parser_;
  Clock::time_point started_;
  uint64_t requests_ = 0, bytes_ = 0, errors_ = 0;
  std::vector<double> lat_;
};

int main(int argc, char** argv) {
  CLI::App app{"keep-alive GET load generator for ossmount-testserver"};
  uint16_t port = 0;
  std::string targets_file;
  int connections = 64, threads = 1;
  double seconds = 10;
  app.add_option("--port", port)->required();
  app.add_option("--targets", targets_file, "File of request targets, one per line")->required();
  app.add_option("--connections", connections)->capture_default_str();
  app.add_option("--threads", threads)->capture_default_str();
  app.add_option("--seconds", seconds)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::vector<std::string> targets;
  std::ifstream in(targets_file);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) targets.push_back(line);
  }
  if (targets.empty()) {
    std::fprintf(stderr, "no targets\n");
    return 2;
  }
  asio::io_context ioc;
  Totals totals;
  auto start = Clock::now();
  auto end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  asio::ip::tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port);
  for (int i = 0; i < connections; ++i) {
    std::make_shared<Conn>(ioc, ep, targets, targets.size() * i / connections, end, totals)
        ->Start();
  }
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back([&] { ioc.run(); });
  ioc.run();
  for (auto& t : pool) t.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  auto& l = totals.latencies_ms;
  std::sort(l.begin(), l.end());
  auto pct = [&](double p) {
    return l.empty() ? 0.0 : l[std::min(l.size() - 1, static_cast<size_t>(p * l.size()))];
  };
  std::printf(
      "requests=%llu errors=%llu seconds=%.2f req_per_s=%.0f MB_per_s=%.1f p50_ms=%.2f "
      "p99_ms=%.2f\n",
      static_cast<unsigned long long>(totals.requests),
      static_cast<unsigned long long>(totals.errors), elapsed, totals.requests / elapsed,
      totals.bytes / elapsed / 1e6, pct(0.5), pct(0.99));
  return totals.errors ? 1 : 0;
}
