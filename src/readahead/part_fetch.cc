// SequentialReader: fetching parts (disk cache, then a pinned ranged GET) and direct reads.
#include <boost/asio/post.hpp>
#include <mutex>
#include <optional>

#include "common/metrics.h"
#include "readahead/reader_parts.h"
#include "readahead/sequential_reader.h"

namespace ossmount::readahead {
namespace {

// Parts of large files, by how they were fetched: "readahead" (ahead of the reader),
// "demand" (a reader waited for it), "disk" (found in the disk cache).
metrics::Counter& Parts(const char* source) {
  return metrics::Registry::Global().GetCounter(
      "ossmount_parts_total", "Parts of large files started, by source.", {{"source", source}});
}
metrics::Counter& ReadaheadBytes() {
  static metrics::Counter& c = metrics::Registry::Global().GetCounter(
      "ossmount_readahead_bytes_total", "Bytes requested by readahead (parts ahead of readers).");
  return c;
}

// A piece of at least two of these goes as several GETs at once (at most kMaxSplit): where
// one connection is slower than the reader, its bytes arrive that many times sooner.
constexpr uint64_t kSplitUnit = 1 << 20;
constexpr size_t kMaxSplit = 8;

}  // namespace

// The GETs of one split piece: the bytes each has in place, and how they ended.
struct SplitFetch {
  std::mutex mu;
  std::vector<uint64_t> starts, lengths, arrived;
  uint64_t reported = 0;  // bytes in place from the piece's start, last told to the reader
  size_t remaining = 0;
  Status failure;
  std::optional<GetResult> result;  // a successful GET's (the object's headers)
};

Status SequentialReader::CheckGet(const Result<GetResult>& r, uint64_t expected_bytes) const {
  Status status = CheckPinnedRange(r, {key_, etag_, size_, 0, expected_bytes});
  if (!r.ok()) status.Prefix("reading '" + key_ + "'");
  return status;
}

void SequentialReader::StartParts(StartList parts) {
  StartList from_disk;
  for (auto& part : parts) {
    if (StartPart(part)) from_disk.push_back(part);
  }
  // Their CRC-64s are computed on an io thread, not on this (maybe a FUSE) thread, and once
  // the list's GETs are sent (FoldPart asks whether one was).
  for (auto& part : from_disk) {
    boost::asio::post(io_, [self = shared_from_this(), part]() { self->FoldPart(part); });
  }
}

bool SequentialReader::StartPart(const std::shared_ptr<Part>& part) {
  const data::BlockId id{key_, etag_, part->index};
  const bool cached = shared_.disk_cache && part->index != kPieceIndex && !skip_disk_cache_.load();
  PartBuffer& buffer = *part->buffer;  // nobody else touches it until the part is ready
  if (cached) {
    if (auto hit = shared_.disk_cache->Get(id, part->length)) {
      static metrics::Counter& disk = Parts("disk");
      disk.Add();
      buffer.vec = std::move(*hit);
      buffer.data = const_cast<char*>(buffer.vec->data());  // never written
      part->from_disk = true;
      OnPartDone(part, Status(), nullptr);
      return true;
    }
  }
  buffer.Allocate(part->length, /*shareable=*/cached);
  static metrics::Counter& readahead = Parts("readahead");
  static metrics::Counter& demand = Parts("demand");
  (part->readahead ? readahead : demand).Add();
  if (part->readahead) ReadaheadBytes().Add(part->length);
  if (part->index == kPieceIndex && part->length >= 2 * kSplitUnit) {
    StartSplitPiece(part, std::min<size_t>(kMaxSplit, part->length / kSplitUnit));
    return false;
  }
  GetRequest request =
      PinnedGetRequest({key_, etag_, size_, part->offset, part->length},
                       part->readahead ? Priority::kPrefetch : Priority::kForeground, part->cancel);
  GetTarget target = GetTarget::Fixed(buffer.data, part->length);
  target.on_arrival = [self = shared_from_this(), part](size_t bytes) {
    self->OnPartArrival(part, bytes);
  };
  sent_get_.store(true);
  client_->Get(request, std::move(target),
               [self = shared_from_this(), part, id, cached](Result<GetResult> r) {
                 Status status = self->CheckGet(r, part->length);
                 if (status.ok() && cached) self->shared_.disk_cache->Put(id, part->buffer->vec);
                 const bool ok = status.ok();
                 self->OnPartDone(part, std::move(status), ok ? &r.value() : nullptr);
                 // After the reads waiting for the part were woken: they need not wait for
                 // its CRC-64 too (only a read reaching the end of the object does).
                 if (ok && part->index != kPieceIndex) self->FoldPart(part);
               });
  return false;
}

void SequentialReader::StartSplitPiece(const std::shared_ptr<Part>& part, size_t count) {
  auto split = std::make_shared<SplitFetch>();
  const uint64_t unit = part->length / count;
  for (size_t i = 0; i < count; ++i) {
    split->starts.push_back(i * unit);
    split->lengths.push_back(i + 1 == count ? part->length - i * unit : unit);
  }
  split->arrived.assign(count, 0);
  split->remaining = count;
  sent_get_.store(true);
  for (size_t i = 0; i < count; ++i) {
    const uint64_t start = split->starts[i], length = split->lengths[i];
    GetRequest request = PinnedGetRequest({key_, etag_, size_, part->offset + start, length},
                                          Priority::kForeground, part->cancel);
    GetTarget target = GetTarget::Fixed(part->buffer->data + start, length);
    target.on_arrival = [self = shared_from_this(), part, split, i](size_t bytes) {
      // Under split->mu, so that the prefix told to the reader only ever grows.
      std::lock_guard lock(split->mu);
      split->arrived[i] = bytes;
      uint64_t prefix = 0;
      for (size_t j = 0; j < split->arrived.size(); ++j) {
        prefix += split->arrived[j];
        if (split->arrived[j] < split->lengths[j]) break;
      }
      if (prefix <= split->reported) return;
      split->reported = prefix;
      self->OnPartArrival(part, prefix);
    };
    client_->Get(request, std::move(target),
                 [self = shared_from_this(), part, split, length](Result<GetResult> r) {
                   Status status = self->CheckGet(r, length);
                   {
                     std::lock_guard lock(split->mu);
                     if (!status.ok() && split->failure.ok()) {
                       split->failure = std::move(status);
                       part->cancel->cancelled.store(true);  // the piece fails anyway
                     } else if (status.ok() && !split->result) {
                       split->result = std::move(r.value());
                     }
                     if (--split->remaining > 0) return;
                   }
                   if (!split->failure.ok()) {
                     self->OnPartDone(part, split->failure, nullptr);
                   } else {
                     self->OnPartDone(part, Status(), &*split->result);
                   }
                 });
  }
}

void SequentialReader::OnPartDone(const std::shared_ptr<Part>& part, Status status,
                                  const GetResult* got) {
  std::vector<std::function<void()>> waiters;
  std::shared_ptr<PartBuffer> dropped;  // a failed part's buffer, freed after the lock
  StartList start;
  FoldNews news;
  {
    std::lock_guard lock(mu_);
    --in_flight_;
    if (got) NoteGetLocked(*got);
    if (part->readahead) shared_.slots->Release();
    for (auto& waiter : part->waiters) waiters.push_back(std::move(waiter.wake));
    part->waiters.clear();
    part->next_wake.store(~0ull);
    auto it = parts_.find(part->index);
    const bool kept = it != parts_.end() && it->second == part;
    if (status.ok()) {
      part->arrived.store(part->length);
      part->state = Part::State::kReady;
      part->used = Now();
    } else {
      part->state = Part::State::kFailed;
      part->status = std::move(status);
      dropped = std::move(part->buffer);
      if (kept) parts_.erase(it);
      for (auto& piece : pieces_) {
        if (piece == part) piece.reset();
      }
    }
    if (part->index != kPieceIndex && part->state == Part::State::kFailed) {
      SettlePartLocked(part->index, {}, news);  // its CRC will not come
    } else if (got) {
      ReleaseStuckWaitersLocked(news);  // the GET may have said no CRC is sent
    }
    // A slot (and maybe memory) came free: continue the readahead.
    if (!closed_ && part->state == Part::State::kReady) TopUpLocked(start);
  }
  for (auto& w : waiters) w();
  StartParts(std::move(start));
  DeliverFoldNews(std::move(news));
}

void SequentialReader::ReadDirect(uint64_t offset, uint64_t length, ReadCallback done) {
  auto buffer = std::make_shared<PartBuffer>();
  shared_.budget->Reserve(length);
  buffer->reservation = data::Reservation(shared_.budget, length);
  buffer->Allocate(length, /*shareable=*/false);
  GetRequest request =
      PinnedGetRequest({key_, etag_, size_, offset, length}, Priority::kForeground);
  sent_get_.store(true);
  client_->Get(
      request, GetTarget::Fixed(buffer->data, length),
      [self = shared_from_this(), buffer, length, done = std::move(done)](Result<GetResult> r) {
        Status status = self->CheckGet(r, length);
        if (!status.ok()) return done(status);
        FoldNews news;
        {
          std::lock_guard lock(self->mu_);
          self->NoteGetLocked(*r);
          self->ReleaseStuckWaitersLocked(news);  // the GET may have said no CRC is sent
        }
        self->DeliverFoldNews(std::move(news));
        ReadBytes reply;
        reply.data = buffer->data;
        reply.size = length;
        reply.owner = buffer;
        done(std::move(reply));
      });
}

}  // namespace ossmount::readahead
