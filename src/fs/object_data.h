// ObjectData: where open files' bytes come from. Small objects whole, shared by their readers
// (WholeObjectCache); large ones through a SequentialReader per open file. All their buffers
// count in one MemoryBudget (FsOptions::max_memory), and so do the transport's buffers
// (CountTransportBuffers) until it is destroyed.
//
// Thread-safety: thread-safe.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "data/memory_budget.h"
#include "fs/fs_options.h"
#include "fs/whole_object_cache.h"
#include "ossmount/object_client.h"
#include "readahead/fetch_slots.h"
#include "readahead/sequential_reader.h"

namespace ossmount::fs {

class ObjectData {
 public:
  ObjectData(boost::asio::io_context& io, std::shared_ptr<ObjectClient> client,
             const FsOptions& options);
  ~ObjectData();
  ObjectData(const ObjectData&) = delete;
  ObjectData& operator=(const ObjectData&) = delete;

  boost::asio::io_context& io() const { return io_; }
  const std::shared_ptr<ObjectClient>& client() const { return client_; }
  const std::shared_ptr<data::MemoryBudget>& budget() const { return budget_; }
  const std::shared_ptr<data::DiskBlockCache>& disk_cache() const { return disk_cache_; }
  WholeObjectCache& whole_objects() { return whole_objects_; }
  const WholeObjectCache& whole_objects() const { return whole_objects_; }

  // The reader of one open large file, sharing the budget, the readahead slots and the disk
  // cache with the others. Close() it at release.
  std::shared_ptr<readahead::SequentialReader> NewLargeFileReader(const std::string& key,
                                                                  uint64_t size,
                                                                  const std::string& etag,
                                                                  std::optional<uint64_t> crc64);
  // Reserved as an on-demand read would be (always granted): readahead then has that much
  // less room, so that the budget still bounds every buffer.
  void CountTransportBuffers(uint64_t bytes);

 private:
  boost::asio::io_context& io_;
  const std::shared_ptr<ObjectClient> client_;
  const ReadaheadOptions readahead_;
  const std::shared_ptr<data::DiskBlockCache> disk_cache_;
  const std::shared_ptr<data::MemoryBudget> budget_;
  // Readahead GETs in flight across all open large files (ReadaheadOptions::global_concurrency).
  const std::shared_ptr<readahead::FetchSlots> slots_;
  WholeObjectCache whole_objects_;
  std::atomic<uint64_t> transport_bytes_{0};
};

}  // namespace ossmount::fs
