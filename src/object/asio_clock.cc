// The production Clock: real time, Asio timers, a per-thread PRNG.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <random>

#include "object/clock.h"

namespace ossmount::object {
namespace {

class AsioClock final : public Clock {
 public:
  explicit AsioClock(boost::asio::io_context& io) : io_(io) {}

  SystemTime Now() override { return std::chrono::system_clock::now(); }
  SteadyTime Steady() override { return std::chrono::steady_clock::now(); }

  void SleepThen(std::chrono::milliseconds delay, std::function<void()> then) override {
    auto timer = std::make_shared<boost::asio::steady_timer>(io_, delay);
    // The timer keeps itself alive through the handler; an aborted wait (io_context
    // shutdown) still runs `then`, which sees the cancellation or shutdown on its own.
    timer->async_wait(
        [timer, then = std::move(then)](const boost::system::error_code&) { then(); });
  }

  double Jitter() override {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  }

 private:
  boost::asio::io_context& io_;
};

}  // namespace

std::shared_ptr<Clock> MakeAsioClock(boost::asio::io_context& io) {
  return std::make_shared<AsioClock>(io);
}

}  // namespace ossmount::object
