#include "prefetch/dataset_prefetcher.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "common/format_bytes.h"
#include "common/metrics.h"

namespace ossmount::prefetch {

namespace {

using Clock = std::chrono::steady_clock;

// A held hint position's entry in HintList::held (a std::map node and its malloc header):
// a list holds at most StaleDistance() of them, which its control memory includes.
constexpr uint64_t kHeldEntryBytes = 80;

std::string Bytes(uint64_t n) { return FormatBytes(static_cast<double>(n)); }

// A size as the option takes it: "256MiB", "1GiB", "1000000".
std::string OptionSize(uint64_t n) {
  const char* units[] = {"GiB", "MiB", "KiB"};
  const uint64_t sizes[] = {1ull << 30, 1ull << 20, 1ull << 10};
  for (int i = 0; i < 3; ++i) {
    if (n >= sizes[i] && n % sizes[i] == 0) return std::to_string(n / sizes[i]) + units[i];
  }
  return std::to_string(n);
}

metrics::Gauge& ControlMemoryGauge() {
  static metrics::Gauge& g = metrics::Registry::Global().GetGauge(
      "ossmount_control_memory_bytes",
      "Memory held for control requests: hint lists and warm-up queues (--control-memory).");
  return g;
}

}  // namespace

const char* JobStateName(JobState state) {
  switch (state) {
    case JobState::kListing:
      return "listing";
    case JobState::kRunning:
      return "running";
    case JobState::kDone:
      return "done";
    case JobState::kBudgetFull:
      return "budget-full";
    case JobState::kCancelled:
      return "cancelled";
    case JobState::kFailed:
      return "failed";
  }
  return "?";
}

DatasetPrefetcher::DatasetPrefetcher(boost::asio::io_context& io, DatasetPrefetchOptions options,
                                     Fetcher fetch, Lister list)
    : options_(options),
      fetch_(std::move(fetch)),
      list_(std::move(list)),
      retry_timer_(std::make_unique<boost::asio::steady_timer>(io)) {
  metrics::Registry::Global()
      .GetGauge("ossmount_control_memory_limit_bytes",
                "The limit on memory held for control requests (--control-memory).")
      .Set(static_cast<int64_t>(options_.control_memory));
}

DatasetPrefetcher::~DatasetPrefetcher() = default;

// ---------------------------------------------------------------------------------------
// Control memory

HintReservation& HintReservation::operator=(HintReservation&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = std::move(other.owner_);
    by_ = other.by_;
    bytes_ = std::exchange(other.bytes_, 0);
    new_list_ = std::exchange(other.new_list_, false);
    other.owner_.reset();
  }
  return *this;
}

HintReservation::~HintReservation() { Release(); }

void HintReservation::Release() {
  if (bytes_ == 0 && !new_list_) return;
  if (auto prefetcher = owner_.lock()) {
    std::lock_guard lock(prefetcher->mu_);
    prefetcher->ReleaseReservationLocked(*this);
  }
  bytes_ = 0;
  new_list_ = false;
}

void DatasetPrefetcher::ReleaseReservationLocked(HintReservation& r) {
  UnchargeLocked(r.by_, r.bytes_);
  hint_reserved_ -= std::min(hint_reserved_, r.bytes_);
  if (r.new_list_) {
    auto it = reserved_lists_.find(r.by_.uid);
    if (it != reserved_lists_.end() && --it->second == 0) reserved_lists_.erase(it);
  }
  r.bytes_ = 0;
  r.new_list_ = false;
  r.owner_.reset();
}

bool DatasetPrefetcher::TryChargeLocked(const Requester& by, uint64_t bytes, uint64_t credit) {
  // Credit: what `by` holds and is about to release (a list the new one replaces).
  const uint64_t used = control_used_ - std::min(control_used_, credit);
  if (used + bytes > options_.control_memory) return false;
  if (!by.owner && others_used_ - std::min(others_used_, credit) + bytes > OthersLimit()) {
    return false;
  }
  ChargeLocked(by, bytes);
  return true;
}

void DatasetPrefetcher::ChargeLocked(const Requester& by, uint64_t bytes) {
  control_used_ += bytes;
  if (!by.owner) others_used_ += bytes;
  ControlMemoryGauge().Set(static_cast<int64_t>(control_used_));
}

void DatasetPrefetcher::UnchargeLocked(const Requester& by, uint64_t bytes) {
  control_used_ -= std::min(control_used_, bytes);
  if (!by.owner) others_used_ -= std::min(others_used_, bytes);
  ControlMemoryGauge().Set(static_cast<int64_t>(control_used_));
}

std::string DatasetPrefetcher::NoRoomMessageLocked(const Requester& by, uint64_t bytes,
                                                   uint64_t credit) const {
  const uint64_t limit = options_.control_memory;
  const uint64_t used = control_used_ - std::min(control_used_, credit);
  const uint64_t others = others_used_ - std::min(others_used_, credit);
  if (!by.owner && others + bytes > OthersLimit()) {  // the other users' share is short
    return "users other than the mount's owner and root share a quarter of the control "
           "channel's memory (" +
           OptionSize(OthersLimit()) + " of --control-memory " + OptionSize(limit) +
           "), which has " + Bytes(OthersLimit() - std::min(OthersLimit(), others)) + " free";
  }
  return "the control channel's memory (--control-memory " + OptionSize(limit) + ") has " +
         Bytes(limit - std::min(limit, used)) + " free";
}

uint64_t DatasetPrefetcher::HintListBytes(uint64_t count, uint64_t path_bytes) const {
  return HintPaths::BytesFor(count, path_bytes) + count * sizeof(PosState) + sizeof(HintList) +
         std::min<uint64_t>(count, StaleDistance()) * kHeldEntryBytes;
}

