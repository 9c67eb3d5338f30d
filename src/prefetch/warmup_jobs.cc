#include "prefetch/warmup_jobs.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/format_bytes.h"

namespace ossmount::prefetch {

namespace {

std::string WarmupBytes(uint64_t n) { return FormatBytes(static_cast<double>(n)); }

}  // namespace

WarmupJobs::WarmupJobs(const DatasetPrefetchOptions& options, ControlMemory& memory)
    : options_(options), memory_(memory) {}

WarmupJobs::Job& WarmupJobs::Add(std::vector<std::string> paths, int concurrency, Requester by) {
  Job job;
  job.status.id = next_id_++;
  job.status.paths = std::move(paths);
  job.status.uid = by.uid;
  job.concurrency = concurrency > 0 ? concurrency : options_.concurrency;
  job.by = by;
  job.fixed_bytes = FixedBytes(job.status.paths);
  job.started = Clock::now();
  jobs_.push_back(std::move(job));
  Trim();
  return jobs_.back();
}

void WarmupJobs::Trim() {
  size_t ended = 0;
  for (const Job& j : jobs_) ended += Ended(j) ? 1 : 0;
  while (ended > kKeptJobs && !jobs_.empty()) {
    auto it = std::find_if(jobs_.begin(), jobs_.end(), [](const Job& j) { return Ended(j); });
    if (it == jobs_.end() || it->status.in_flight > 0) break;
    jobs_.erase(it);
    --ended;
  }
}

Result<uint64_t> WarmupJobs::Start(const Requester& by, std::vector<std::string> paths,
                                   int concurrency) {
  if (paths.size() > kMaxWarmupPaths) {
    return ossmount::Status(ErrorCode::kInvalidArgument,
                            "a warm-up takes at most " + std::to_string(kMaxWarmupPaths) +
                                " paths (this one has " + std::to_string(paths.size()) +
                                "); warm up a directory that holds them");
  }
  if (!by.owner) {
    size_t running = 0;
    for (const Job& j : jobs_) running += !Ended(j) && !j.by.owner && j.by.uid == by.uid ? 1 : 0;
    if (running >= kOtherUserJobs) {
      return ossmount::Status(
          ErrorCode::kNoSpace,
          "uid " + std::to_string(by.uid) + " has " + std::to_string(running) +
              " warm-ups running already: a user other than the mount's owner and "
              "root may run at most " +
              std::to_string(kOtherUserJobs) + " (and have " + std::to_string(kOtherUserHintLists) +
              " hint lists) at once; wait for one to end");
    }
    // Another user's job runs at most at the mount's warm-up concurrency.
    concurrency =
        std::min(concurrency > 0 ? concurrency : options_.concurrency, options_.concurrency);
  }
  // A job needs room for itself and at least one block of listed files.
  const uint64_t need = FixedBytes(paths) + WarmupQueue::kBlockBytes;
  if (!memory_.Fits(by, need)) {
    return ossmount::Status(ErrorCode::kNoSpace, "a warm-up needs " + WarmupBytes(need) +
                                                     " to queue the files it lists; " +
                                                     memory_.NoRoomMessage(by, need));
  }
  committed_bytes_ = 0;  // an explicit request: the whole cache is its budget again
  Job& job = Add(std::move(paths), concurrency, by);
  SyncCharge(job);
  return job.status.id;
}

std::pair<uint64_t, bool> WarmupJobs::AddFiles(std::string label,
                                               const std::vector<PrefetchItem>& items) {
  Job& job = Add({std::move(label)}, 0, Requester{});
  job.automatic = true;
  for (const auto& item : items) job.status.bytes_total += item.size;
  job.status.files_total = items.size();
  job.status.listing_done = true;
  job.status.state = JobState::kRunning;
  const uint64_t bytes = job.fixed_bytes + job.pending.BytesAfter(items);
  if (!memory_.TryCharge(job.by, bytes)) {
    Finish(job, JobState::kBudgetFull,
           "queuing " + std::to_string(items.size()) + " listed file(s) needs " +
               WarmupBytes(bytes) + "; " + memory_.NoRoomMessage(job.by, bytes) + "; not warmed");
    return {job.status.id, false};
  }
  job.charged = bytes;
  for (const auto& item : items) job.pending.Push(item);
  SyncCharge(job);
  return {job.status.id, true};
}

WarmupJobs::ListStep WarmupJobs::NextPath(uint64_t id, size_t index, std::string* path) {
  Job* job = Find(id);
  // A job that ended (cancelled, failed, budget) lists nothing more.
  if (!job || Ended(*job)) return ListStep::kNone;
  if (index < job->status.paths.size()) {
    *path = job->status.paths[index];
    return ListStep::kPath;
  }
  job->status.listing_done = true;
  if (job->status.state == JobState::kListing) job->status.state = JobState::kRunning;
  FinishIfDrained(*job);
  return ListStep::kOver;
}

bool WarmupJobs::OnPage(uint64_t id, std::vector<PrefetchItem> items, bool* queued) {
  *queued = false;
  Job* job = Find(id);
  // Ended (cancelled) or stopped: no further page.
  if (!job || Ended(*job) || !job->stopped.empty()) return false;
  if (items.empty()) return true;  // a page of directory markers only
  const uint64_t queue_after = job->pending.BytesAfter(items);
  const uint64_t after = job->fixed_bytes + queue_after;
  const uint64_t growth = after - std::min(after, job->charged);
  if (!memory_.TryCharge(job->by, growth)) {
    // The queue would take the control memory past its limit: listing stops here, what is
    // queued is warmed, and the job then ends budget-full saying why.
    job->stopped = "stopped listing after " + std::to_string(job->status.files_total) +
                   " file(s): the next " + std::to_string(items.size()) +
                   " would take its queue of listed files from " +
                   WarmupBytes(job->pending.Bytes()) + " to " + WarmupBytes(queue_after) + "; " +
                   memory_.NoRoomMessage(job->by, growth) +
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
  SyncCharge(*job);
  job->status.state = JobState::kRunning;
  *queued = true;
  return true;
}

WarmupJobs::ListingEnd WarmupJobs::OnListingDone(uint64_t id, const std::string& path,
                                                 const ossmount::Status& status) {
  Job* job = Find(id);
  // Cancelled (or ended otherwise) meanwhile: its state stays, nothing restarts.
  if (!job || Ended(*job)) return ListingEnd::kNone;
  if (!job->stopped.empty()) {
    // Stopped by the control memory: no further path is listed.
    job->status.listing_done = true;
    if (job->status.state == JobState::kListing) job->status.state = JobState::kRunning;
    FinishIfDrained(*job);
    return ListingEnd::kPump;
  }
  if (!status.ok()) {
    job->status.listing_done = true;
    Finish(*job, JobState::kFailed, "cannot list '" + path + "': " + status.message());
    return ListingEnd::kPump;
  }
  return ListingEnd::kNextPath;
}

bool WarmupJobs::FitsDisk(Job& job, const PrefetchItem& item) {
  const uint64_t budget = options_.disk_budget;
  const uint64_t capacity =
      options_.disk_capacity ? std::min(budget, options_.disk_capacity()) : budget;
  if (committed_bytes_ + item.size <= capacity) return true;
  const std::string limit =
      capacity < budget
          ? "disk cache full: its file system keeps --cache-min-free free, which leaves room "
            "for " +
                WarmupBytes(capacity) + " of --max-cache-size " + WarmupBytes(budget)
          : "disk cache budget reached (--max-cache-size " + WarmupBytes(budget) + ")";
  Finish(job, JobState::kBudgetFull,
         limit + ": " + std::to_string(job.status.files_done + job.status.in_flight) + " of " +
             std::to_string(job.status.files_total) +
             " file(s) warmed; the rest would evict what was just fetched");
  return false;
}

void WarmupJobs::Collect(int& total, std::vector<WarmupStart>& starts) {
  const bool disk_mode = options_.disk_budget > 0;
  for (Job& job : jobs_) {
    if (busy_wait_) break;
    if (Ended(job)) continue;
    while (total < job.concurrency && !job.pending.empty()) {
      WarmupStart s;
      s.item = job.pending.Pop();
      if (disk_mode) {
        if (!FitsDisk(job, s.item)) break;
        committed_bytes_ += s.item.size;
      }
      s.hold = !disk_mode;
      if (s.hold) holds_.Fetching(s.item.path);
      s.job = job.status.id;
      ++job.status.in_flight;
      ++in_flight_;
      ++total;
      starts.push_back(std::move(s));
    }
    SyncCharge(job);
    FinishIfDrained(job);
    if (total >= options_.concurrency) break;
  }
}

bool WarmupJobs::OnFetchDone(const WarmupStart& s, FetchResult r, Drops& drop) {
  --in_flight_;
  Job* job = Find(s.job);
  if (job) --job->status.in_flight;
  const bool read_meanwhile = s.hold && holds_.Fetched(s.item.path);
  const bool disk_mode = options_.disk_budget > 0;
  if (disk_mode && r.outcome != FetchOutcome::kFetched &&
      r.outcome != FetchOutcome::kAlreadyCached) {
    committed_bytes_ -= std::min(committed_bytes_, s.item.size);
  }
  bool busy = false;
  if (job) {
    WarmupJobStatus& st = job->status;
    switch (r.outcome) {
      case FetchOutcome::kFetched:
        ++st.files_fetched;
        ++st.files_done;
        st.bytes_done += r.bytes;
        if (r.hold && s.hold && !read_meanwhile) {
          holds_.Hold(s.item.path, std::move(r.hold), r.bytes, drop);
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
          Finish(*job, JobState::kBudgetFull,
                 "memory budget reached (--max-memory, " +
                     WarmupBytes(options_.disk_budget ? 0 : holds_.bytes()) +
                     " held by warm-up): stopped; use --cache DIR to warm up to disk");
        }
        break;
      case FetchOutcome::kBusy:
        if (!Ended(*job)) {
          job->pending.PushFront(s.item);
          SyncCharge(*job);
          busy_wait_ = true;
          busy = true;
        }
        break;
    }
    FinishIfDrained(*job);
  }
  if (r.hold) drop.push_back(std::move(r.hold));  // not kept (read meanwhile, or no job)
  return busy;
}

size_t WarmupJobs::CancelAll() {
  size_t n = 0;
  for (Job& job : jobs_) {
    if (Ended(job)) continue;
    Finish(job, JobState::kCancelled, "cancelled");
    ++n;
  }
  return n;
}

void WarmupJobs::Finish(Job& job, JobState state, std::string message) {
  job.status.state = state;
  job.status.message = std::move(message);
  job.pending.Clear();  // queued files are dropped: cancel (or the end) stops all of them
  job.ended = Clock::now();
  SyncCharge(job);
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

void WarmupJobs::FinishIfDrained(Job& job) {
  if (Ended(job) || !job.status.listing_done || !job.pending.empty() || job.status.in_flight > 0) {
    return;
  }
  if (job.stopped.empty()) {
    Finish(job, JobState::kDone, "");
  } else {
    Finish(job, JobState::kBudgetFull, job.stopped);
  }
}

uint64_t WarmupJobs::FixedBytes(const std::vector<std::string>& paths) {
  uint64_t bytes = sizeof(Job);
  for (const auto& p : paths) bytes += sizeof(std::string) + (p.size() > 15 ? p.size() + 1 : 0);
  return bytes;
}

void WarmupJobs::SyncCharge(Job& job) {
  // A job that ended holds only its status (kKeptJobs of them at most): nothing is charged.
  const uint64_t bytes = Ended(job) ? 0 : job.fixed_bytes + job.pending.Bytes();
  if (bytes > job.charged) memory_.Charge(job.by, bytes - job.charged);
  if (bytes < job.charged) memory_.Uncharge(job.by, job.charged - bytes);
  job.charged = bytes;
}

WarmupJobs::Job* WarmupJobs::Find(uint64_t id) {
  for (Job& j : jobs_) {
    if (j.status.id == id) return &j;
  }
  return nullptr;
}

uint64_t WarmupJobs::Status(std::vector<WarmupJobStatus>& out) const {
  const auto now = Clock::now();
  uint64_t charged = 0;
  for (const Job& job : jobs_) {
    WarmupJobStatus st = job.status;
    st.seconds = std::chrono::duration<double>(job.ended.value_or(now) - job.started).count();
    st.queued_files = job.pending.size();
    st.queued_bytes = job.pending.Bytes();
    charged += job.charged;
    out.push_back(std::move(st));
  }
  return charged;
}

}  // namespace ossmount::prefetch
