#include "fs/object_data.h"

#include <algorithm>

#include "common/page_buffer.h"
#include "fs/fs_metrics.h"

namespace ossmount::fs {

ObjectData::ObjectData(boost::asio::io_context& io, std::shared_ptr<ObjectClient> client,
                       const FsOptions& options)
    : io_(io),
      client_(std::move(client)),
      readahead_(options.readahead),
      disk_cache_(options.disk_cache),
      budget_(std::make_shared<data::MemoryBudget>(options.max_memory)),
      slots_(std::make_shared<readahead::FetchSlots>(readahead_.global_concurrency)),
      whole_objects_(io, client_, budget_, disk_cache_) {
  RegisterMemoryGauges(budget_);
  // Recycled part buffers are resident memory beside the budget: an eighth of it at most.
  PageBuffer::SetPoolLimit(
      std::min<uint64_t>(PageBuffer::kDefaultPoolLimit, options.max_memory / 8));
}

ObjectData::~ObjectData() { budget_->Release(transport_bytes_.load(std::memory_order_relaxed)); }

void ObjectData::CountTransportBuffers(uint64_t bytes) {
  budget_->Reserve(bytes);
  transport_bytes_.fetch_add(bytes, std::memory_order_relaxed);
}

std::shared_ptr<readahead::SequentialReader> ObjectData::NewLargeFileReader(
    const std::string& key, uint64_t size, const std::string& etag, std::optional<uint64_t> crc64) {
  readahead::ReaderOptions o;
  o.object_crc64 = crc64;  // from the listing or a HEAD; a GET's header replaces it
  o.initial_window = readahead_.initial_window;
  o.max_window = readahead_.max_window;
  o.part_size = readahead_.part_size;
  o.per_file_concurrency = readahead_.per_file_concurrency;
  o.slack = std::max(o.slack, readahead_.kernel_readahead);
  o.late_tolerance = 4 * readahead_.kernel_readahead;
  readahead::SharedReadState shared{budget_, slots_, disk_cache_};
  return std::make_shared<readahead::SequentialReader>(io_, client_, key, size, etag, o,
                                                       std::move(shared));
}

}  // namespace ossmount::fs
