#include "prefetch/dataset_prefetcher.h"

#include <spdlog/spdlog.h>

#include <optional>
#include <utility>

namespace ossmount::prefetch {

HintReservation& HintReservation::operator=(HintReservation&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = std::move(other.owner_);
    grant_ = std::exchange(other.grant_, HintGrant{});
    other.owner_.reset();
  }
  return *this;
}

HintReservation::~HintReservation() { Release(); }

void HintReservation::Release() {
  if (grant_.bytes == 0 && !grant_.new_list) return;
  if (auto prefetcher = owner_.lock()) {
    std::lock_guard lock(prefetcher->mu_);
    prefetcher->hints_.ReleaseGrant(grant_);
  }
  grant_ = HintGrant{};
  owner_.reset();
}

DatasetPrefetcher::DatasetPrefetcher(boost::asio::io_context& io, DatasetPrefetchOptions options,
                                     Fetcher fetch, Lister list)
    : options_(std::move(options)),
      fetch_(std::move(fetch)),
      list_(std::move(list)),
      memory_(options_.control_memory),
      hints_(options_, memory_),
      jobs_(options_, memory_),
      retry_timer_(std::make_unique<boost::asio::steady_timer>(io)) {}

DatasetPrefetcher::~DatasetPrefetcher() = default;

uint64_t DatasetPrefetcher::HintListBytes(uint64_t count, uint64_t path_bytes) const {
  return hints_.ListBytesFor(count, path_bytes);  // options only: no lock needed
}

// ---------------------------------------------------------------------------------------
// Hints

Result<HintReservation> DatasetPrefetcher::ReserveHints(const HintSender& sender, size_t count,
                                                        uint64_t path_bytes, bool append) {
  HintTracker::Gone gone;  // freed after the lock, with their holds
  Drops drop;
  HintReservation r;
  {
    std::lock_guard lock(mu_);
    auto grant = hints_.Reserve(sender, count, path_bytes, append, gone, drop);
    if (!grant.ok()) return grant.status();
    r.grant_ = *grant;
  }
  r.owner_ = weak_from_this();
  return r;
}

Result<size_t> DatasetPrefetcher::SendHints(std::vector<std::string> paths, HintSender sender,
                                            bool append) {
  uint64_t bytes = 0;
  for (const auto& p : paths) bytes += p.size();
  auto reservation = ReserveHints(sender, paths.size(), bytes, append);
  if (!reservation.ok()) return reservation.status();
  HintPaths list;
  list.Reserve(paths.size(), bytes);
  for (const auto& p : paths) list.Add(p);
  std::vector<std::string>().swap(paths);
  if (append) return AppendHints(std::move(list), std::move(sender), std::move(*reservation));
  return SetHints(std::move(list), std::move(sender), std::move(*reservation));
}

size_t DatasetPrefetcher::SetHints(std::vector<std::string> paths, HintSender sender) {
  auto n = SendHints(std::move(paths), std::move(sender), /*append=*/false);
  if (!n.ok()) spdlog::warn("hints: {}", n.status().message());
  return n.ok() ? *n : 0;
}

size_t DatasetPrefetcher::AppendHints(std::vector<std::string> paths, HintSender sender) {
  auto n = SendHints(std::move(paths), std::move(sender), /*append=*/true);
  if (!n.ok()) spdlog::warn("hints: {}", n.status().message());
  return n.ok() ? *n : 0;
}

size_t DatasetPrefetcher::SetHints(HintPaths paths, HintSender sender,
                                   HintReservation reservation) {
  // Indexed and sized outside the lock: a list can hold millions of paths.
  if (!paths.indexed()) paths.Index();
  const size_t n = paths.size();
  auto list = std::make_unique<HintWindow>(std::move(sender),
                                           std::make_shared<const HintPaths>(std::move(paths)));
  list->set_charged(list->Bytes(hints_.stale_distance()));
  HintTracker::Gone gone;  // freed after the lock (they hold buffers)
  Drops drop;
  {
    std::lock_guard lock(mu_);
    hints_.Replace(std::move(list), reservation.grant_, gone, drop);
  }
  drop.clear();
  gone.clear();
  Pump();
  return n;
}

