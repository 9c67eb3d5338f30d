// RetryWhileBusy: runs an operation again while it answers a retryable kBusy, until it
// answers anything else or `deadline` passes, then hands the last answer to `done`.
//
// Why: close(2) returns once the kernel has a file's FLUSH answered, and sends its RELEASE
// afterwards, asynchronously. A program that closes a file and at once opens, renames or
// removes it (torch.save then torch.load, a save to a temporary name then os.replace) can
// reach the daemon before that release, while the handle still owns its name. Such a handle
// answers kBusy with retryable set, and the operation waits for the release instead of
// failing; a handle still open for writing answers kBusy without it, and the caller gets
// EBUSY at once.
//
// Thread-safety: a free function; `attempt` runs on the calling thread first, then on `io`.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <utility>

#include "ossmount/status.h"

namespace ossmount::fs {

// How long an operation waits for a closed handle's release before it answers EBUSY.
constexpr std::chrono::seconds kBusyGrace{5};
constexpr std::chrono::milliseconds kBusyRetryInterval{5};

inline const Status& StatusOfAnswer(const Status& s) { return s; }
template <typename T>
Status StatusOfAnswer(const Result<T>& r) {
  return r.ok() ? Status::Ok() : r.status();
}

template <typename Answer>
void RetryWhileBusy(boost::asio::io_context& io, std::chrono::steady_clock::time_point deadline,
                    std::function<void(std::function<void(Answer)>)> attempt,
                    std::function<void(Answer)> done) {
  auto again = attempt;  // the attempt runs once more for each retry
  again([&io, deadline, attempt = std::move(attempt),
         done = std::move(done)](Answer answer) mutable {
    const Status status = StatusOfAnswer(answer);
    if (status.code() != ErrorCode::kBusy || !status.retryable() ||
        std::chrono::steady_clock::now() >= deadline) {
      return done(std::move(answer));
    }
    auto timer = std::make_shared<boost::asio::steady_timer>(io, kBusyRetryInterval);
    timer->async_wait([&io, timer, deadline, attempt = std::move(attempt), done = std::move(done),
                       answer = std::move(answer)](const boost::system::error_code& ec) mutable {
      // Cancelled (the daemon is stopping): the last answer stands.
      if (ec == boost::asio::error::operation_aborted) return done(std::move(answer));
      RetryWhileBusy<Answer>(io, deadline, std::move(attempt), std::move(done));
    });
  });
}

}  // namespace ossmount::fs