uint64_t DatasetPrefetcher::ListBytes(const HintList& list) const {
  return list.paths->Bytes() + list.states.capacity() * sizeof(PosState) + sizeof(HintList) +
         std::min<uint64_t>(list.states.size(), StaleDistance()) * kHeldEntryBytes;
}

// ---------------------------------------------------------------------------------------
// Hints

Result<HintReservation> DatasetPrefetcher::ReserveHints(const HintSender& sender, size_t count,
                                                        uint64_t path_bytes, bool append) {
  const Requester& by = sender.by;
  HintReservation r;
  std::vector<std::unique_ptr<HintList>> gone;  // freed after the lock
  std::vector<std::shared_ptr<const void>> drop;
  {
    std::lock_guard lock(mu_);
    if (!append) {
      // A new list drops the lists of senders that have exited: before the check, so that
      // their room counts as free.
      for (auto& l : hint_lists_) {
        if (!l->sender.SameAs(sender) && l->sender.alive && !l->sender.alive()) {
          ReleaseHintListLocked(*l, drop);
          UnchargeLocked(l->sender.by, l->bytes);
          gone.push_back(std::move(l));
        }
      }
      hint_lists_.erase(std::remove(hint_lists_.begin(), hint_lists_.end(), nullptr),
                        hint_lists_.end());
    }
    HintList* own = nullptr;
    for (auto& l : hint_lists_) {
      if (l->sender.SameAs(sender)) own = l.get();
    }
    const std::string what = "hint list of " + std::to_string(count) + " path(s)";
    const bool extend = append && own != nullptr;
    const uint64_t total = extend ? own->states.size() + count : count;
    const uint64_t total_bytes = extend ? own->paths->path_bytes() + path_bytes : path_bytes;
    // A list refused in one of its pieces holds nothing: the pieces taken before it go too.
    auto refuse = [&](std::string message) {
      if (extend) {
        for (auto& l : hint_lists_) {
          if (l.get() != own) continue;
          ReleaseHintListLocked(*l, drop);
          UnchargeLocked(l->sender.by, l->bytes);
          gone.push_back(std::move(l));
        }
        hint_lists_.erase(std::remove(hint_lists_.begin(), hint_lists_.end(), nullptr),
                          hint_lists_.end());
        message += "; the pieces of the list taken before are dropped";
      }
      return ossmount::Status(ErrorCode::kNoSpace, std::move(message));
    };
    if (!HintPaths::Fits(total, total_bytes)) {
      return refuse(what + " is longer than a list may be (" +
                    std::to_string(HintPaths::kNone - 1) + " paths, 4 GiB of path names)");
    }
    if (extend && own->pieces >= kMaxHintPieces) {
      return refuse("a hint list may arrive in at most " + std::to_string(kMaxHintPieces) +
                    " pieces; send it again in fewer, longer pieces");
    }
    if (count == 0 && !append) return r;  // clears the sender's list: no room
    const bool new_list = own == nullptr;
    if (!by.owner && new_list) {
      size_t lists = 0;
      size_t others = 0;
      for (const auto& l : hint_lists_) {
        if (l->sender.by.owner) continue;
        ++others;
        if (l->sender.by.uid == by.uid) ++lists;
      }
      if (auto it = reserved_lists_.find(by.uid); it != reserved_lists_.end()) lists += it->second;
      if (lists >= kOtherUserHintLists) {
        return ossmount::Status(
            ErrorCode::kNoSpace,
            "uid " + std::to_string(by.uid) + " has " + std::to_string(lists) +
                " hint lists already: a user other than the mount's owner and root "
                "may have at most " +
                std::to_string(kOtherUserHintLists) + " (and " + std::to_string(kOtherUserJobs) +
                " running warm-ups) at once; a list goes when its sender exits or "
                "sends an empty list");
      }
      if (hint_lists_.size() >= kMaxHintLists && others == 0) {
        return ossmount::Status(
            ErrorCode::kNoSpace,
            "the daemon follows " + std::to_string(kMaxHintLists) +
                " hint lists of the mount's owner and root, which another user's list "
                "does not replace");
      }
    }
    const uint64_t needed = HintListBytes(count, path_bytes);
    // The sender's list that this one replaces is released when it is applied.
    const uint64_t credit = !append && own != nullptr ? own->bytes : 0;
    if (!TryChargeLocked(by, needed, credit)) {
      return refuse(what + " needs " + Bytes(needed) + "; " +
                    NoRoomMessageLocked(by, needed, credit));
    }
    r.owner_ = weak_from_this();
    r.by_ = by;
    r.bytes_ = needed;
    hint_reserved_ += needed;
    if (new_list && !by.owner) {
      r.new_list_ = true;
      ++reserved_lists_[by.uid];
    }
    if (extend) ++own->pieces;
  }
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

size_t DatasetPrefetcher::AppendHints(HintPaths paths, HintSender sender,
                                      HintReservation reservation) {
  const size_t n = paths.size();
  while (true) {
    std::shared_ptr<const HintPaths> old;  // released after the lock: it may be large
    uint64_t generation = 0;
    {
      std::lock_guard lock(mu_);
      for (auto& l : hint_lists_) {
        if (l->sender.SameAs(sender)) {
          old = l->paths;
          generation = l->generation;
        }
      }
    }
    if (!old) break;
    // The whole list indexed again, outside the lock: readers' OnRead never waits for it.
    auto longer = std::make_shared<const HintPaths>(HintPaths::Concat(*old, paths));
    {
      std::lock_guard lock(mu_);
      HintList* list = FindHintListLocked(generation);
      if (list == nullptr || list->paths != old) continue;  // replaced meanwhile: again
      std::vector<PosState> states(longer->size(), PosState::kPending);  // exact capacity
      std::copy(list->states.begin(), list->states.end(), states.begin());
      list->states = std::move(states);
      std::swap(list->paths, longer);  // `longer` now holds the old one, freed after the lock
      const uint64_t bytes = ListBytes(*list);
      ChargeLocked(list->sender.by, bytes);
      UnchargeLocked(list->sender.by, list->bytes);
      list->bytes = bytes;
      ReleaseReservationLocked(reservation);
      hint_budget_wait_ = false;
    }
    Pump();
    return n;
  }
  return SetHints(std::move(paths), std::move(sender), std::move(reservation));
}

size_t DatasetPrefetcher::SetHints(HintPaths paths, HintSender sender,
                                   HintReservation reservation) {
  // Indexed outside the lock: a list can hold millions of paths.
  if (!paths.indexed()) paths.Index();
  const size_t n = paths.size();
  auto list = std::make_unique<HintList>();
  list->paths = std::make_shared<const HintPaths>(std::move(paths));
  list->states = std::vector<PosState>(n, PosState::kPending);
  list->sender = std::move(sender);
  list->bytes = ListBytes(*list);

  std::vector<std::unique_ptr<HintList>> gone;  // freed after the lock (holds free buffers)
  std::vector<std::shared_ptr<const void>> drop;
  {
    std::lock_guard lock(mu_);
    ++hint_generation_;
    list->generation = hint_generation_;
    // The sender's previous list, and the lists of senders that have exited, go.
    auto replaced = [&](const std::unique_ptr<HintList>& l) {
      if (l->sender.SameAs(list->sender)) return true;
      return l->sender.alive && !l->sender.alive();
    };
    for (auto& l : hint_lists_) {
      if (replaced(l)) gone.push_back(std::move(l));
    }
    hint_lists_.erase(std::remove(hint_lists_.begin(), hint_lists_.end(), nullptr),
                      hint_lists_.end());
    if (n > 0) {
      while (hint_lists_.size() >= kMaxHintLists) {
        // Another user's list replaces the oldest of other users' lists, never an owner's.
        auto oldest = hint_lists_.begin();
        if (!list->sender.by.owner) {
          auto other = std::find_if(hint_lists_.begin(), hint_lists_.end(),
                                    [](const auto& l) { return !l->sender.by.owner; });
          if (other != hint_lists_.end()) oldest = other;
        }
        gone.push_back(std::move(*oldest));
        hint_lists_.erase(oldest);
      }
      ChargeLocked(list->sender.by, list->bytes);
      hint_lists_.push_back(std::move(list));
    }
    for (auto& l : gone) {
      ReleaseHintListLocked(*l, drop);
      UnchargeLocked(l->sender.by, l->bytes);
    }
    ReleaseReservationLocked(reservation);
    hint_budget_wait_ = false;
  }
  drop.clear();
  gone.clear();
  Pump();
  return n;
}

void DatasetPrefetcher::ReleaseHintListLocked(HintList& list,
                                              std::vector<std::shared_ptr<const void>>& drop) {
  // Only held positions have bytes: walk those, not a list of maybe millions, under mu_.
  for (auto& held : list.held) drop.push_back(std::move(held.second.hold));
  list.held.clear();
  list.outstanding_bytes = 0;
}

DatasetPrefetcher::HintList* DatasetPrefetcher::FindHintListLocked(uint64_t generation) {
  for (auto& l : hint_lists_) {
    if (l->generation == generation) return l.get();
  }
  return nullptr;
}

std::optional<size_t> DatasetPrefetcher::FirstUnreadLocked(const HintList& list,
                                                           const std::string& path) {
  const HintPaths& paths = *list.paths;
  for (uint32_t pos = paths.First(path); pos != HintPaths::kNone; pos = paths.Next(pos)) {
    if (list.states[pos] != PosState::kRead) return pos;
  }
  return std::nullopt;
}

void DatasetPrefetcher::MarkHintReadLocked(HintList& list, size_t pos,
                                           std::vector<std::shared_ptr<const void>>& drop) {
  PosState& state = list.states[pos];
  if (state == PosState::kInFlight) --list.outstanding_files;
  if (state == PosState::kHeld) {
    --list.outstanding_files;
    auto held = list.held.find(pos);
    list.outstanding_bytes -= held->second.bytes;
    drop.push_back(std::move(held->second.hold));
    list.held.erase(held);
  }
  state = PosState::kRead;
  ++list.counters.read;
  list.read_frontier = std::max(list.read_frontier, pos + 1);
  // A held file far behind the furthest read was skipped by the reader: release it.
  const size_t lag = StaleDistance();
  while (!list.held.empty() && list.held.begin()->first + lag < list.read_frontier) {
    auto oldest = list.held.begin();
    drop.push_back(std::move(oldest->second.hold));
    list.states[oldest->first] = PosState::kDone;
    --list.outstanding_files;
    list.outstanding_bytes -= oldest->second.bytes;
    list.held.erase(oldest);
    ++list.counters.released_unread;
  }
}

void DatasetPrefetcher::OnRead(const std::string& path) {
  std::vector<std::shared_ptr<const void>> drop;  // released after the lock
  bool changed = false;
  {
    std::lock_guard lock(mu_);
    if (auto w = warm_holds_.find(path); w != warm_holds_.end()) {
      drop.push_back(std::move(w->second));
      warm_holds_.erase(w);
      auto b = warm_hold_bytes_.find(path);
      if (b != warm_hold_bytes_.end()) {
        warm_held_bytes_ -= b->second;
        warm_hold_bytes_.erase(b);
      }
      changed = true;
    }
    if (auto f = warm_in_flight_.find(path); f != warm_in_flight_.end()) f->second = true;
    // A path in several lists (a distributed sampler pads each rank's share with a few
    // files of another's) is counted read in the list whose readers are nearest to it.
    HintList* best = nullptr;
    size_t best_pos = 0;
    size_t best_distance = 0;
    for (auto& l : hint_lists_) {
      auto pos = FirstUnreadLocked(*l, path);
      if (!pos) continue;
      const size_t distance =
          *pos >= l->read_frontier ? *pos - l->read_frontier : l->read_frontier - *pos;
      if (best == nullptr || distance < best_distance) {
        best = l.get();
        best_pos = *pos;
        best_distance = distance;
      }
    }
    if (best != nullptr) {
      MarkHintReadLocked(*best, best_pos, drop);
      changed = true;
    }
    if (changed) hint_budget_wait_ = false;
  }
  drop.clear();
  if (changed) Pump();
}

void DatasetPrefetcher::RefetchPageCached() {
  size_t requeued = 0;
  {
    std::lock_guard lock(mu_);
    // Unread positions lie at or after the furthest read, or behind it within the stale
    // distance (a slower worker's); further behind, the reader skipped them.
    const size_t lag = StaleDistance();
    for (auto& l : hint_lists_) {
      HintList& list = *l;
      const size_t from = list.read_frontier > lag ? list.read_frontier - lag : 0;
      const size_t end = list.next;
      for (size_t pos = from; pos < end; ++pos) {
        if (list.states[pos] != PosState::kPageCached) continue;
        list.states[pos] = PosState::kPending;
        list.next = std::min(list.next, pos);
        --list.counters.page_cached;  // counts what stays unfetched for the page cache
        ++requeued;
      }
    }
  }
  if (requeued == 0) return;
  spdlog::debug("hints: the page cache no longer holds what it held; refetching {} file(s)",
                requeued);
  Pump();
}

void DatasetPrefetcher::OnHintDone(const Start& s, FetchResult r) {
  std::shared_ptr<const void> drop;  // released after the lock
  {
    std::lock_guard lock(mu_);
    --hint_in_flight_;
    HintList* list = FindHintListLocked(s.generation);
    if (list == nullptr) {
      drop = std::move(r.hold);  // a replaced list: nothing to account
    } else {
      --list->in_flight;
      PosState& state = list->states[s.position];
      const bool read = state == PosState::kRead;
      if (r.outcome == FetchOutcome::kFetched) ++list->counters.fetched;
      if (r.outcome == FetchOutcome::kPageCached) ++list->counters.page_cached;
      if (r.outcome == FetchOutcome::kFailed) {
        ++list->counters.failed;
        spdlog::debug("hint prefetch of '{}' failed: {}", s.item.path, r.error);
      }
      if (read) {
        drop = std::move(r.hold);  // the reader joined the fetch and holds the bytes
      } else if (r.outcome == FetchOutcome::kFetched && r.hold) {
        state = PosState::kHeld;
        list->held[s.position] = Held{r.bytes, std::move(r.hold)};
        list->outstanding_bytes += r.bytes;
      } else if (r.outcome == FetchOutcome::kBudgetFull || r.outcome == FetchOutcome::kBusy) {
        // Not fetched: try this position again once reads free memory (or shortly).
        state = PosState::kPending;
        list->next = std::min(list->next, s.position);
        --list->outstanding_files;
        if (r.outcome == FetchOutcome::kBudgetFull) hint_budget_wait_ = true;
      } else if (r.outcome == FetchOutcome::kPageCached) {
        state = PosState::kPageCached;  // RefetchPageCached may want it yet
        --list->outstanding_files;
      } else {
        state = PosState::kDone;
        --list->outstanding_files;
      }
    }
  }
  drop.reset();
  if (r.outcome == FetchOutcome::kBusy) ScheduleRetry();
  Pump();
}

// ---------------------------------------------------------------------------------------
// Warm-up

uint64_t DatasetPrefetcher::AddJobLocked(std::vector<std::string> paths, int concurrency,
                                         Requester by) {
  Job job;
  job.status.id = next_job_id_++;
  job.status.paths = std::move(paths);
  job.status.uid = by.uid;
  job.concurrency = concurrency > 0 ? concurrency : options_.concurrency;
  job.by = by;
  job.fixed_bytes = JobFixedBytes(job.status.paths);
  job.started = Clock::now();
  jobs_.push_back(std::move(job));
  TrimJobsLocked();
  return jobs_.back().status.id;
}

void DatasetPrefetcher::TrimJobsLocked() {
  size_t ended = 0;
  for (const Job& j : jobs_) ended += Ended(j) ? 1 : 0;
  while (ended > kKeptJobs && !jobs_.empty()) {
    auto it = std::find_if(jobs_.begin(), jobs_.end(), [](const Job& j) { return Ended(j); });
    if (it == jobs_.end() || it->status.in_flight > 0) break;
    jobs_.erase(it);
    --ended;
  }
}

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
  if (paths.size() > kMaxWarmupPaths) {
    return ossmount::Status(ErrorCode::kInvalidArgument,
                            "a warm-up takes at most " + std::to_string(kMaxWarmupPaths) +
                                " paths (this one has " + std::to_string(paths.size()) +
                                "); warm up a directory that holds them");
  }
  uint64_t id;
  {
    std::lock_guard lock(mu_);
    if (!by.owner) {
      size_t running = 0;
      for (const Job& j : jobs_) {
        running += !Ended(j) && !j.by.owner && j.by.uid == by.uid ? 1 : 0;
      }
      if (running >= kOtherUserJobs) {
        return ossmount::Status(
            ErrorCode::kNoSpace,
            "uid " + std::to_string(by.uid) + " has " + std::to_string(running) +
                " warm-ups running already: a user other than the mount's owner and "
                "root may run at most " +
                std::to_string(kOtherUserJobs) + " (and have " +
                std::to_string(kOtherUserHintLists) + " hint lists) at once; wait for one to end");
      }
      // Another user's job runs at most at the mount's warm-up concurrency.
      concurrency =
          std::min(concurrency > 0 ? concurrency : options_.concurrency, options_.concurrency);
    }
    // A job needs room for itself and at least one block of listed files.
    const uint64_t need = JobFixedBytes(paths) + WarmupQueue::kBlockBytes;
    const bool room = control_used_ + need <= options_.control_memory &&
                      (by.owner || others_used_ + need <= OthersLimit());
    if (!room) {
      return ossmount::Status(ErrorCode::kNoSpace, "a warm-up needs " + Bytes(need) +
                                                       " to queue the files it lists; " +
                                                       NoRoomMessageLocked(by, need, 0));
    }
    warm_committed_bytes_ = 0;  // an explicit request: the whole cache is its budget again
    id = AddJobLocked(std::move(paths), concurrency, by);
    SyncJobChargeLocked(jobs_.back());
  }
  ListNext(id, 0);
  return id;
}

