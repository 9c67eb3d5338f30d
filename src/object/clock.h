// Clock: the time and randomness the retry loop depends on, injected so that unit tests
// run the whole retry matrix instantly and deterministically (a fake clock that advances
// when asked to sleep, a fixed jitter).
//
// Thread-safety: implementations are called concurrently from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "common/time_util.h"

namespace boost::asio {
class io_context;
}

namespace ossmount::object {

class Clock {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  // Wall-clock time, for signatures (before any server clock-offset correction).
  virtual SystemTime Now() = 0;
  // Monotonic time, for the retry budget and endpoint health.
  virtual SteadyTime Steady() = 0;
  // Runs `then` once after `delay`, on an io_context thread; never inline.
  virtual void SleepThen(std::chrono::milliseconds delay, std::function<void()> then) = 0;
  // A uniform random number in [0, 1), for full-jitter backoff.
  virtual double Jitter() = 0;
};

// The real clock: system/steady clocks, a steady_timer per sleep, a thread-local PRNG.
// `io` must outlive every sleep.
std::shared_ptr<Clock> MakeAsioClock(boost::asio::io_context& io);

}  // namespace ossmount::object
