#include "prefetch/dataset_prefetcher.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <spdlog/spdlog.h>

#include <algorithm>

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

size_t DatasetPrefetcher::SetHints(std::vector<std::string> paths) {
  // Built outside the lock: a list can hold millions of paths.
  std::unordered_map<std::string, std::vector<size_t>> positions;
  positions.reserve(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) positions[paths[i]].push_back(i);
  std::vector<Hint> fresh(paths.size());
  const size_t n = paths.size();

  std::vector<Hint> old_hints;  // released after the lock (holds free buffers)
  std::vector<std::string> old_paths;
  std::unordered_map<std::string, std::vector<size_t>> old_positions;
  {
    std::lock_guard lock(mu_);
    ++hint_generation_;
    old_hints.swap(hints_);
    old_paths.swap(hint_paths_);
    old_positions.swap(hint_positions_);
    hints_ = std::move(fresh);
    hint_paths_ = std::move(paths);
    hint_positions_ = std::move(positions);
    hint_next_ = 0;
    hint_read_frontier_ = 0;
    hint_held_.clear();
    hint_outstanding_files_ = 0;
    hint_outstanding_bytes_ = 0;
    hint_budget_wait_ = false;
    hint_counters_ = HintStatus{};
  }
  old_hints.clear();
  Pump();
  return n;
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
    auto it = hint_positions_.find(path);
    if (it != hint_positions_.end()) {
      for (size_t pos : it->second) {
        Hint& h = hints_[pos];
        if (h.state == PosState::kRead) continue;
        if (h.state == PosState::kInFlight) --hint_outstanding_files_;
        if (h.state == PosState::kHeld) {
          --hint_outstanding_files_;
          hint_outstanding_bytes_ -= h.bytes;
          hint_held_.erase(pos);
          drop.push_back(std::move(h.hold));
        }
        h.state = PosState::kRead;
        ++hint_counters_.read;
        hint_read_frontier_ = std::max(hint_read_frontier_, pos + 1);
        break;
      }
      // A held file far behind the furthest read was skipped by the reader: release it.
      const size_t lag = kStaleFactor * std::max<size_t>(options_.hint_ahead_files, 1);
      while (!hint_held_.empty() && hint_held_.begin()->first + lag < hint_read_frontier_) {
        auto [pos, bytes] = *hint_held_.begin();
        hint_held_.erase(hint_held_.begin());
        Hint& h = hints_[pos];
        drop.push_back(std::move(h.hold));
        h.state = PosState::kDone;
        --hint_outstanding_files_;
        hint_outstanding_bytes_ -= bytes;
        ++hint_counters_.released_unread;
      }
      changed = true;
    }
    if (changed) hint_budget_wait_ = false;
  }
  drop.clear();
  if (changed) Pump();
}