uint64_t DatasetPrefetcher::EnqueueFiles(std::string label, std::vector<PrefetchItem> items) {
  if (items.empty()) return 0;
  uint64_t id;
  {
    std::lock_guard lock(mu_);
    id = AddJobLocked({std::move(label)}, 0, Requester{});
    Job& job = jobs_.back();
    job.automatic = true;
    for (const auto& item : items) job.status.bytes_total += item.size;
    job.status.files_total = items.size();
    job.status.listing_done = true;
    job.status.state = JobState::kRunning;
    const uint64_t bytes = job.fixed_bytes + job.pending.BytesAfter(items);
    if (!TryChargeLocked(job.by, bytes)) {
      FinishJobLocked(job, JobState::kBudgetFull,
                      "queuing " + std::to_string(items.size()) + " listed file(s) needs " +
                          Bytes(bytes) + "; " + NoRoomMessageLocked(job.by, bytes, 0) +
                          "; not warmed");
      return id;
    }
    job.charged = bytes;
    for (const auto& item : items) job.pending.Push(item);
    SyncJobChargeLocked(job);
  }
  Pump();
  return id;
}

void DatasetPrefetcher::ListNext(uint64_t id, size_t path_index) {
  std::string path;
  bool listing_over = false;
  {
    std::lock_guard lock(mu_);
    Job* job = FindJobLocked(id);
    // A job that ended (cancelled, failed, budget) lists nothing more.
    if (!job || Ended(*job)) return;
    if (path_index >= job->status.paths.size()) {
      job->status.listing_done = true;
      if (job->status.state == JobState::kListing) job->status.state = JobState::kRunning;
      FinishIfDrainedLocked(*job);
      listing_over = true;
    } else {
      path = job->status.paths[path_index];
    }
  }
  if (listing_over) {
    Pump();
    return;
  }
  auto self = shared_from_this();
  list_(
      path,
      [self, id](std::vector<PrefetchItem> items) {
        {
          std::lock_guard lock(self->mu_);
          Job* job = self->FindJobLocked(id);
          // Ended (cancelled) or stopped: no further page.
          if (!job || Ended(*job) || !job->stopped.empty()) return false;
          if (items.empty()) return true;  // a page of directory markers only
          const uint64_t queue_after = job->pending.BytesAfter(items);
          const uint64_t after = job->fixed_bytes + queue_after;
          const uint64_t growth = after - std::min(after, job->charged);
          if (!self->TryChargeLocked(job->by, growth)) {
            // The queue would take the control memory past its limit: listing stops here,
            // what is queued is warmed, and the job then ends budget-full saying why.
            job->stopped = "stopped listing after " + std::to_string(job->status.files_total) +
                           " file(s): the next " + std::to_string(items.size()) +
                           " would take its queue of listed files from " +
                           Bytes(job->pending.Bytes()) + " to " + Bytes(queue_after) + "; " +
                           self->NoRoomMessageLocked(job->by, growth, 0) +
                           ". The files listed are warmed, the rest is not: raise "
                           "--control-memory, or warm up fewer paths at once";
            job->status.message = job->stopped;
            return false;
          }
          job->charged += growth;
          for (auto& item : items) {
            job->status.bytes_total += item.size;
            ++job->status.files_total;
            job->pending.Push(item);
          }
          self->SyncJobChargeLocked(*job);
          job->status.state = JobState::kRunning;
        }
        self->Pump();
        return true;
      },
      [self, id, path_index, path](ossmount::Status st) {
        bool list_next = false;
        {
          std::lock_guard lock(self->mu_);
          Job* job = self->FindJobLocked(id);
          // Cancelled (or ended otherwise) meanwhile: its state stays, nothing restarts.
          if (!job || Ended(*job)) return;
          if (!job->stopped.empty()) {
            // Stopped by the control memory: no further path is listed.
            job->status.listing_done = true;
            if (job->status.state == JobState::kListing) job->status.state = JobState::kRunning;
            self->FinishIfDrainedLocked(*job);
          } else if (!st.ok()) {
            job->status.listing_done = true;
            self->FinishJobLocked(*job, JobState::kFailed,
                                  "cannot list '" + path + "': " + st.message());
          } else {
            list_next = true;
          }
        }
        if (list_next) {
          self->ListNext(id, path_index + 1);
        } else {
          self->Pump();
        }
      });
}

