// Transfer: how a request is sent, what it sends and where its body goes (Priority,
// CancelFlag, SharedBytes, GetTarget). A leaf of the public headers: the fetch engine
// (src/http) and the object clients that use it both need these, and the engine must not
// depend on the ObjectClient interface above it.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ossmount {

// Bytes shared read-only between their writer and the transfers that send them (a request
// body). `owner` keeps them alive: a string, an upload's part buffer (an anonymous mapping),
// anything. Copies share the owner and never the bytes, so every attempt of a request, and
// the request's handler, see the same bytes with no copy, for as long as any copy is held.
// The owner must not change the bytes while a copy is held. A default SharedBytes is empty.
class SharedBytes {
 public:
  SharedBytes() = default;
  SharedBytes(std::shared_ptr<const void> owner, const char* data, size_t size)
      : owner_(std::move(owner)), data_(size > 0 ? data : ""), size_(size) {}

  static SharedBytes Copy(std::string_view bytes) { return FromString(std::string(bytes)); }
  static SharedBytes FromString(std::string&& bytes) {
    if (bytes.empty()) return SharedBytes();
    auto owner = std::make_shared<const std::string>(std::move(bytes));
    return SharedBytes(owner, owner->data(), owner->size());
  }

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::string_view view() const { return std::string_view(data_, size_); }
  // Bytes [offset, offset + length) of these, clamped to them, sharing their owner.
  SharedBytes Slice(size_t offset, size_t length) const {
    offset = offset < size_ ? offset : size_;
    length = length < size_ - offset ? length : size_ - offset;
    return SharedBytes(owner_, data_ + offset, length);
  }

 private:
  std::shared_ptr<const void> owner_;
  const char* data_ = "";  // never null, so that it may be handed to C APIs as it is
  size_t size_ = 0;
};

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
