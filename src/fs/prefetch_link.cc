#include "fs/prefetch_link.h"

#include <optional>
#include <utility>
#include <vector>

#include "meta/dir_snapshot.h"
#include "meta/key_mapping.h"
#include "prefetch/dataset_fetcher.h"

namespace ossmount::fs {
namespace {

using prefetch::DatasetFetcher;

Status Unmounted() { return Status(ErrorCode::kCancelled, "unmounted"); }

DatasetFetcher::HintResolver ResolveHintsOf(std::weak_ptr<ObjectFilesystem> weak) {
  return [weak](const std::string& path,
                std::function<void(Result<std::optional<DatasetFetcher::HintedFile>>)> done) {
    auto fs = weak.lock();
    if (!fs) return done(Unmounted());
    fs->listings()->Resolve(
        path, [fs, path, done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) {
          if (!r.ok()) return done(r.status());
          if (!r->has_value() || (*r)->is_dir()) {
            return done(std::optional<DatasetFetcher::HintedFile>());
          }
          const meta::NodeAttr& attr = **r;
          DatasetFetcher::HintedFile file;
          file.key = meta::FileKey(fs->options().prefix, path);
          file.size = attr.size;
          file.etag = attr.etag;
          file.page_cached = fs->PageCached(path);
          done(std::optional(std::move(file)));
        });
  };
}

DatasetFetcher::WholeFetcher FetchWholeOf(std::weak_ptr<ObjectFilesystem> weak) {
  return [weak](const std::string& key, const std::string& etag, uint64_t size,
                std::function<void(Result<std::shared_ptr<const void>>)> done) {
    auto fs = weak.lock();
    if (!fs) return done(Unmounted());
    fs->data().whole_objects().Prefetch(
        key, etag, size, [done = std::move(done)](Result<std::shared_ptr<const Blob>> r) {
          if (!r.ok()) return done(r.status());
          done(std::shared_ptr<const void>(std::move(*r)));
        });
  };
}

prefetch::Lister WarmupListerOf(std::weak_ptr<ListingService> weak) {
  return
      [weak](const std::string& path, prefetch::ListBatch batch, std::function<void(Status)> done) {
        auto listings = weak.lock();
        if (!listings) return done(Unmounted());
        listings->ListForWarmup(path, std::move(batch), std::move(done));
      };
}

}  // namespace

std::shared_ptr<prefetch::DatasetPrefetcher> MakeDatasetPrefetcher(
    const std::shared_ptr<ObjectFilesystem>& filesystem) {
  const FsOptions& options = filesystem->options();
  ObjectData& data = filesystem->data();
  prefetch::DatasetPrefetchOptions o = options.dataset_prefetch;
  const auto& disk = options.disk_cache;
  o.disk_budget = disk ? disk->max_size() : 0;
  if (disk && o.disk_budget == 0) o.disk_budget = ~0ull;  // size unknown
  if (disk) {
    std::weak_ptr<data::DiskBlockCache> cache = disk;
    o.disk_capacity = [cache]() -> uint64_t {
      auto c = cache.lock();
      return c && c->max_size() > 0 ? c->capacity() : ~0ull;  // max_size 0: size unknown
    };
  }
  auto fetcher = std::make_shared<DatasetFetcher>(
      data.io(), data.client(),
      DatasetFetcher::Options{options.small_file_threshold, options.readahead.part_size, disk,
                              data.budget()},
      ResolveHintsOf(filesystem), FetchWholeOf(filesystem));
  return std::make_shared<prefetch::DatasetPrefetcher>(
      data.io(), o,
      [fetcher](const prefetch::PrefetchItem& item, bool hold, prefetch::FetchDone done) {
        fetcher->Fetch(item, hold, std::move(done));
      },
      WarmupListerOf(filesystem->listings()));
}

PrefetchObserver::PrefetchObserver(std::shared_ptr<prefetch::DatasetPrefetcher> prefetcher,
                                   const FsOptions& options)
    : prefetcher_(std::move(prefetcher)),
      prefetch_on_list_(options.prefetch_on_list),
      prefix_(options.prefix),
      small_file_threshold_(options.small_file_threshold),
      disk_cache_(options.disk_cache != nullptr) {}

void PrefetchObserver::OnRead(const std::string& path) { prefetcher_->OnRead(path); }

void PrefetchObserver::OnPageCacheDistrusted() { prefetcher_->RefetchPageCached(); }

void PrefetchObserver::OnListed(const std::string& path, const meta::DirSnapshot& listing) {
  if (!prefetch_on_list_) return;
  std::vector<prefetch::PrefetchItem> items;
  for (size_t i = 0; i < listing.size(); ++i) {
    const meta::DirSnapshot::Child child = listing.child(i);
    // Large files are warmed only into a disk cache (DatasetFetcher).
    if (child.is_dir() || child.size == 0 || (child.size > small_file_threshold_ && !disk_cache_)) {
      continue;
    }
    prefetch::PrefetchItem item;
    item.path = meta::JoinPath(path, child.name);
    item.key = meta::FileKey(prefix_, item.path);
    item.size = child.size;
    item.etag = std::string(child.etag);
    items.push_back(std::move(item));
  }
  if (items.empty()) return;
  prefetcher_->EnqueueFiles("listed:/" + path, std::move(items));
}

}  // namespace ossmount::fs