void DatasetPrefetcher::FinishIfDrainedLocked(Job& job) {
  if (Ended(job) || !job.status.listing_done || !job.pending.empty() || job.status.in_flight > 0) {
    return;
  }
  if (job.stopped.empty()) {
    FinishJobLocked(job, JobState::kDone, "");
  } else {
    FinishJobLocked(job, JobState::kBudgetFull, job.stopped);
  }
}

uint64_t DatasetPrefetcher::JobFixedBytes(const std::vector<std::string>& paths) {
  uint64_t bytes = sizeof(Job);
  for (const auto& p : paths) bytes += sizeof(std::string) + (p.size() > 15 ? p.size() + 1 : 0);
  return bytes;
}

void DatasetPrefetcher::SyncJobChargeLocked(Job& job) {
  // A job that ended holds only its status (kKeptJobs of them at most): nothing is charged.
  const uint64_t bytes = Ended(job) ? 0 : job.fixed_bytes + job.pending.Bytes();
  if (bytes > job.charged) ChargeLocked(job.by, bytes - job.charged);
  if (bytes < job.charged) UnchargeLocked(job.by, job.charged - bytes);
  job.charged = bytes;
}

void DatasetPrefetcher::OnJobDone(const Start& s, FetchResult r) {
  std::shared_ptr<const void> drop;  // released after the lock
  bool retry = false;
  {
    std::lock_guard lock(mu_);
    --job_in_flight_;
    Job* job = FindJobLocked(s.generation);
    if (job) --job->status.in_flight;
    bool read_meanwhile = false;
    if (s.hold) {
      auto f = warm_in_flight_.find(s.item.path);
      if (f != warm_in_flight_.end()) {
        read_meanwhile = f->second;
        warm_in_flight_.erase(f);
      }
    }
    const bool disk_mode = options_.disk_budget > 0;
    if (disk_mode && r.outcome != FetchOutcome::kFetched &&
        r.outcome != FetchOutcome::kAlreadyCached) {
      warm_committed_bytes_ -= std::min(warm_committed_bytes_, s.item.size);
    }
    if (job) {
      WarmupJobStatus& st = job->status;
      switch (r.outcome) {
        case FetchOutcome::kFetched:
          ++st.files_fetched;
          ++st.files_done;
          st.bytes_done += r.bytes;
          if (r.hold && s.hold && !read_meanwhile) {
            auto& slot = warm_holds_[s.item.path];
            drop = std::move(slot);
            slot = std::move(r.hold);
            auto& b = warm_hold_bytes_[s.item.path];
            warm_held_bytes_ = warm_held_bytes_ - b + r.bytes;
            b = r.bytes;
          }
          break;
        case FetchOutcome::kAlreadyCached:
          ++st.files_cached;
          ++st.files_done;
          st.bytes_done += r.bytes;
          break;
        case FetchOutcome::kSkipped:
        case FetchOutcome::kPageCached:  // (hints only: warm-up fills the disk cache)
          ++st.files_skipped;
          ++st.files_done;
          break;
        case FetchOutcome::kFailed:
          ++st.files_failed;
          ++st.files_done;
          spdlog::warn("warm-up: '{}': {}", s.item.path, r.error);
          break;
        case FetchOutcome::kBudgetFull:
          if (!Ended(*job)) {
            FinishJobLocked(
                *job, JobState::kBudgetFull,
                "memory budget reached (--max-memory, " +
                    FormatBytes(static_cast<double>(options_.disk_budget ? 0 : warm_held_bytes_)) +
                    " held by warm-up): stopped; use --cache DIR to warm up to disk");
          }
          break;
        case FetchOutcome::kBusy:
          if (!Ended(*job)) {
            job->pending.PushFront(s.item);
            SyncJobChargeLocked(*job);
            warm_busy_wait_ = true;
            retry = true;
          }
          break;
      }
      FinishIfDrainedLocked(*job);
    }
    if (r.hold) drop = std::move(r.hold);  // not kept (read meanwhile, or no job)
  }
  drop.reset();
  if (retry) ScheduleRetry();
  Pump();
}