size_t DatasetPrefetcher::AppendHints(HintPaths paths, HintSender sender,
                                      HintReservation reservation) {
  const size_t n = paths.size();
  while (true) {
    std::optional<std::pair<uint64_t, std::shared_ptr<const HintPaths>>> own;
    {
      std::lock_guard lock(mu_);
      own = hints_.PathsOf(sender);
    }
    if (!own) break;
    // The whole list indexed again, outside the lock: readers' OnRead never waits for it.
    auto longer = std::make_shared<const HintPaths>(HintPaths::Concat(*own->second, paths));
    {
      std::lock_guard lock(mu_);
      // Replaced meanwhile: again. Else `longer` now holds the old paths, freed after the lock.
      if (!hints_.Extend(own->first, own->second, longer, reservation.grant_)) continue;
    }
    Pump();
    return n;
  }
  return SetHints(std::move(paths), std::move(sender), std::move(reservation));
}

void DatasetPrefetcher::OnRead(const std::string& path) {
  Drops drop;  // released after the lock
  bool changed = false;
  {
    std::lock_guard lock(mu_);
    changed = jobs_.OnRead(path, drop);
    if (hints_.OnRead(path, drop)) changed = true;
    // Memory was freed: hints that waited for the budget may try again.
    if (changed) hints_.EndBudgetWait();
  }
  drop.clear();
  if (changed) Pump();
}

void DatasetPrefetcher::RefetchPageCached() {
  size_t requeued = 0;
  {
    std::lock_guard lock(mu_);
    requeued = hints_.RequeuePageCached();
  }
  if (requeued == 0) return;
  spdlog::debug("hints: the page cache no longer holds what it held; refetching {} file(s)",
                requeued);
  Pump();
}

// ---------------------------------------------------------------------------------------
// Warm-up

uint64_t DatasetPrefetcher::StartWarmup(std::vector<std::string> paths, int concurrency) {
  auto id = StartWarmupFor(Requester{}, std::move(paths), concurrency);
  if (!id.ok()) {
    spdlog::warn("warm-up: {}", id.status().message());
    return 0;
  }
  return *id;
}

Result<uint64_t> DatasetPrefetcher::StartWarmupFor(Requester by, std::vector<std::string> paths,
                                                   int concurrency) {
  Result<uint64_t> id = [&] {
    std::lock_guard lock(mu_);
    return jobs_.Start(by, std::move(paths), concurrency);
  }();
  if (id.ok()) ListNext(*id, 0);
  return id;
}

uint64_t DatasetPrefetcher::EnqueueFiles(std::string label, std::vector<PrefetchItem> items) {
  if (items.empty()) return 0;
  std::pair<uint64_t, bool> added;
  {
    std::lock_guard lock(mu_);
    added = jobs_.AddFiles(std::move(label), items);
  }
  if (added.second) Pump();
  return added.first;
}

size_t DatasetPrefetcher::CancelWarmups() {
  std::lock_guard lock(mu_);
  return jobs_.CancelAll();
}

void DatasetPrefetcher::ListNext(uint64_t id, size_t index) {
  std::string path;
  WarmupJobs::ListStep step;
  {
    std::lock_guard lock(mu_);
    step = jobs_.NextPath(id, index, &path);
  }
  if (step == WarmupJobs::ListStep::kNone) return;
  if (step == WarmupJobs::ListStep::kOver) {
    Pump();
    return;
  }
  // A listing in flight does not keep the prefetcher alive: once it is gone, the next page
  // ends the listing.
  std::weak_ptr<DatasetPrefetcher> weak = weak_from_this();
  list_(
      path,
      [weak, id](std::vector<PrefetchItem> items) {
        auto self = weak.lock();
        if (!self) return false;
        bool queued = false;
        bool more = false;
        {
          std::lock_guard lock(self->mu_);
          more = self->jobs_.OnPage(id, std::move(items), &queued);
        }
        if (queued) self->Pump();
        return more;
      },
      [weak, id, index, path](ossmount::Status st) {
        auto self = weak.lock();
        if (!self) return;
        WarmupJobs::ListingEnd end;
        {
          std::lock_guard lock(self->mu_);
          end = self->jobs_.OnListingDone(id, path, st);
        }
        if (end == WarmupJobs::ListingEnd::kNextPath) self->ListNext(id, index + 1);
        if (end == WarmupJobs::ListingEnd::kPump) self->Pump();
      });
}

