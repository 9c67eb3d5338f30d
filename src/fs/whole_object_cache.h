// WholeObjectCache: small objects fetched whole, once, and shared while someone reads them.
//
// Fetch(key, etag, size) yields the whole object as one immutable buffer. The first caller
// for a (key, etag) sends ONE GET (offset 0, no length, If-Match etag; the client verifies
// the body against the server's CRC-64); callers arriving while it is in flight wait for the
// same GET (single-flight); callers arriving while any holder still keeps the buffer get it
// at once. The cache itself holds no strong reference: the buffer is freed, and its entry
// removed, when the last holder (open file handles, in-flight read replies) lets go.
//
// Memory: every buffer reserves its size in the shared MemoryBudget (Reserve: an on-demand
// read is never refused) for exactly as long as it lives; the buffer's deleter releases it.
//
// Disk cache (optional): before the GET, the block (key, etag, kWholeObject) is looked up in
// the DiskBlockCache; a verified hit sends no request. After a successful GET the buffer is
// handed to the disk cache (shared, not copied; written in the background).
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

#include "data/disk_block_cache.h"
#include "data/memory_budget.h"
#include "ossmount/object_client.h"

namespace ossmount::fs {

using Blob = ByteBuffer;  // uninitialized when sized: a GET or a disk read fills it
using BlobCallback = std::function<void(Result<std::shared_ptr<const Blob>>)>;

class WholeObjectCache {
 public:
  // `budget` null: no accounting; `disk` null: no disk cache.
  WholeObjectCache(boost::asio::io_context& io, std::shared_ptr<ObjectClient> client,
                   std::shared_ptr<data::MemoryBudget> budget = nullptr,
                   std::shared_ptr<data::DiskBlockCache> disk = nullptr);

  // `done` runs on the calling thread, before Fetch returns, when the bytes are at hand: a
  // live buffer, or a verified disk-cache block (read here, so the caller's thread does the
  // disk read: the FUSE threads are there to block, and a handoff to an io_context thread
  // cost two context switches per cached file). Otherwise it runs on an io_context thread
  // when the GET completes; joiners of a fetch in flight run wherever it completes.
  // Callers must not hold a lock `done` takes.
  void Fetch(const std::string& key, const std::string& etag, uint64_t size, BlobCallback done);

  // For prefetching (DatasetPrefetcher): like Fetch, but the GET goes out at
  // Priority::kPrefetch (on-demand reads overtake it in the fetch engine's queue) and its
  // buffer is taken from the budget with TryReserve: when the budget refuses, `done` gets
  // kNoSpace and nothing is sent. A live buffer, or a fetch in flight (prefetch or
  // on-demand), is shared exactly as with Fetch: one GET per (key, etag), whoever asks
  // first. The disk cache is not consulted (the caller checks it first); the fetched
  // buffer is handed to it like any other.
  void Prefetch(const std::string& key, const std::string& etag, uint64_t size, BlobCallback done);

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
    std::shared_ptr<ObjectClient> client;        // immutable
    std::shared_ptr<data::MemoryBudget> budget;  // immutable; may be null
    std::shared_ptr<data::DiskBlockCache> disk;  // immutable; may be null
    std::mutex mu;                               // guards slots
    std::map<SlotKey, Slot> slots;
  };
  using ReservationPtr = std::shared_ptr<data::Reservation>;

  // The disk cache's copy if it has a verified one, else StartGet. Runs posted.
  static void LoadFromDisk(const std::shared_ptr<State>& state, const SlotKey& slot_key,
                           uint64_t size);
  static void StartGet(const std::shared_ptr<State>& state, const SlotKey& slot_key, uint64_t size,
                       Priority priority = Priority::kForeground,
                       ReservationPtr reservation = nullptr);
  // The buffer callers share: `bytes` plus a deleter that releases `reservation` and
  // removes the slot once the last holder lets go.
  static std::shared_ptr<const Blob> Publish(const std::shared_ptr<State>& state,
                                             const SlotKey& slot_key,
                                             std::shared_ptr<const Blob> bytes,
                                             ReservationPtr reservation);
  static ReservationPtr Reserve(const State& state, uint64_t size);
  // Joins a live buffer or a fetch in flight; else marks the slot fetching and returns
  // true (the caller starts the fetch). `live` is set when a buffer is already there.
  bool JoinOrClaim(const SlotKey& slot_key, BlobCallback& done, std::shared_ptr<const Blob>& live);
  static void OnFetched(State& state, const SlotKey& slot_key,
                        Result<std::shared_ptr<const Blob>> result);

  boost::asio::io_context& io_;
  std::shared_ptr<State> state_;
};

}  // namespace ossmount::fs
