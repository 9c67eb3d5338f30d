// WholeObjectCache: small objects fetched whole, once, and shared while someone reads them.
//
// Fetch(key, etag, size) yields the whole object as one immutable buffer. The first caller
// for a (key, etag) sends ONE GET (offset 0, no length, If-Match etag; the client verifies
// the body against the server's CRC-64); callers arriving while it is in flight wait for the
// same GET (single-flight); callers arriving while any holder still keeps the buffer get it
// at once. The cache itself holds no strong reference: the buffer is freed, and its entry
// removed, when the last holder (open file handles, in-flight read replies) lets go.
//
// A body that is not exactly `size` bytes, or an etag other than `etag`, means the object
// changed since its attributes were read: kPreconditionFailed (ESTALE). Errors are not
// cached.
//
// Thread-safety: thread-safe. mu_ (inside State) is a leaf lock; no buffer is released and
// no callback runs while it is held (the buffer's deleter takes it).
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ossmount/object_client.h"

namespace ossmount::fs {

using Blob = std::vector<char>;
using BlobCallback = std::function<void(Result<std::shared_ptr<const Blob>>)>;

class WholeObjectCache {
 public:
  WholeObjectCache(boost::asio::io_context& io, std::shared_ptr<ObjectClient> client);

  // `done` is always called asynchronously (posted when the buffer is already live).
  void Fetch(const std::string& key, const std::string& etag, uint64_t size, BlobCallback done);

  // Entries (live buffers plus fetches in flight), for tests.
  size_t entry_count() const;

 private:
  using SlotKey = std::pair<std::string, std::string>;  // (key, etag)
  struct Slot {
    std::weak_ptr<const Blob> blob;
    bool fetching = false;
    std::vector<BlobCallback> waiters;
  };
  struct State {
    std::mutex mu;  // guards slots
    std::map<SlotKey, Slot> slots;
  };

  static void OnFetched(State& state, const SlotKey& slot_key,
                        Result<std::shared_ptr<const Blob>> result);

  boost::asio::io_context& io_;
  std::shared_ptr<ObjectClient> client_;
  std::shared_ptr<State> state_;
};

}  // namespace ossmount::fs
