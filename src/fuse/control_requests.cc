#include "fuse/control_requests.h"

#include <algorithm>
#include <cerrno>

namespace ossmount::fuse {

ControlRequests::ControlRequests(ControlAnswerer answerer, std::size_t max_request,
                                 std::size_t max_pending)
    : answerer_(std::move(answerer)), max_request_(max_request), max_pending_(max_pending) {}

int ControlRequests::Send(uint64_t dir_handle, std::string_view chunk) {
  std::lock_guard lock(mu_);
  Exchange& exchange = exchanges_[dir_handle];
  if (exchange.waiting) return EBUSY;
  if (exchange.answered) exchange = Exchange{};  // the next request on this handle
  if (exchange.generation == 0) exchange.generation = next_generation_++;
  if (exchange.refused != 0) return exchange.refused;
  if (exchange.request.size() + chunk.size() > max_request_) {
    pending_ -= exchange.request.size();
    exchange.request = std::string();  // frees the bytes now
    exchange.refused = EFBIG;
    return EFBIG;
  }
  if (pending_ + chunk.size() > max_pending_) return ENOBUFS;
  exchange.request.append(chunk);
  pending_ += chunk.size();
  return 0;
}

void ControlRequests::Receive(uint64_t dir_handle, std::size_t max, ControlCaller caller,
                              ReceiveDone done) {
  std::string request;
  uint64_t generation = 0;
  int error = 0;
  std::string piece;
  bool ask = false;
  {
    std::lock_guard lock(mu_);
    Exchange& exchange = exchanges_[dir_handle];
    if (exchange.waiting) {
      error = EBUSY;
    } else if (exchange.refused != 0) {
      error = exchange.refused;
      exchanges_.erase(dir_handle);
    } else if (exchange.answered) {
      piece = TakePieceLocked(dir_handle, exchange, max);
    } else {
      if (exchange.generation == 0) exchange.generation = next_generation_++;
      generation = exchange.generation;
      pending_ -= exchange.request.size();
      request = std::move(exchange.request);
      exchange.request = std::string();
      exchange.waiting = true;
      ask = true;
    }
  }
  // Replies go out without the lock held.
  if (!ask) {
    done(error, piece);
    return;
  }
  answerer_(std::move(request), caller,
            [self = shared_from_this(), dir_handle, generation, max,
             done = std::move(done)](std::string answer) mutable {
              self->OnAnswer(dir_handle, generation, std::move(answer), max, std::move(done));
            });
}

void ControlRequests::OnAnswer(uint64_t dir_handle, uint64_t generation, std::string answer,
                               std::size_t max, ReceiveDone done) {
  std::string piece;
  {
    std::lock_guard lock(mu_);
    auto it = exchanges_.find(dir_handle);
    if (it == exchanges_.end() || it->second.generation != generation) {
      // The directory was released meanwhile: nobody reads the rest.
      piece = answer.substr(0, max);
    } else {
      Exchange& exchange = it->second;
      exchange.waiting = false;
      exchange.answered = true;
      exchange.answer = std::move(answer);
      piece = TakePieceLocked(dir_handle, exchange, max);
    }
  }
  done(0, piece);
}

std::string ControlRequests::TakePieceLocked(uint64_t dir_handle, Exchange& exchange,
                                             std::size_t max) {
  const std::size_t n = std::min(max, exchange.answer.size() - exchange.handed_out);
  if (n == 0) {
    exchanges_.erase(dir_handle);  // `exchange` is gone from here on
    return {};
  }
  std::string piece = exchange.answer.substr(exchange.handed_out, n);
  exchange.handed_out += n;
  return piece;
}

void ControlRequests::Forget(uint64_t dir_handle) {
  std::lock_guard lock(mu_);
  auto it = exchanges_.find(dir_handle);
  if (it == exchanges_.end()) return;
  pending_ -= it->second.request.size();
  exchanges_.erase(it);
}

std::size_t ControlRequests::pending_bytes() const {
  std::lock_guard lock(mu_);
  return pending_;
}

}  // namespace ossmount::fuse
