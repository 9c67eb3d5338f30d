// Eventually: waits until a condition reached through asynchronous completions holds.
//
// For states that settle a moment after the event a test saw (a buffer's last reference
// dropped on an io thread after the reply that used it, a request reaching a queue that
// Execute() only posted to). The bound guards against hangs; it is not a performance
// threshold, so it is generous.
#pragma once

#include <chrono>
#include <thread>

namespace ossmount::testing {

template <typename Pred>
bool Eventually(Pred pred, std::chrono::milliseconds bound = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace ossmount::testing
