#include "fs/ranged_reader.h"

#include <atomic>
#include <boost/asio/post.hpp>
#include <cstring>

namespace ossmount::fs {

struct RangedReader::Gather {
  std::vector<std::shared_ptr<Chunk>> chunks;  // in order
  std::atomic<size_t> pending{0};
  uint64_t chunk_size = 0;
  uint64_t offset = 0;
  uint64_t end = 0;
  Callback<ReadReply> done;
};

RangedReader::RangedReader(boost::asio::io_context& io, std::shared_ptr<ObjectClient> client,
                           std::string key, uint64_t size, std::string etag, Options options)
    : io_(io),
      client_(std::move(client)),
      key_(std::move(key)),
      size_(size),
      etag_(std::move(etag)),
      options_(options) {}

void RangedReader::Read(uint64_t offset, size_t size, Callback<ReadReply> done) {
  if (offset >= size_ || size == 0) {
    boost::asio::post(io_, [done = std::move(done)]() { done(ReadReply{}); });
    return;
  }
  auto gather = std::make_shared<Gather>();
  gather->chunk_size = options_.chunk_size;
  gather->offset = offset;
  gather->end = std::min<uint64_t>(size_, offset + size);
  gather->done = std::move(done);
  const uint64_t first = offset / options_.chunk_size;
  const uint64_t last = (gather->end - 1) / options_.chunk_size;

  std::vector<std::shared_ptr<Chunk>> to_fetch;
  {
    std::lock_guard lock(mu_);
    size_t not_ready = 0;
    for (uint64_t i = first; i <= last; ++i) {
      auto& slot = chunks_[i];
      if (!slot) {
        slot = std::make_shared<Chunk>();
        slot->index = i;
        to_fetch.push_back(slot);
      }
      slot->last_use = ++tick_;
      if (!slot->ready) ++not_ready;
      gather->chunks.push_back(slot);
    }
    // Set before any waiter is registered: completions need mu_ to run waiters.
    gather->pending = not_ready;
    for (auto& chunk : gather->chunks) {
      if (!chunk->ready) {
        chunk->waiters.push_back([gather]() {
          if (--gather->pending == 0) Assemble(gather);
        });
      }
    }
    if (not_ready == 0) {
      boost::asio::post(io_, [gather]() { Assemble(gather); });
    }
  }
  for (auto& chunk : to_fetch) StartFetch(chunk);
}

void RangedReader::StartFetch(std::shared_ptr<Chunk> chunk) {
  const uint64_t start = chunk->index * options_.chunk_size;
  const uint64_t length = std::min<uint64_t>(options_.chunk_size, size_ - start);
  auto data = std::make_shared<std::vector<char>>(length);
  GetRequest request;
  request.key = key_;
  request.offset = start;
  request.length = length;
  request.if_match = etag_;
  client_->Get(request, GetTarget::Fixed(data->data(), data->size()),
               [self = shared_from_this(), chunk, data, length](Result<GetResult> r) {
                 Status status;
                 if (!r.ok()) {
                   status = r.status();
                   if (status.code() == ErrorCode::kInvalidRange) {
                     // The object shrank below the size seen at open.
                     status = Status(ErrorCode::kPreconditionFailed, status.message());
                   }
                   status.Prefix("reading '" + self->key_ + "'");
                 } else if (r->bytes != length || r->object_size != self->size_ ||
                            (!self->etag_.empty() && !r->etag.empty() && r->etag != self->etag_)) {
                   status = Status(
                       ErrorCode::kPreconditionFailed,
                       "'" + self->key_ + "' changed since it was opened (size or etag differs)");
                 } else {
                   chunk->data = data;  // published to readers under mu_ via `ready`
                 }
                 self->OnFetched(chunk, status);
               });
}

void RangedReader::OnFetched(const std::shared_ptr<Chunk>& chunk, Status status) {
  std::vector<std::function<void()>> waiters;
  std::vector<std::shared_ptr<Chunk>> evicted;  // destroyed after the lock
  {
    std::lock_guard lock(mu_);
    chunk->ready = true;
    chunk->status = status;
    waiters.swap(chunk->waiters);
    auto it = chunks_.find(chunk->index);
    if (!status.ok()) {
      if (it != chunks_.end() && it->second == chunk) chunks_.erase(it);
    }
    // Keep the most recently used ready chunks.
    while (true) {
      size_t ready = 0;
      auto oldest = chunks_.end();
      for (auto c = chunks_.begin(); c != chunks_.end(); ++c) {
        if (!c->second->ready) continue;
        ++ready;
        if (oldest == chunks_.end() || c->second->last_use < oldest->second->last_use) oldest = c;
      }
      if (ready <= options_.max_chunks) break;
      evicted.push_back(oldest->second);
      chunks_.erase(oldest);
    }
  }
  for (auto& w : waiters) w();
}

void RangedReader::Assemble(const std::shared_ptr<Gather>& gather) {
  for (const auto& chunk : gather->chunks) {
    if (!chunk->status.ok()) {
      gather->done(chunk->status);
      return;
    }
  }
  const uint64_t cs = gather->chunk_size;
  ReadReply reply;
  reply.size = gather->end - gather->offset;
  if (gather->chunks.size() == 1) {
    const auto& data = gather->chunks[0]->data;
    reply.data = data->data() + (gather->offset - gather->chunks[0]->index * cs);
    reply.owner = data;
  } else {
    auto buffer = std::make_shared<std::vector<char>>(reply.size);
    for (const auto& chunk : gather->chunks) {
      const uint64_t chunk_start = chunk->index * cs;
      const uint64_t from = std::max(gather->offset, chunk_start);
      const uint64_t to = std::min(gather->end, chunk_start + chunk->data->size());
      std::memcpy(buffer->data() + (from - gather->offset),
                  chunk->data->data() + (from - chunk_start), to - from);
    }
    reply.data = buffer->data();
    reply.owner = buffer;
  }
  gather->done(std::move(reply));
}

size_t RangedReader::cached_chunks() const {
  std::lock_guard lock(mu_);
  return chunks_.size();
}

}  // namespace ossmount::fs
