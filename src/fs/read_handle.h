// ReadHandle: one file opened for reading, with the version (size, etag) pinned at open. A
// small file's bytes are the whole object, held after the first read; a large file has its
// own reader, Close()d at release. Who opened it and the bytes read through it go to the
// audit log.
//
// Thread-safety: the fields are set before the handle is shared and constant after, except
// the blob (behind mu_) and bytes_read (atomic).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "fs/audit.h"
#include "fs/filesystem.h"
#include "fs/whole_object_cache.h"
#include "readahead/sequential_reader.h"

namespace ossmount::fs {

struct ReadHandle {
  InodeId ino = 0;
  std::string path;
  std::string key;
  uint64_t size = 0;
  std::string etag;  // pinned at open
  bool small = false;
  // An appendable object: read as it grows, by ranged GETs of what the server has (its bytes
  // never change, so no version is pinned).
  bool growing = false;
  // The ReadObserver was told at open (large file, backing file): no READ will tell it.
  bool read_notified = false;
  // A reopen of a file whose bytes the kernel was given (page_cached, keep_cache, no
  // backing file): its release says whether the page cache still held them.
  bool page_cache_reopen = false;
  std::shared_ptr<readahead::SequentialReader> reader;  // large files
  Caller caller;
  std::chrono::system_clock::time_point opened = std::chrono::system_clock::now();
  std::chrono::steady_clock::time_point opened_steady = std::chrono::steady_clock::now();
  std::atomic<uint64_t> bytes_read{0};

  // Small files, after the first read; null before.
  std::shared_ptr<const Blob> blob() const {
    std::lock_guard lock(mu_);
    return blob_;
  }
  // Returns the previous blob, for the caller to release outside the lock.
  std::shared_ptr<const Blob> SetBlob(std::shared_ptr<const Blob> blob) {
    std::lock_guard lock(mu_);
    return std::exchange(blob_, std::move(blob));
  }

  AuditRecord Audit(bool at_unmount) const {
    AuditRecord record;
    record.path = path;
    record.caller = caller;
    record.opened = opened;
    record.duration = std::chrono::steady_clock::now() - opened_steady;
    record.bytes_read = bytes_read.load(std::memory_order_relaxed);
    record.size = size;
    record.at_unmount = at_unmount;
    return record;
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const Blob> blob_;
};

}  // namespace ossmount::fs
