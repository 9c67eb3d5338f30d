// WarmupQueue: a warm-up job's files listed and not started yet, first in first out, packed
// one after another in blocks of 64 KiB: size, key, etag and the path (only its length when
// it ends the key, as a listed key's path does). About 100 bytes a file for an ImageNet key
// ("imagenet/train/n01440764/n01440764_10026.JPEG", a 34-byte etag) against about 260 in a
// deque<PrefetchItem>. A block goes as soon as its last file is taken, so Bytes() follows
// the queue down; the control channel's memory budget charges it, and BytesAfter predicts
// it before a page of listed files is queued.
//
// Thread-safety: none; the prefetcher guards it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "prefetch/prefetch_item.h"

namespace ossmount::prefetch {

class WarmupQueue {
 public:
  static constexpr size_t kBlockBytes = 64 << 10;

  void Push(const PrefetchItem& item);
  // A file to start before the others (one the disk cache was too busy to take).
  void PushFront(PrefetchItem item);
  // REQUIRES: !empty().
  PrefetchItem Pop();
  void Clear();

  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  // What the queue holds: its blocks, and the files pushed to the front.
  uint64_t Bytes() const { return bytes_; }
  // Bytes() once `items` are pushed.
  uint64_t BytesAfter(const std::vector<PrefetchItem>& items) const;

 private:
  struct Block {
    std::unique_ptr<char[]> data;
    size_t capacity = 0;
    size_t begin = 0;  // the next record to pop
    size_t end = 0;    // where the next record goes
  };
  static size_t RecordBytes(const PrefetchItem& item);
  static uint64_t BlockBytes(size_t capacity) { return capacity + sizeof(Block); }
  static uint64_t ItemBytes(const PrefetchItem& item);

  std::deque<Block> blocks_;
  std::deque<PrefetchItem> front_;
  size_t count_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace ossmount::prefetch
