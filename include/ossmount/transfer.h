// Transfer: how a request is sent and where its body goes (Priority, CancelFlag, GetTarget).
// A leaf of the public headers: the fetch engine (src/http) and the object clients that use it
// both need these, and the engine must not depend on the ObjectClient interface above it.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <vector>

namespace ossmount {

// How urgently a request should be sent. On-demand reads outrank background prefetch:
// when the in-flight cap is reached, queued kForeground requests go first.
enum class Priority { kForeground = 0, kPrefetch = 1, kBackground = 2 };

// Set cancelled to abandon a request. A queued request is dropped; an in-flight one is
// aborted. Either way the handler is still called once, with ErrorCode::kCancelled.
struct CancelFlag {
  std::atomic<bool> cancelled{false};
};

// Where a GET writes its body: straight into caller memory, no intermediate copy.
// Exactly one of the two forms is used:
//   - fixed: data/capacity, a region the caller owns. A body longer than capacity is an
//     error (kIntegrity: the object is not the size the caller expected).
//   - growable: the body is appended to *growable (cleared first on every attempt).
struct GetTarget {
  char* data = nullptr;
  size_t capacity = 0;
  std::vector<char>* growable = nullptr;

  // A growable target refuses a body over `growable_limit` bytes (0 = no limit): the
  // transfer is abandoned and the response marked body_overflow, so a hostile or broken
  // server cannot make a listing take unbounded memory.
  size_t growable_limit = 0;

  // Fixed targets, optional: told while the body arrives how many bytes from the target's
  // start hold it already, so a reader can use them before the GET completes. Called on the
  // client's network thread (keep it short; never call back into the client from it), with
  // growing counts, and only for bytes that are exactly what the request asked for: a ranged
  // GET pinned by if_match, answered with that range of that version. Bytes reported are
  // never written again: a retry of a GET with a length asks only for the bytes after them
  // (If-Match still pins the version); any other retry checks it gets the same ones, or
  // fails. So a body cut short costs the server only the bytes still missing. The GET's
  // handler still says at the end whether the whole body arrived; a failed GET may have
  // reported some bytes. Clients that cannot report simply never call it.
  std::function<void(size_t bytes)> on_arrival;

  static GetTarget Fixed(char* data, size_t capacity) {
    GetTarget t;
    t.data = data;
    t.capacity = capacity;
    return t;
  }
  static GetTarget Growable(std::vector<char>* v, size_t limit = 0) {
    GetTarget t;
    t.growable = v;
    t.growable_limit = limit;
    return t;
  }
};

}  // namespace ossmount
