#include "fs/whole_object_cache.h"

#include <boost/asio/post.hpp>

#include "common/metrics.h"

namespace ossmount::fs {
namespace {

// Lookups of the memory cache of whole objects: "hit" (a live buffer), "shared" (joined a
// fetch in flight), "miss" (started a fetch: disk cache or GET).
metrics::Counter& Lookups(const char* result) {
  return metrics::Registry::Global().GetCounter(
      "ossmount_memory_cache_lookups_total",
      "First reads of small files, by where the bytes came from.", {{"result", result}});
}

}  // namespace

WholeObjectCache::WholeObjectCache(boost::asio::io_context& io,
                                   std::shared_ptr<ObjectClient> client,
                                   std::shared_ptr<data::MemoryBudget> budget,
                                   std::shared_ptr<data::DiskBlockCache> disk)
    : io_(io), state_(std::make_shared<State>()) {
  state_->client = std::move(client);
  state_->budget = std::move(budget);
  state_->disk = std::move(disk);
}

bool WholeObjectCache::JoinOrClaim(const SlotKey& slot_key, BlobCallback& done,
                                   std::shared_ptr<const Blob>& live) {
  std::lock_guard lock(state_->mu);
  Slot& slot = state_->slots[slot_key];
  live = slot.blob.lock();
  if (live) return false;
  slot.waiters.push_back(std::move(done));
  if (slot.fetching) return false;
  slot.fetching = true;
  return true;
}

void WholeObjectCache::Fetch(const std::string& key, const std::string& etag, uint64_t size,
                             BlobCallback done) {
  SlotKey slot_key{key, etag};
  std::shared_ptr<const Blob> live;  // released after the lock, never under it
  const bool start = JoinOrClaim(slot_key, done, live);
  static metrics::Counter& hits = Lookups("hit");
  static metrics::Counter& shared = Lookups("shared");
  static metrics::Counter& misses = Lookups("miss");
  (live ? hits : start ? misses : shared).Add();
  if (live) return done(std::move(live));
  if (!start) return;
  if (state_->disk) return LoadFromDisk(state_, slot_key, size);
  StartGet(state_, slot_key, size);
}

void WholeObjectCache::Prefetch(const std::string& key, const std::string& etag, uint64_t size,
                                BlobCallback done) {
  SlotKey slot_key{key, etag};
  std::shared_ptr<const Blob> live;  // released after the lock, never under it
  bool start = false;
  bool refused = false;
  {
    std::lock_guard lock(state_->mu);
    Slot& slot = state_->slots[slot_key];
    live = slot.blob.lock();
    if (!live) {
      if (slot.fetching) {
        slot.waiters.push_back(std::move(done));
      } else if (state_->budget && !state_->budget->TryReserve(size)) {
        // Refused before anyone could join: no on-demand reader ever sees this error.
        refused = true;
        state_->slots.erase(slot_key);
      } else {
        slot.waiters.push_back(std::move(done));
        slot.fetching = true;
        start = true;
      }
    }
  }
  if (live) {
    boost::asio::post(io_, [done = std::move(done), live]() mutable { done(std::move(live)); });
    return;
  }
  if (refused) {
    boost::asio::post(io_, [done = std::move(done)] {
      done(Status(ErrorCode::kNoSpace, "memory budget full (--max-memory)"));
    });
    return;
  }
  if (!start) return;
  ReservationPtr reservation =
      state_->budget ? std::make_shared<data::Reservation>(state_->budget, size) : nullptr;
  StartGet(state_, slot_key, size, Priority::kPrefetch, std::move(reservation));
}

WholeObjectCache::ReservationPtr WholeObjectCache::Reserve(const State& state, uint64_t size) {
  if (!state.budget) return nullptr;
  state.budget->Reserve(size);  // a reader is waiting: never refused
  return std::make_shared<data::Reservation>(state.budget, size);
}

void WholeObjectCache::LoadFromDisk(const std::shared_ptr<State>& state, const SlotKey& slot_key,
                                    uint64_t size) {
  ReservationPtr reservation = Reserve(*state, size);
  auto hit =
      state->disk->Get(data::BlockId{slot_key.first, slot_key.second, data::kWholeObject}, size);
  if (!hit || !*hit) {
    reservation.reset();  // StartGet reserves for its own buffer
    return StartGet(state, slot_key, size);
  }
  OnFetched(*state, slot_key, Publish(state, slot_key, std::move(*hit), std::move(reservation)));
}

void WholeObjectCache::StartGet(const std::shared_ptr<State>& state, const SlotKey& slot_key,
                                uint64_t size, Priority priority, ReservationPtr reservation) {
  if (!reservation) reservation = Reserve(*state, size);
  auto buffer = std::make_shared<Blob>(size);
  GetRequest request;
  request.key = slot_key.first;
  request.if_match = slot_key.second;
  request.priority = priority;
  state->client->Get(
      request, GetTarget::Fixed(buffer->data(), buffer->size()),
      [state, slot_key, buffer, size, reservation](Result<GetResult> r) mutable {
        const std::string& etag = slot_key.second;
        if (!r.ok()) {
          Status s = r.status();
          s.Prefix("reading '" + slot_key.first + "'");
          OnFetched(*state, slot_key, s);
          return;
        }
        if (Status changed = CheckPinnedGet(*r, slot_key.first, size, size, etag); !changed.ok()) {
          OnFetched(*state, slot_key, changed);
          return;
        }
        auto blob = Publish(state, slot_key, std::move(buffer), std::move(reservation));
        if (state->disk) {
          state->disk->Put(data::BlockId{slot_key.first, etag, data::kWholeObject}, blob);
        }
        OnFetched(*state, slot_key, std::move(blob));
      });
}

std::shared_ptr<const Blob> WholeObjectCache::Publish(const std::shared_ptr<State>& state,
                                                      const SlotKey& slot_key,
                                                      std::shared_ptr<const Blob> bytes,
                                                      ReservationPtr reservation) {
  // The deleter frees the bytes, releases the reservation, and removes the entry once the
  // last holder lets go, unless a new fetch of the same (key, etag) started meanwhile.
  std::weak_ptr<State> weak_state = state;
  const Blob* raw = bytes.get();
  return std::shared_ptr<const Blob>(
      raw, [weak_state, slot_key, bytes = std::move(bytes),
            reservation = std::move(reservation)](const Blob*) mutable {
        bytes.reset();
        reservation.reset();
        if (auto st = weak_state.lock()) {
          std::lock_guard lock(st->mu);
          auto it = st->slots.find(slot_key);
          if (it != st->slots.end() && !it->second.fetching && it->second.blob.expired()) {
            st->slots.erase(it);
          }
        }
      });
}

void WholeObjectCache::OnFetched(State& state, const SlotKey& slot_key,
                                 Result<std::shared_ptr<const Blob>> result) {
  std::vector<BlobCallback> waiters;
  {
    std::lock_guard lock(state.mu);
    auto it = state.slots.find(slot_key);
    if (it != state.slots.end()) {
      waiters.swap(it->second.waiters);
      it->second.fetching = false;
      if (result.ok()) {
        it->second.blob = *result;
      } else {
        state.slots.erase(it);
      }
    }
  }
  for (auto& w : waiters) w(result);
  // `result` (maybe the last reference, if every waiter dropped it) dies here, unlocked.
}

size_t WholeObjectCache::entry_count() const {
  std::lock_guard lock(state_->mu);
  return state_->slots.size();
}

}  // namespace ossmount::fs