void DatasetPrefetcher::OnHintDone(const Start& s, FetchResult r) {
  std::shared_ptr<const void> drop;  // released after the lock
  {
    std::lock_guard lock(mu_);
    --hint_in_flight_;
    if (s.generation != hint_generation_) {
      drop = std::move(r.hold);  // a replaced list: nothing to account
    } else {
      Hint& h = hints_[s.position];
      const bool read = h.state == PosState::kRead;
      if (r.outcome == FetchOutcome::kFetched) ++hint_counters_.fetched;
      if (r.outcome == FetchOutcome::kFailed) {
        ++hint_counters_.failed;
        spdlog::debug("hint prefetch of '{}' failed: {}", s.item.path, r.error);
      }
      if (read) {
        drop = std::move(r.hold);  // the reader joined the fetch and holds the bytes
      } else if (r.outcome == FetchOutcome::kFetched && r.hold) {
        h.state = PosState::kHeld;
        h.bytes = r.bytes;
        h.hold = std::move(r.hold);
        hint_held_[s.position] = r.bytes;
        hint_outstanding_bytes_ += r.bytes;
      } else if (r.outcome == FetchOutcome::kBudgetFull || r.outcome == FetchOutcome::kBusy) {
        // Not fetched: try this position again once reads free memory (or shortly).
        h.state = PosState::kPending;
        hint_next_ = std::min(hint_next_, s.position);
        --hint_outstanding_files_;
        if (r.outcome == FetchOutcome::kBudgetFull) hint_budget_wait_ = true;
      } else {
        h.state = PosState::kDone;
        --hint_outstanding_files_;
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
          if (!job || Ended(*job)) return;
          for (auto& item : items) {
            job->status.bytes_total += item.size;
            ++job->status.files_total;
            job->pending.push_back(std::move(item));
          }
          job->status.state = JobState::kRunning;
        }
        self->Pump();
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

void DatasetPrefetcher::CollectLocked(std::vector<Start>& starts) {
  int total = hint_in_flight_ + job_in_flight_;
  // Hints first: the reader needs them soonest.
  // The window reaches hint_ahead_files positions past the furthest read. Many workers
  // read a wide band of positions at once (16 workers x 2 batches x 32 = 1,024), so the
  // window is measured from the band's leading edge, not by files outstanding; a hard cap
  // on outstanding files (the stale distance) and the byte limit bound what is held.
  const size_t max_outstanding = kStaleFactor * std::max<size_t>(options_.hint_ahead_files, 1);
  while (!hint_budget_wait_ && total < options_.hint_concurrency && hint_next_ < hints_.size() &&
         hint_next_ < hint_read_frontier_ + options_.hint_ahead_files &&
         hint_outstanding_files_ < max_outstanding &&
         hint_outstanding_bytes_ < options_.hint_ahead_bytes) {
    const size_t pos = hint_next_++;
    Hint& h = hints_[pos];
    if (h.state != PosState::kPending) continue;
    h.state = PosState::kInFlight;
    ++hint_in_flight_;
    ++hint_outstanding_files_;
    ++total;
    Start s;
    s.item.path = hint_paths_[pos];
    s.hold = true;
    s.is_hint = true;
    s.generation = hint_generation_;
    s.position = pos;
    starts.push_back(std::move(s));
  }
  const bool disk_mode = options_.disk_budget > 0;
  for (Job& job : jobs_) {
    if (warm_busy_wait_) break;
    if (Ended(job)) continue;
    while (total < job.concurrency && !job.pending.empty()) {
      PrefetchItem& item = job.pending.front();
      if (disk_mode) {
        if (warm_committed_bytes_ + item.size > options_.disk_budget) {
          FinishJobLocked(job, JobState::kBudgetFull,
                          "disk cache budget reached (--max-cache-size " +
                              FormatBytes(static_cast<double>(options_.disk_budget)) +
                              "): " + std::to_string(job.status.files_done + job.status.in_flight) +
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

PrefetchStatus DatasetPrefetcher::Status() const {
  PrefetchStatus out;
  std::lock_guard lock(mu_);
  out.hints = hint_counters_;
  out.hints.generation = hint_generation_;
  out.hints.files = hints_.size();
  out.hints.next = hint_next_;
  out.hints.outstanding_files = hint_outstanding_files_;
  out.hints.outstanding_bytes = hint_outstanding_bytes_;
  out.hints.in_flight = hint_in_flight_;
  out.hints.budget_wait = hint_budget_wait_;
  const auto now = Clock::now();
  for (const Job& job : jobs_) {
    WarmupJobStatus st = job.status;
    st.seconds = std::chrono::duration<double>(job.ended.value_or(now) - job.started).count();
    out.jobs.push_back(std::move(st));
  }
  out.held_bytes = hint_outstanding_bytes_ + warm_held_bytes_;
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
  w.Key("hints");
  w.StartObject();
  w.Key("lists");
  w.Uint64(st.hints.generation);
  w.Key("files");
  w.Uint64(st.hints.files);
  w.Key("next");
  w.Uint64(st.hints.next);
  w.Key("read");
  w.Uint64(st.hints.read);
  w.Key("fetched");
  w.Uint64(st.hints.fetched);
  w.Key("failed");
  w.Uint64(st.hints.failed);
  w.Key("released_unread");
  w.Uint64(st.hints.released_unread);
  w.Key("outstanding_files");
  w.Uint64(st.hints.outstanding_files);
  w.Key("outstanding_bytes");
  w.Uint64(st.hints.outstanding_bytes);
  w.Key("in_flight");
  w.Int(st.hints.in_flight);
  w.Key("budget_wait");
  w.Bool(st.hints.budget_wait);
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
