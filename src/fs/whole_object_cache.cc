#include "fs/whole_object_cache.h"

#include <boost/asio/post.hpp>

namespace ossmount::fs {

WholeObjectCache::WholeObjectCache(boost::asio::io_context& io,
                                   std::shared_ptr<ObjectClient> client)
    : io_(io), client_(std::move(client)), state_(std::make_shared<State>()) {}

void WholeObjectCache::Fetch(const std::string& key, const std::string& etag, uint64_t size,
                             BlobCallback done) {
  SlotKey slot_key{key, etag};
  std::shared_ptr<const Blob> live;  // released after the lock, never under it
  bool start = false;
  {
    std::lock_guard lock(state_->mu);
    Slot& slot = state_->slots[slot_key];
    live = slot.blob.lock();
    if (!live) {
      slot.waiters.push_back(std::move(done));
      if (!slot.fetching) {
        slot.fetching = true;
        start = true;
      }
    }
  }
  if (live) {
    boost::asio::post(io_, [done = std::move(done), live]() mutable { done(std::move(live)); });
    return;
  }
  if (!start) return;

  auto buffer = std::make_shared<Blob>(size);
  GetRequest request;
  request.key = key;
  request.if_match = etag;
  client_->Get(
      request, GetTarget::Fixed(buffer->data(), buffer->size()),
      [state = state_, slot_key, buffer, size, etag](Result<GetResult> r) mutable {
        if (!r.ok()) {
          Status s = r.status();
          s.Prefix("reading '" + slot_key.first + "'");
          OnFetched(*state, slot_key, s);
          return;
        }
        if (r->bytes != size || r->object_size != size ||
            (!etag.empty() && !r->etag.empty() && r->etag != etag)) {
          OnFetched(*state, slot_key,
                    Status(ErrorCode::kPreconditionFailed,
                           "'" + slot_key.first +
                               "' changed since it was opened (size or etag "
                               "differs)"));
          return;
        }
        // The deleter removes the entry once the last holder lets go, unless a new
        // fetch of the same (key, etag) started meanwhile.
        std::weak_ptr<State> weak_state = state;
        Blob* raw = new Blob(std::move(*buffer));
        buffer.reset();
        std::shared_ptr<const Blob> blob(raw, [weak_state, slot_key](const Blob* b) {
          delete b;
          if (auto st = weak_state.lock()) {
            std::lock_guard lock(st->mu);
            auto it = st->slots.find(slot_key);
            if (it != st->slots.end() && !it->second.fetching && it->second.blob.expired()) {
              st->slots.erase(it);
            }
          }
        });
        OnFetched(*state, slot_key, std::move(blob));
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
