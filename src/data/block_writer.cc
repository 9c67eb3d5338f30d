#include "data/block_writer.h"

#include <algorithm>
#include <utility>

namespace ossmount::data {

BlockWriter::BlockWriter(const Limits& limits, WriteFn write)
    : limits_(limits), write_(std::move(write)) {
  const int n = std::max(1, limits_.threads);
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Loop(); });
}

BlockWriter::~BlockWriter() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();  // the threads drain the queue first
  }
}

BlockWriter::Enqueued BlockWriter::Enqueue(const BlockId& id, const BlockDigest& digest,
                                           std::shared_ptr<const ByteBuffer> data) {
  {
    std::lock_guard lock(mu_);
    if (stop_ || queued_.count(digest)) return Enqueued::kSkipped;
    const uint64_t bytes = data->size();
    if (queue_.size() >= limits_.max_blocks ||
        (!queue_.empty() && queued_bytes_ + bytes > limits_.max_bytes)) {
      return Enqueued::kFull;
    }
    queued_.insert(digest);
    queued_bytes_ += bytes;
    queue_.push_back(Pending{id, digest, std::move(data)});
  }
  work_cv_.notify_one();
  return Enqueued::kQueued;
}

void BlockWriter::Flush() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && writing_ == 0; });
}

size_t BlockWriter::pending() const {
  std::lock_guard lock(mu_);
  return queue_.size() + static_cast<size_t>(writing_);
}

void BlockWriter::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stopping, and everything queued is written
    Pending p = std::move(queue_.front());
    queue_.pop_front();
    queued_bytes_ -= p.data->size();
    ++writing_;
    lock.unlock();
    write_(p.id, p.digest, *p.data);
    p.data.reset();  // may free the caller's buffer: never under our lock
    lock.lock();
    queued_.erase(p.digest);
    --writing_;
    if (queue_.empty() && writing_ == 0) idle_cv_.notify_all();
  }
  idle_cv_.notify_all();
}

}  // namespace ossmount::data
