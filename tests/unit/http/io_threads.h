// Test helpers for the fetch engine: an io_context run by N threads, a collector that waits
// for handler calls, and Call(), which runs one request to completion (the timeouts are
// generous, only to avoid hangs).
#pragma once

#include <catch2/catch.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "http/fetch_engine.h"

namespace ossmount::testing {

class IoThreads {
 public:
  explicit IoThreads(int n) : guard_(io_.get_executor()) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  ~IoThreads() {
    guard_.reset();  // let run() return once the posted work has drained
    for (auto& t : threads_) t.join();
  }
  boost::asio::io_context& context() { return io_; }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::vector<std::thread> threads_;
};

// Records each handler call by request index; calls() counts them per index.
class Collector {
 public:
  http::ResponseHandler Handler(int index) {
    return [this, index](http::Response response) {
      std::lock_guard<std::mutex> lock(mu_);
      ++calls_[index];
      responses_[index] = std::move(response);
      ++total_;
      cv_.notify_all();
    };
  }
  bool WaitForTotal(int n, std::chrono::seconds timeout = std::chrono::seconds(60)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return total_ >= n; });
  }
  int total() {
    std::lock_guard<std::mutex> lock(mu_);
    return total_;
  }
  int calls(int index) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = calls_.find(index);
    return it == calls_.end() ? 0 : it->second;
  }
  http::Response response(int index) {
    std::lock_guard<std::mutex> lock(mu_);
    return responses_[index];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int, int> calls_;
  std::map<int, http::Response> responses_;
  int total_ = 0;
};

// Executes `request` and waits for its response.
inline http::Response Call(http::FetchEngine& engine, http::Request request) {
  auto promise = std::make_shared<std::promise<http::Response>>();
  auto future = promise->get_future();
  engine.Execute(std::move(request),
                 [promise](http::Response r) { promise->set_value(std::move(r)); });
  REQUIRE(future.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  return future.get();
}

}  // namespace ossmount::testing
