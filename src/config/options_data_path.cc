// Data path options: the memory budget, readahead of large files, the kernel's readahead
// and the disk cache -> MountConfig::fs (max_memory, readahead) and ::cache (the default of
// --kernel-readahead: CheckAcrossGroups).
#include <string>

#include "config/option_group.h"

namespace ossmount::config {
namespace {

class DataPathGroup final : public OptionGroup {
 public:
  void Define(OptionDefiner& d) override {
    d.SetHeading(kDataPathHeading);
    d.Value("--max-memory", max_memory_,
            "All data buffers together: whole small files and readahead (default 1GiB)");
    d.Value("--max-readahead", max_readahead_,
            "Largest readahead window of one sequentially read file (default 64MiB)");
    d.Value("--kernel-readahead", kernel_readahead_,
            "The kernel's readahead on the mount (root only), 0 = the kernel's 128KiB "
            "(default 1MiB with --metadata-ttl indefinite)");
    d.Value("--prefetch-unit", prefetch_unit_,
            "Size of one ranged GET of a large file (default 8MiB)");
    d.Value("--prefetch-concurrency", prefetch_concurrency_,
            "Readahead GETs in flight, all files together (default 64)");
    d.Value("--cache", cache_dir_,
            "Directory of the local disk cache of object data (default: none)");
    d.Value("--max-cache-size", max_cache_size_, "Largest size of the disk cache (default 10GiB)");
    d.Value("--cache-min-free", cache_min_free_,
            "Free space the disk cache leaves on its file system, a size or a percentage "
            "of the file system (default 5%; 0: none)");
  }

  Status Validate(const OptionContext& ctx, MountConfig& c) const override {
    Status st = ValidateMemory(c.fs);
    if (!st.ok()) return st;
    return ValidateCache(ctx, c);
  }

 private:
  Status ValidateMemory(fs::FsOptions& fso) const {
    auto max_memory = ParseSize("--max-memory", max_memory_);
    if (!max_memory.ok()) return max_memory.status();
    if (*max_memory < (16ull << 20)) return InvalidOption("--max-memory: at least 16MiB");
    fso.max_memory = *max_memory;
    auto unit = ParseSize("--prefetch-unit", prefetch_unit_);
    if (!unit.ok()) return unit.status();
    if (*unit < (64ull << 10) || *unit > (1ull << 30)) {
      return InvalidOption("--prefetch-unit: between 64KiB and 1GiB");
    }
    fso.readahead.part_size = *unit;
    auto max_ra = ParseSize("--max-readahead", max_readahead_);
    if (!max_ra.ok()) return max_ra.status();
    if (*max_ra < fso.readahead.initial_window) {
      return InvalidOption("--max-readahead: at least 1MiB");
    }
    fso.readahead.max_window = *max_ra;
    auto kernel_ra = ParseSize("--kernel-readahead", kernel_readahead_);
    if (!kernel_ra.ok()) return kernel_ra.status();
    if (*kernel_ra > (1ull << 30)) return InvalidOption("--kernel-readahead: at most 1GiB");
    fso.readahead.kernel_readahead = *kernel_ra;
    auto pc = ParseInteger("--prefetch-concurrency", prefetch_concurrency_, 1, 4096);
    if (!pc.ok()) return pc.status();
    fso.readahead.global_concurrency = static_cast<int>(*pc);
    return Status::Ok();
  }

  Status ValidateCache(const OptionContext& ctx, MountConfig& c) const {
    auto cache_size = ParseSize("--max-cache-size", max_cache_size_);
    if (!cache_size.ok()) return cache_size.status();
    if (ctx.given("--max-cache-size") && cache_dir_.empty()) {
      return InvalidOption("--max-cache-size needs --cache DIR");
    }
    auto min_free = ParseSizeOrPercent("--cache-min-free", cache_min_free_);
    if (!min_free.ok()) return min_free.status();
    if (ctx.given("--cache-min-free") && cache_dir_.empty()) {
      return InvalidOption("--cache-min-free needs --cache DIR");
    }
    if (!cache_dir_.empty()) {
      if (cache_dir_[0] != '/') return InvalidOption("--cache: give an absolute directory path");
      c.cache.dir = cache_dir_;
      c.cache.max_size = *cache_size;
      c.cache.min_free = {min_free->bytes, min_free->fraction};
    }
    return Status::Ok();
  }

  std::string max_memory_ = "1GiB", max_readahead_ = "64MiB", kernel_readahead_ = "1MiB";
  std::string prefetch_unit_ = "8MiB", prefetch_concurrency_ = "64";
  std::string cache_dir_, max_cache_size_ = "10GiB", cache_min_free_ = "5%";
};

}  // namespace

std::unique_ptr<OptionGroup> MakeDataPathGroup() { return std::make_unique<DataPathGroup>(); }

}  // namespace ossmount::config
