#include "prefetch/dataset_prefetcher.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>

#include "common/format_bytes.h"

namespace ossmount::prefetch {

namespace {

using Clock = std::chrono::steady_clock;

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
      retry_timer_(std::make_unique<boost::asio::steady_timer>(io)) {}

DatasetPrefetcher::~DatasetPrefetcher() = default;

// ---------------------------------------------------------------------------------------
// Hints

size_t DatasetPrefetcher::AppendHints(std::vector<std::string> paths, HintSender sender) {
  const size_t n = paths.size();
  {
    std::lock_guard lock(mu_);
    for (auto& list : hint_lists_) {
      if (!list->sender.SameAs(sender)) continue;
      const size_t base = list->paths.size();
      for (size_t i = 0; i < n; ++i) list->positions[paths[i]].push_back(base + i);
      list->hints.resize(base + n);
      list->paths.insert(list->paths.end(), std::make_move_iterator(paths.begin()),
                         std::make_move_iterator(paths.end()));
      hint_budget_wait_ = false;
      paths.clear();
      break;
    }
  }
  if (!paths.empty()) return SetHints(std::move(paths), std::move(sender));
  Pump();
  return n;
}

size_t DatasetPrefetcher::SetHints(std::vector<std::string> paths, HintSender sender) {
  // Built outside the lock: a list can hold millions of paths.
  auto list = std::make_unique<HintList>();
  list->positions.reserve(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) list->positions[paths[i]].push_back(i);
  list->hints.resize(paths.size());
  list->paths = std::move(paths);
  list->sender = std::move(sender);
  const size_t n = list->paths.size();

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
        gone.push_back(std::move(hint_lists_.front()));
        hint_lists_.erase(hint_lists_.begin());
      }
      hint_lists_.push_back(std::move(list));
    }
    for (auto& l : gone) ReleaseHintListLocked(*l, drop);
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
  for (const auto& held : list.held) drop.push_back(std::move(list.hints[held.first].hold));
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
  auto it = list.positions.find(path);
  if (it == list.positions.end()) return std::nullopt;
  for (size_t pos : it->second) {
    if (list.hints[pos].state != PosState::kRead) return pos;
  }
  return std::nullopt;
}