size_t DatasetPrefetcher::CancelWarmups() {
  size_t n = 0;
  std::lock_guard lock(mu_);
  for (Job& job : jobs_) {
    if (Ended(job)) continue;
    FinishJobLocked(job, JobState::kCancelled, "cancelled");
    ++n;
  }
  return n;
}

void DatasetPrefetcher::FinishJobLocked(Job& job, JobState state, std::string message) {
  job.status.state = state;
  job.status.message = std::move(message);
  job.pending.Clear();  // queued files are dropped: cancel (or the end) stops all of them
  job.ended = Clock::now();
  SyncJobChargeLocked(job);
  // One line per directory listed would flood the log in automatic mode.
  const auto level = job.automatic ? spdlog::level::debug : spdlog::level::info;
  if (state == JobState::kDone) {
    spdlog::log(level, "warm-up {} done: {} file(s), {} fetched, {} already cached, {} failed",
                job.status.id, job.status.files_done, job.status.files_fetched,
                job.status.files_cached, job.status.files_failed);
  } else {
    spdlog::log(level, "warm-up {} {}: {}", job.status.id, JobStateName(state), job.status.message);
  }
}

DatasetPrefetcher::Job* DatasetPrefetcher::FindJobLocked(uint64_t id) {
  for (Job& j : jobs_) {
    if (j.status.id == id) return &j;
  }
  return nullptr;
}

