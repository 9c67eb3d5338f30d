// ControlRequests: the daemon's side of the control ioctls on directories of the mount
// (the protocol: control/control_ioctl.h). Collects each open directory's request from its
// kControlSend chunks, has it answered, and hands the answer out in kControlReceive chunks.
//
// Bounds: a request over kMaxRequestBytes is refused (EFBIG) and its bytes dropped; the
// requests being collected on all directories together stay within `max_pending` bytes
// (ENOBUFS beyond), so no local user can make the daemon hold more than that.
//
// INTERNAL to src/fuse; tested without a kernel.
// Thread-safety: every method may be called concurrently from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "fuse/fuse_server.h"

namespace ossmount::fuse {

class ControlRequests : public std::enable_shared_from_this<ControlRequests> {
 public:
  // Held by a shared_ptr: an answer that arrives late keeps the object alive.
  ControlRequests(ControlAnswerer answerer, std::size_t max_request, std::size_t max_pending);

  // Appends a chunk to the request of the directory handle. 0, or an errno.
  int Send(uint64_t dir_handle, std::string_view chunk);

  // The next piece (at most `max` bytes) of the answer, through `done(errno, piece)`; an
  // empty piece once it has all been handed out. The first call after a request asks for
  // the answer, and `done` may then run on another thread.
  using ReceiveDone = std::function<void(int error, std::string_view piece)>;
  void Receive(uint64_t dir_handle, std::size_t max, ControlCaller caller, ReceiveDone done);

  // The directory handle was released: its request and answer go.
  void Forget(uint64_t dir_handle);

  // Bytes of requests being collected (tests).
  std::size_t pending_bytes() const;

 private:
  struct Exchange {
    uint64_t generation = 0;  // tells a late answer from the current exchange's
    std::string request;
    int refused = 0;       // EFBIG once the request grew too large: it is not run
    bool waiting = false;  // the answer has been asked for and has not come
    bool answered = false;
    std::string answer;
    std::size_t handed_out = 0;
  };

  // Under mu_: the next piece of an answered exchange; the exchange ends with its last.
  std::string TakePieceLocked(uint64_t dir_handle, Exchange& exchange, std::size_t max);
  void OnAnswer(uint64_t dir_handle, uint64_t generation, std::string answer, std::size_t max,
                ReceiveDone done);

  const ControlAnswerer answerer_;
  const std::size_t max_request_;
  const std::size_t max_pending_;
  mutable std::mutex mu_;  // guards everything below
  std::unordered_map<uint64_t, Exchange> exchanges_;
  std::size_t pending_ = 0;
  uint64_t next_generation_ = 1;
};

}  // namespace ossmount::fuse
