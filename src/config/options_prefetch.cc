// Dataset prefetch options: warm-up, sampler-order hints and the memory of control requests
// -> MountConfig::fs (dataset_prefetch, prefetch_on_list). Listed under "Data path" in
// --help. The concurrencies' cap at --max-in-flight: CheckAcrossGroups.
#include <string>

#include "config/option_group.h"

namespace ossmount::config {
namespace {

class PrefetchGroup final : public OptionGroup {
 public:
  void Define(OptionDefiner& d) override {
    d.SetHeading(kDataPathHeading);
    d.Value("--warmup-concurrency", warmup_concurrency_,
            "GETs in flight that warm-up fills up to, hinted ones included (default 128, "
            "at most --max-in-flight)");
    d.Value("--hint-concurrency", hint_concurrency_,
            "GETs in flight that sampler-order hints fill up to, warm-up included "
            "(default 256, at most --max-in-flight)");
    d.Value("--hint-ahead-files", hint_ahead_files_,
            "With sampler-order hints, prefetch up to N files past the furthest read "
            "(default 2048)");
    d.Value("--hint-ahead-bytes", hint_ahead_bytes_,
            "Hinted bytes held fetched and unread, at most about (default 512MiB)");
    d.Value("--control-memory", control_memory_,
            "Memory for control requests: hint lists and warm-up queues together; users "
            "other than the owner and root share a quarter (default 256MiB)");
    d.Flag("--prefetch-on-list", prefetch_on_list_,
           "Warm up a directory's files after it is listed (within the cache budget)");
  }

  Status Validate(const OptionContext&, MountConfig& c) const override {
    prefetch::DatasetPrefetchOptions& dp = c.fs.dataset_prefetch;
    auto wc = ParseInteger("--warmup-concurrency", warmup_concurrency_, 1, 4096);
    if (!wc.ok()) return wc.status();
    dp.concurrency = static_cast<int>(*wc);
    auto hc = ParseInteger("--hint-concurrency", hint_concurrency_, 1, 4096);
    if (!hc.ok()) return hc.status();
    dp.hint_concurrency = static_cast<int>(*hc);
    auto haf = ParseInteger("--hint-ahead-files", hint_ahead_files_, 1, 10000000);
    if (!haf.ok()) return haf.status();
    dp.hint_ahead_files = static_cast<size_t>(*haf);
    auto hab = ParseSize("--hint-ahead-bytes", hint_ahead_bytes_);
    if (!hab.ok()) return hab.status();
    if (*hab < (1ull << 20)) return InvalidOption("--hint-ahead-bytes: at least 1MiB");
    dp.hint_ahead_bytes = *hab;
    // Hint lists and warm-up queues come from requests any user of the mount may send: their
    // memory has a limit of its own (DatasetPrefetcher), outside --max-memory's data buffers.
    auto control_memory = ParseSize("--control-memory", control_memory_);
    if (!control_memory.ok()) return control_memory.status();
    if (*control_memory < (1ull << 20)) return InvalidOption("--control-memory: at least 1MiB");
    dp.control_memory = *control_memory;
    c.fs.prefetch_on_list = prefetch_on_list_;
    return Status::Ok();
  }

 private:
  std::string warmup_concurrency_ = "128", hint_concurrency_ = "256";
  std::string hint_ahead_files_ = "2048", hint_ahead_bytes_ = "512MiB";
  std::string control_memory_ = "256MiB";
  bool prefetch_on_list_ = false;
};

}  // namespace

std::unique_ptr<OptionGroup> MakePrefetchGroup() { return std::make_unique<PrefetchGroup>(); }

}  // namespace ossmount::config