bool DatasetPrefetcher::Ended(const Job& job) { return job.ended.has_value(); }

// ---------------------------------------------------------------------------------------
// Scheduling

void DatasetPrefetcher::Pump() {
  std::vector<Start> starts;
  {
    std::lock_guard lock(mu_);
    CollectLocked(starts);
  }
  for (Start& s : starts) StartFetch(std::move(s));
}

std::optional<size_t> DatasetPrefetcher::NextHintLocked(HintList& list, uint64_t bytes_share) {
  // The window reaches hint_ahead_files positions past the furthest read. Many workers
  // read a wide band of positions at once (16 workers x 2 batches x 32 = 1,024), so the
  // window is measured from the band's leading edge, not by files outstanding; a hard cap
  // on outstanding files (the stale distance) and the byte share bound what is held.
  const size_t max_outstanding = StaleDistance();
  while (list.next < list.states.size() &&
         list.next < list.read_frontier + options_.hint_ahead_files &&
         list.outstanding_files < max_outstanding && list.outstanding_bytes < bytes_share) {
    const size_t pos = list.next++;
    if (list.states[pos] == PosState::kPending) return pos;
  }
  return std::nullopt;
}

void DatasetPrefetcher::CollectLocked(std::vector<Start>& starts) {
  int total = hint_in_flight_ + job_in_flight_;
  // Hints first: the reader needs them soonest. Each list gets a turn in rotation, so one
  // sender's long window does not starve another's.
  const size_t lists = hint_lists_.size();
  const uint64_t bytes_share =
      lists == 0 ? 0 : std::max<uint64_t>(options_.hint_ahead_bytes / lists, 1);
  bool started = true;
  while (!hint_budget_wait_ && started && total < options_.hint_concurrency) {
    started = false;
    for (size_t k = 0; k < lists && total < options_.hint_concurrency; ++k) {
      HintList& list = *hint_lists_[(hint_turn_ + k) % lists];
      auto pos = NextHintLocked(list, bytes_share);
      if (!pos) continue;
      list.states[*pos] = PosState::kInFlight;
      ++list.in_flight;
      ++list.outstanding_files;
      ++hint_in_flight_;
      ++total;
      Start s;
      s.item.path = std::string((*list.paths)[*pos]);
      s.hold = true;
      s.is_hint = true;
      s.generation = list.generation;
      s.position = *pos;
      starts.push_back(std::move(s));
      started = true;
    }
    if (lists > 0) hint_turn_ = (hint_turn_ + 1) % lists;
  }
  const bool disk_mode = options_.disk_budget > 0;
  for (Job& job : jobs_) {
    if (warm_busy_wait_) break;
    if (Ended(job)) continue;
    while (total < job.concurrency && !job.pending.empty()) {
      Start s;
      s.item = job.pending.Pop();
      const PrefetchItem& item = s.item;
      if (disk_mode) {
        const uint64_t capacity = options_.disk_capacity
                                      ? std::min(options_.disk_budget, options_.disk_capacity())
                                      : options_.disk_budget;
        if (warm_committed_bytes_ + item.size > capacity) {
          const std::string limit =
              capacity < options_.disk_budget
                  ? "disk cache full: its file system keeps --cache-min-free free, which leaves "
                    "room for " +
                        FormatBytes(static_cast<double>(capacity)) + " of --max-cache-size " +
                        FormatBytes(static_cast<double>(options_.disk_budget))
                  : "disk cache budget reached (--max-cache-size " +
                        FormatBytes(static_cast<double>(options_.disk_budget)) + ")";
          FinishJobLocked(job, JobState::kBudgetFull,
                          limit + ": " +
                              std::to_string(job.status.files_done + job.status.in_flight) +
                              " of " + std::to_string(job.status.files_total) +
                              " file(s) warmed; the rest would evict what was just fetched");
          break;
        }
        warm_committed_bytes_ += item.size;
      }
      s.hold = !disk_mode;
      if (s.hold) warm_in_flight_[s.item.path] = false;
      s.generation = job.status.id;
      ++job.status.in_flight;
      ++job_in_flight_;
      ++total;
      starts.push_back(std::move(s));
    }
    SyncJobChargeLocked(job);
    FinishIfDrainedLocked(job);
    if (total >= options_.concurrency) break;
  }
}

