// The dataset prefetcher over an ObjectFilesystem, as the daemon's mount session wires it:
//   auto prefetcher = MakeDatasetPrefetcher(filesystem);
//   filesystem->SetReadObserver(std::make_shared<PrefetchObserver>(prefetcher, options));
// MakeDatasetPrefetcher: a prefetch::DatasetPrefetcher whose fetcher (prefetch::DatasetFetcher)
// resolves hints through the filesystem's metadata and shares its whole-object cache, memory
// budget and disk cache, and whose lister is its warm-up listing. It holds the filesystem
// weakly ("unmounted" once it is gone). PrefetchObserver: the ReadObserver that moves it as
// the filesystem reads and, with --prefetch-on-list, warms the files of each listing fetched.
//
// Thread-safety: PrefetchObserver is thread-safe, as the DatasetPrefetcher is.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "fs/fs_options.h"
#include "fs/object_filesystem.h"
#include "fs/read_observer.h"
#include "prefetch/dataset_prefetcher.h"

namespace ossmount::fs {

std::shared_ptr<prefetch::DatasetPrefetcher> MakeDatasetPrefetcher(
    const std::shared_ptr<ObjectFilesystem>& filesystem);

class PrefetchObserver : public ReadObserver {
 public:
  PrefetchObserver(std::shared_ptr<prefetch::DatasetPrefetcher> prefetcher,
                   const FsOptions& options);

  void OnRead(const std::string& path) override;
  void OnPageCacheDistrusted() override;
  void OnListed(const std::string& path, const meta::DirSnapshot& listing) override;

 private:
  const std::shared_ptr<prefetch::DatasetPrefetcher> prefetcher_;
  const bool prefetch_on_list_;
  const std::string prefix_;
  const uint64_t small_file_threshold_;
  const bool disk_cache_;
};

}  // namespace ossmount::fs