void DatasetPrefetcher::MarkHintReadLocked(HintList& list, size_t pos,
                                           std::vector<std::shared_ptr<const void>>& drop) {
  Hint& h = list.hints[pos];
  if (h.state == PosState::kInFlight) --list.outstanding_files;
  if (h.state == PosState::kHeld) {
    --list.outstanding_files;
    list.outstanding_bytes -= h.bytes;
    list.held.erase(pos);
    drop.push_back(std::move(h.hold));
  }
  h.state = PosState::kRead;
  ++list.counters.read;
  list.read_frontier = std::max(list.read_frontier, pos + 1);
  // A held file far behind the furthest read was skipped by the reader: release it.
  const size_t lag = StaleDistance();
  while (!list.held.empty() && list.held.begin()->first + lag < list.read_frontier) {
    auto [old, bytes] = *list.held.begin();
    list.held.erase(list.held.begin());
    Hint& skipped = list.hints[old];
    drop.push_back(std::move(skipped.hold));
    skipped.state = PosState::kDone;
    --list.outstanding_files;
    list.outstanding_bytes -= bytes;
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
        if (list.hints[pos].state != PosState::kPageCached) continue;
        list.hints[pos].state = PosState::kPending;
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
      Hint& h = list->hints[s.position];
      const bool read = h.state == PosState::kRead;
      if (r.outcome == FetchOutcome::kFetched) ++list->counters.fetched;
      if (r.outcome == FetchOutcome::kPageCached) ++list->counters.page_cached;
      if (r.outcome == FetchOutcome::kFailed) {
        ++list->counters.failed;
        spdlog::debug("hint prefetch of '{}' failed: {}", s.item.path, r.error);
      }
      if (read) {
        drop = std::move(r.hold);  // the reader joined the fetch and holds the bytes
      } else if (r.outcome == FetchOutcome::kFetched && r.hold) {
        h.state = PosState::kHeld;
        h.bytes = r.bytes;
        h.hold = std::move(r.hold);
        list->held[s.position] = r.bytes;
        list->outstanding_bytes += r.bytes;
      } else if (r.outcome == FetchOutcome::kBudgetFull || r.outcome == FetchOutcome::kBusy) {
        // Not fetched: try this position again once reads free memory (or shortly).
        h.state = PosState::kPending;
        list->next = std::min(list->next, s.position);
        --list->outstanding_files;
        if (r.outcome == FetchOutcome::kBudgetFull) hint_budget_wait_ = true;
      } else if (r.outcome == FetchOutcome::kPageCached) {
        h.state = PosState::kPageCached;  // RefetchPageCached may want it yet
        --list->outstanding_files;
      } else {
        h.state = PosState::kDone;
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

uint64_t DatasetPrefetcher::AddJobLocked(std::vector<std::string> paths, int concurrency) {
  Job job;
  job.status.id = next_job_id_++;
  job.status.paths = std::move(paths);
  job.concurrency = concurrency > 0 ? concurrency : options_.concurrency;
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
  uint64_t id;
  {
    std::lock_guard lock(mu_);
    warm_committed_bytes_ = 0;  // an explicit request: the whole cache is its budget again
    id = AddJobLocked(std::move(paths), concurrency);
  }
  ListNext(id, 0);
  return id;
}

uint64_t DatasetPrefetcher::EnqueueFiles(std::string label, std::vector<PrefetchItem> items) {
  if (items.empty()) return 0;
  uint64_t id;
  {
    std::lock_guard lock(mu_);
    id = AddJobLocked({std::move(label)}, 0);
    Job& job = jobs_.back();
    job.automatic = true;
    for (const auto& item : items) job.status.bytes_total += item.size;
    job.status.files_total = items.size();
    job.pending.assign(std::make_move_iterator(items.begin()),
                       std::make_move_iterator(items.end()));
    job.status.listing_done = true;
    job.status.state = JobState::kRunning;
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
    if (!job || Ended(*job)) return;
    if (path_index >= job->status.paths.size()) {
      job->status.listing_done = true;
      if (job->status.state == JobState::kListing) job->status.state = JobState::kRunning;
      if (job->pending.empty() && job->status.in_flight == 0) {
        FinishJobLocked(*job, JobState::kDone, "");
      }
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
          if (!job || Ended(*job)) return false;
          for (auto& item : items) {
            job->status.bytes_total += item.size;
            ++job->status.files_total;
            job->pending.push_back(std::move(item));
          }
          job->status.state = JobState::kRunning;
        }
        self->Pump();
        return true;
      },
      [self, id, path_index, path](ossmount::Status st) {
        if (!st.ok()) {
          {
            std::lock_guard lock(self->mu_);
            Job* job = self->FindJobLocked(id);
            if (job && !Ended(*job)) {
              job->status.listing_done = true;
              self->FinishJobLocked(*job, JobState::kFailed,
                                    "cannot list '" + path + "': " + st.message());
            }
          }
          self->Pump();
          return;
        }
        self->ListNext(id, path_index + 1);
      });
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
            job->pending.push_front(s.item);
            warm_busy_wait_ = true;
            retry = true;
          }
          break;
      }
      if (!Ended(*job) && st.listing_done && job->pending.empty() && st.in_flight == 0) {
        FinishJobLocked(*job, JobState::kDone, "");
      }
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
  job.pending.clear();
  job.ended = Clock::now();
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
  while (list.next < list.hints.size() &&
         list.next < list.read_frontier + options_.hint_ahead_files &&
         list.outstanding_files < max_outstanding && list.outstanding_bytes < bytes_share) {
    const size_t pos = list.next++;
    if (list.hints[pos].state == PosState::kPending) return pos;
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
      list.hints[*pos].state = PosState::kInFlight;
      ++list.in_flight;
      ++list.outstanding_files;
      ++hint_in_flight_;
      ++total;
      Start s;
      s.item.path = list.paths[*pos];
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
      PrefetchItem& item = job.pending.front();
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
      Start s;
      s.item = std::move(item);
      job.pending.pop_front();
      s.hold = !disk_mode;
      if (s.hold) warm_in_flight_[s.item.path] = false;
      s.generation = job.status.id;
      ++job.status.in_flight;
      ++job_in_flight_;
      ++total;
      starts.push_back(std::move(s));
    }
    if (!Ended(job) && job.status.listing_done && job.pending.empty() &&
        job.status.in_flight == 0) {
      FinishJobLocked(job, JobState::kDone, "");
    }
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
  st.files = list.hints.size();
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
    out.hint_lists.push_back(st);
  }
  sum.generation = hint_generation_;
  sum.in_flight = hint_in_flight_;
  sum.budget_wait = hint_budget_wait_;
  const auto now = Clock::now();
  for (const Job& job : jobs_) {
    WarmupJobStatus st = job.status;
    st.seconds = std::chrono::duration<double>(job.ended.value_or(now) - job.started).count();
    out.jobs.push_back(std::move(st));
  }
  out.held_bytes = sum.outstanding_bytes + warm_held_bytes_;
  out.in_flight = hint_in_flight_ + job_in_flight_;
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
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace ossmount::prefetch