void DatasetPrefetcher::StartFetch(Start s) {
  auto self = shared_from_this();
  PrefetchItem item = s.item;
  const bool hold = s.hold;
  fetch_(item, hold, [self, s = std::move(s)](FetchResult r) {
    if (s.is_hint) {
      self->OnHintDone(s, std::move(r));
    } else {
      self->OnJobDone(s, std::move(r));
    }
  });
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
      self->warm_busy_wait_ = false;
    }
    self->Pump();
  });
}

// ---------------------------------------------------------------------------------------
// Status

HintStatus DatasetPrefetcher::HintListStatusLocked(const HintList& list) const {
  HintStatus st = list.counters;
  st.generation = list.generation;
  st.pid = list.sender.pid;
  st.name = list.sender.name;
  st.files = list.states.size();
  st.memory_bytes = list.bytes;
  st.uid = list.sender.by.uid;
  st.next = list.next;
  st.outstanding_files = list.outstanding_files;
  st.outstanding_bytes = list.outstanding_bytes;
  st.in_flight = list.in_flight;
  st.budget_wait = hint_budget_wait_;
  return st;
}

PrefetchStatus DatasetPrefetcher::Status() const {
  PrefetchStatus out;
  std::lock_guard lock(mu_);
  HintStatus& sum = out.hints;
  for (const auto& l : hint_lists_) {
    HintStatus st = HintListStatusLocked(*l);
    sum.files += st.files;
    sum.next += st.next;
    sum.read += st.read;
    sum.fetched += st.fetched;
    sum.failed += st.failed;
    sum.page_cached += st.page_cached;
    sum.released_unread += st.released_unread;
    sum.outstanding_files += st.outstanding_files;
    sum.outstanding_bytes += st.outstanding_bytes;
    sum.memory_bytes += st.memory_bytes;
    out.hint_lists.push_back(st);
  }
  sum.generation = hint_generation_;
  sum.in_flight = hint_in_flight_;
  sum.budget_wait = hint_budget_wait_;
  const auto now = Clock::now();
  for (const Job& job : jobs_) {
    WarmupJobStatus st = job.status;
    st.seconds = std::chrono::duration<double>(job.ended.value_or(now) - job.started).count();
    st.queued_files = job.pending.size();
    st.queued_bytes = job.pending.Bytes();
    out.control_memory.warmup_bytes += job.charged;
    out.jobs.push_back(std::move(st));
  }
  out.held_bytes = sum.outstanding_bytes + warm_held_bytes_;
  out.in_flight = hint_in_flight_ + job_in_flight_;
  ControlMemoryStatus& cm = out.control_memory;
  cm.used = control_used_;
  cm.limit = options_.control_memory;
  cm.other_users_used = others_used_;
  cm.other_users_limit = OthersLimit();
  cm.hint_bytes = sum.memory_bytes + hint_reserved_;
  return out;
}

