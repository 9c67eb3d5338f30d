#include "prefetch/dataset_fetcher.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>

#include "data/disk_block_cache.h"
#include "data/memory_budget.h"

namespace ossmount::prefetch {

// One large file into the disk cache, part after part (the blocks SequentialReader reads:
// index = offset / part_size, verified against size and etag like its parts). One GET in
// flight per file; a part already on disk costs nothing; memory comes from the budget
// with TryReserve (waits while refused), and a busy disk-cache writer is waited for.
struct DatasetFetcher::PartWarm : std::enable_shared_from_this<PartWarm> {
  std::shared_ptr<DatasetFetcher> fetcher;
  std::string key, etag;
  uint64_t size = 0;
  uint64_t index = 0;
  bool fetched_any = false;
  FetchDone done;
  boost::asio::steady_timer timer;
  explicit PartWarm(boost::asio::io_context& io) : timer(io) {}

  void Finish(FetchOutcome outcome, std::string error = "") {
    FetchResult r;
    r.outcome = outcome;
    r.bytes = size;
    r.error = std::move(error);
    boost::asio::post(timer.get_executor(),
                      [d = std::move(done), r = std::move(r)]() mutable { d(std::move(r)); });
  }
  void Later() {
    timer.expires_after(std::chrono::milliseconds(20));
    timer.async_wait(
        [self = shared_from_this()](const boost::system::error_code&) { self->Next(); });
  }
  void Next() {
    const Options& options = fetcher->options_;
    const uint64_t part = options.part_size;
    const auto& disk = options.disk_cache;
    while (index * part < size && disk->Contains(data::BlockId{key, etag, index})) ++index;
    if (index * part >= size) {
      return Finish(fetched_any ? FetchOutcome::kFetched : FetchOutcome::kAlreadyCached);
    }
    if (disk->Stats().pending >= kDiskBusyPending) return Later();
    const PinnedRange range{key, etag, size, index * part, std::min(part, size - index * part)};
    const auto& budget = options.budget;
    if (!budget->TryReserve(range.length)) return Later();
    // The buffer carries its reservation: released when the disk cache has written it.
    struct Held {
      ByteBuffer bytes;
      data::Reservation reservation;
    };
    auto held = std::make_shared<Held>();
    held->reservation = data::Reservation(budget, range.length);
    held->bytes.resize(range.length);
    fetcher->client_->Get(PinnedGetRequest(range, Priority::kPrefetch),
                          GetTarget::Fixed(held->bytes.data(), range.length),
                          [self = shared_from_this(), held, range](Result<GetResult> r) {
                            if (Status got = CheckPinnedRange(r, range); !got.ok()) {
                              return self->Finish(FetchOutcome::kFailed, got.message());
                            }
                            std::shared_ptr<const ByteBuffer> bytes(held, &held->bytes);
                            self->fetcher->options_.disk_cache->Put(
                                data::BlockId{self->key, self->etag, self->index},
                                std::move(bytes));
                            self->fetched_any = true;
                            ++self->index;
                            self->Next();
                          });
  }
};

DatasetFetcher::DatasetFetcher(boost::asio::io_context& io, std::shared_ptr<ObjectClient> client,
                               Options options, HintResolver resolve, WholeFetcher fetch_whole)
    : io_(io),
      client_(std::move(client)),
      options_(std::move(options)),
      resolve_(std::move(resolve)),
      fetch_whole_(std::move(fetch_whole)) {}

void DatasetFetcher::Post(FetchDone done, FetchResult result) {
  boost::asio::post(io_,
                    [d = std::move(done), r = std::move(result)]() mutable { d(std::move(r)); });
}

void DatasetFetcher::Fetch(const PrefetchItem& item, bool hold, FetchDone done) {
  if (!item.key.empty()) {
    return FetchObject(item.key, item.size, item.etag, hold, std::move(done));
  }
  // A hint: the path's attributes (from the listing cache, else one probe).
  resolve_(item.path, [self = shared_from_this(), hold,
                       done = std::move(done)](Result<std::optional<HintedFile>> r) mutable {
    FetchResult out;
    if (!r.ok()) {
      out.error = r.status().message();
      return done(std::move(out));
    }
    if (!r->has_value()) {
      out.outcome = FetchOutcome::kSkipped;
      out.error = "not a file";
      return done(std::move(out));
    }
    HintedFile& file = **r;
    // The kernel holds the bytes it was given, so the reader will not ask for them: a GET
    // would be fetched for nobody. (Warm-up fetches them all the same: it fills the disk.)
    if (file.page_cached) {
      out.outcome = FetchOutcome::kPageCached;
      out.bytes = file.size;
      return self->Post(std::move(done), std::move(out));
    }
    self->FetchObject(std::move(file.key), file.size, std::move(file.etag), hold, std::move(done));
  });
}

void DatasetFetcher::FetchObject(std::string key, uint64_t size, std::string etag, bool hold,
                                 FetchDone done) {
  FetchResult out;
  out.bytes = size;
  if (size == 0) {
    out.outcome = FetchOutcome::kSkipped;  // an empty file needs no GET
    return Post(std::move(done), std::move(out));
  }
  const auto& disk = options_.disk_cache;
  if (size > options_.small_file_threshold) {
    if (!hold && disk) {
      // Warm-up into the disk cache: the parts a reader of this file would look up.
      auto warm = std::make_shared<PartWarm>(io_);
      warm->fetcher = shared_from_this();
      warm->key = std::move(key);
      warm->etag = std::move(etag);
      warm->size = size;
      warm->done = std::move(done);
      boost::asio::post(io_, [warm] { warm->Next(); });
      return;
    }
    // In memory, large files are left to sequential readahead (src/readahead) when read.
    out.outcome = FetchOutcome::kSkipped;
    out.error = "larger than --small-file-threshold (warmed only into a disk cache)";
    return Post(std::move(done), std::move(out));
  }
  if (disk && disk->Contains(data::BlockId{key, etag, data::kWholeObject})) {
    out.outcome = FetchOutcome::kAlreadyCached;
    return Post(std::move(done), std::move(out));
  }
  if (!hold && disk && disk->Stats().pending >= kDiskBusyPending) {
    out.outcome = FetchOutcome::kBusy;
    return Post(std::move(done), std::move(out));
  }
  fetch_whole_(key, etag, size,
               [hold, size, done = std::move(done)](Result<std::shared_ptr<const void>> r) mutable {
                 FetchResult out;
                 out.bytes = size;
                 if (r.ok()) {
                   out.outcome = FetchOutcome::kFetched;
                   if (hold) out.hold = std::move(*r);
                 } else if (r.status().code() == ErrorCode::kNoSpace) {
                   // Disk mode: memory frees as the cache's writer drains, so wait; memory
                   // mode: the budget is what bounds the prefetcher.
                   out.outcome = hold ? FetchOutcome::kBudgetFull : FetchOutcome::kBusy;
                 } else {
                   out.error = r.status().message();
                 }
                 done(std::move(out));
               });
}

}  // namespace ossmount::prefetch