// ---------------------------------------------------------------------------------------
// Scheduling

void DatasetPrefetcher::Pump() {
  std::vector<HintStart> hinted;
  std::vector<WarmupStart> warm;
  {
    std::lock_guard lock(mu_);
    // One limit on fetches in flight, both kinds counted: hints first, up to
    // hint_concurrency (a reader is close behind them), then each warm-up job up to its
    // own concurrency. Warm-up takes only the slots hints leave.
    int total = hints_.in_flight() + jobs_.in_flight();
    hints_.Collect(options_.hint_concurrency - total, hinted);
    total += static_cast<int>(hinted.size());
    jobs_.Collect(total, warm);
  }
  for (HintStart& s : hinted) StartFetch(std::move(s));
  for (WarmupStart& s : warm) StartFetch(std::move(s));
}

void DatasetPrefetcher::StartFetch(HintStart start) {
  PrefetchItem item;
  item.path = start.path;
  fetch_(item, /*hold_in_memory=*/true,
         [self = shared_from_this(), start = std::move(start)](FetchResult r) {
           self->OnHintDone(start, std::move(r));
         });
}

void DatasetPrefetcher::StartFetch(WarmupStart start) {
  const PrefetchItem item = start.item;
  const bool hold = start.hold;
  fetch_(item, hold, [self = shared_from_this(), start = std::move(start)](FetchResult r) {
    self->OnWarmupDone(start, std::move(r));
  });
}

void DatasetPrefetcher::OnHintDone(const HintStart& start, FetchResult result) {
  const bool busy = result.outcome == FetchOutcome::kBusy;
  Drops drop;  // released after the lock
  {
    std::lock_guard lock(mu_);
    hints_.OnFetchDone(start, std::move(result), drop);
  }
  drop.clear();
  if (busy) ScheduleRetry();
  Pump();
}

void DatasetPrefetcher::OnWarmupDone(const WarmupStart& start, FetchResult result) {
  Drops drop;  // released after the lock
  bool busy = false;
  {
    std::lock_guard lock(mu_);
    busy = jobs_.OnFetchDone(start, std::move(result), drop);
  }
  drop.clear();
  if (busy) ScheduleRetry();
  Pump();
}

void DatasetPrefetcher::ScheduleRetry() {
  std::lock_guard lock(mu_);
  if (retry_scheduled_) return;
  retry_scheduled_ = true;
  retry_timer_->expires_after(options_.busy_retry);
  std::weak_ptr<DatasetPrefetcher> weak = weak_from_this();
  retry_timer_->async_wait([weak](const boost::system::error_code& ec) {
    if (ec) return;
    auto self = weak.lock();
    if (!self) return;
    {
      std::lock_guard lock(self->mu_);
      self->retry_scheduled_ = false;
      self->jobs_.EndBusyWait();
    }
    self->Pump();
  });
}

PrefetchStatus DatasetPrefetcher::Status() const {
  PrefetchStatus out;
  std::lock_guard lock(mu_);
  const uint64_t hint_bytes = hints_.Status(out);
  const uint64_t warmup_bytes = jobs_.Status(out.jobs);
  out.held_bytes = out.hints.outstanding_bytes + jobs_.held_bytes();
  out.in_flight = hints_.in_flight() + jobs_.in_flight();
  out.control_memory = memory_.Status();
  out.control_memory.hint_bytes = hint_bytes;
  out.control_memory.warmup_bytes = warmup_bytes;
  return out;
}

}  // namespace ossmount::prefetch