std::string DatasetPrefetcher::StatusJson() const {
  PrefetchStatus st = Status();
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("in_flight");
  w.Int(st.in_flight);
  w.Key("held_bytes");
  w.Uint64(st.held_bytes);
  w.Key("concurrency");
  w.Int(options_.concurrency);
  w.Key("hint_concurrency");
  w.Int(options_.hint_concurrency);
  // The counters of one list, or of all of them summed.
  auto hint_fields = [&w](const HintStatus& h) {
    w.Key("files");
    w.Uint64(h.files);
    w.Key("next");
    w.Uint64(h.next);
    w.Key("read");
    w.Uint64(h.read);
    w.Key("fetched");
    w.Uint64(h.fetched);
    w.Key("failed");
    w.Uint64(h.failed);
    w.Key("page_cached");
    w.Uint64(h.page_cached);
    w.Key("released_unread");
    w.Uint64(h.released_unread);
    w.Key("outstanding_files");
    w.Uint64(h.outstanding_files);
    w.Key("outstanding_bytes");
    w.Uint64(h.outstanding_bytes);
    w.Key("in_flight");
    w.Int(h.in_flight);
    w.Key("memory_bytes");
    w.Uint64(h.memory_bytes);
  };
  w.Key("hints");
  w.StartObject();
  w.Key("lists");
  w.Uint64(st.hints.generation);
  hint_fields(st.hints);
  w.Key("budget_wait");
  w.Bool(st.hints.budget_wait);
  w.Key("senders");
  w.StartArray();
  for (const HintStatus& h : st.hint_lists) {
    w.StartObject();
    w.Key("pid");
    w.Int(h.pid);
    w.Key("uid");
    w.Uint(h.uid);
    if (!h.name.empty()) {
      w.Key("name");
      w.String(h.name.c_str(), static_cast<rapidjson::SizeType>(h.name.size()));
    }
    w.Key("list");
    w.Uint64(h.generation);
    hint_fields(h);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  w.Key("jobs");
  w.StartArray();
  for (const WarmupJobStatus& j : st.jobs) {
    w.StartObject();
    w.Key("id");
    w.Uint64(j.id);
    w.Key("paths");
    w.StartArray();
    for (const auto& p : j.paths) w.String(p.c_str(), static_cast<rapidjson::SizeType>(p.size()));
    w.EndArray();
    w.Key("state");
    w.String(JobStateName(j.state));
    w.Key("listing_done");
    w.Bool(j.listing_done);
    w.Key("files_total");
    w.Uint64(j.files_total);
    w.Key("bytes_total");
    w.Uint64(j.bytes_total);
    w.Key("files_done");
    w.Uint64(j.files_done);
    w.Key("bytes_done");
    w.Uint64(j.bytes_done);
    w.Key("files_fetched");
    w.Uint64(j.files_fetched);
    w.Key("files_cached");
    w.Uint64(j.files_cached);
    w.Key("files_skipped");
    w.Uint64(j.files_skipped);
    w.Key("files_failed");
    w.Uint64(j.files_failed);
    w.Key("in_flight");
    w.Int(j.in_flight);
    w.Key("seconds");
    w.Double(j.seconds);
    w.Key("message");
    w.String(j.message.c_str(), static_cast<rapidjson::SizeType>(j.message.size()));
    w.Key("queued_files");
    w.Uint64(j.queued_files);
    w.Key("queued_bytes");
    w.Uint64(j.queued_bytes);
    w.Key("uid");
    w.Uint(j.uid);
    w.EndObject();
  }
  w.EndArray();
  const ControlMemoryStatus& cm = st.control_memory;
  w.Key("control_memory");
  w.StartObject();
  w.Key("used");
  w.Uint64(cm.used);
  w.Key("limit");
  w.Uint64(cm.limit);
  w.Key("other_users_used");
  w.Uint64(cm.other_users_used);
  w.Key("other_users_limit");
  w.Uint64(cm.other_users_limit);
  w.Key("hint_bytes");
  w.Uint64(cm.hint_bytes);
  w.Key("warmup_bytes");
  w.Uint64(cm.warmup_bytes);
  w.EndObject();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace ossmount::prefetch
