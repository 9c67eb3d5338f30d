#include "prefetch/warmup_queue.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace ossmount::prefetch {

namespace {

// A record: this header, then the key, the path (unless it ends the key) and the etag.
struct RecordHeader {
  uint64_t size;
  uint32_t key_len;
  uint32_t path_len;
  uint32_t etag_len;
  uint8_t path_in_key;  // the path is the key's last path_len bytes
};
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 4 + 1;

bool PathEndsKey(const PrefetchItem& item) {
  return item.path.size() <= item.key.size() &&
         item.key.compare(item.key.size() - item.path.size(), item.path.size(), item.path) == 0;
}

// A std::string's heap block, if it has one (beyond the small-string buffer).
uint64_t HeapBytes(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

}  // namespace

size_t WarmupQueue::RecordBytes(const PrefetchItem& item) {
  return kHeaderBytes + item.key.size() + (PathEndsKey(item) ? 0 : item.path.size()) +
         item.etag.size();
}

uint64_t WarmupQueue::ItemBytes(const PrefetchItem& item) {
  return sizeof(PrefetchItem) + HeapBytes(item.path) + HeapBytes(item.key) + HeapBytes(item.etag);
}

uint64_t WarmupQueue::BytesAfter(const std::vector<PrefetchItem>& items) const {
  uint64_t bytes = bytes_;
  size_t room = blocks_.empty() ? 0 : blocks_.back().capacity - blocks_.back().end;
  for (const PrefetchItem& item : items) {
    const size_t need = RecordBytes(item);
    if (need > room) {
      const size_t capacity = std::max(kBlockBytes, need);
      bytes += BlockBytes(capacity);
      room = capacity;
    }
    room -= need;
  }
  return bytes;
}

void WarmupQueue::Push(const PrefetchItem& item) {
  const size_t need = RecordBytes(item);
  if (blocks_.empty() || blocks_.back().capacity - blocks_.back().end < need) {
    Block block;
    block.capacity = std::max(kBlockBytes, need);  // a record never spans two blocks
    block.data = std::make_unique<char[]>(block.capacity);
    bytes_ += BlockBytes(block.capacity);
    blocks_.push_back(std::move(block));
  }
  Block& b = blocks_.back();
  const bool in_key = PathEndsKey(item);
  RecordHeader h{item.size, static_cast<uint32_t>(item.key.size()),
                 static_cast<uint32_t>(item.path.size()), static_cast<uint32_t>(item.etag.size()),
                 static_cast<uint8_t>(in_key ? 1 : 0)};
  char* p = b.data.get() + b.end;
  std::memcpy(p, &h.size, 8);
  std::memcpy(p + 8, &h.key_len, 4);
  std::memcpy(p + 12, &h.path_len, 4);
  std::memcpy(p + 16, &h.etag_len, 4);
  p[20] = static_cast<char>(h.path_in_key);
  p += kHeaderBytes;
  std::memcpy(p, item.key.data(), item.key.size());
  p += item.key.size();
  if (!in_key) {
    std::memcpy(p, item.path.data(), item.path.size());
    p += item.path.size();
  }
  std::memcpy(p, item.etag.data(), item.etag.size());
  b.end += need;
  ++count_;
}

void WarmupQueue::PushFront(PrefetchItem item) {
  bytes_ += ItemBytes(item);
  front_.push_front(std::move(item));
  ++count_;
}

PrefetchItem WarmupQueue::Pop() {
  assert(count_ > 0);
  --count_;
  if (!front_.empty()) {
    PrefetchItem item = std::move(front_.front());
    front_.pop_front();
    bytes_ -= ItemBytes(item);
    return item;
  }
  Block& b = blocks_.front();
  const char* p = b.data.get() + b.begin;
  RecordHeader h{};
  std::memcpy(&h.size, p, 8);
  std::memcpy(&h.key_len, p + 8, 4);
  std::memcpy(&h.path_len, p + 12, 4);
  std::memcpy(&h.etag_len, p + 16, 4);
  h.path_in_key = static_cast<uint8_t>(p[20]);
  p += kHeaderBytes;
  PrefetchItem item;
  item.size = h.size;
  item.key.assign(p, h.key_len);
  p += h.key_len;
  if (h.path_in_key) {
    item.path.assign(item.key, h.key_len - h.path_len, h.path_len);
  } else {
    item.path.assign(p, h.path_len);
    p += h.path_len;
  }
  item.etag.assign(p, h.etag_len);
  p += h.etag_len;
  b.begin = static_cast<size_t>(p - b.data.get());
  if (b.begin == b.end) {  // its last record: the block goes, even the one being filled
    bytes_ -= BlockBytes(b.capacity);
    blocks_.pop_front();
  }
  return item;
}

void WarmupQueue::Clear() {
  blocks_.clear();
  front_.clear();
  count_ = 0;
  bytes_ = 0;
}

}  // namespace ossmount::prefetch
