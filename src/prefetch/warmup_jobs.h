// WarmupJobs: warm-up jobs (ossmount warmup, --prefetch-on-list) and their progress: each
// job's paths listed in order into its queue, its files handed out to start in queue order,
// its state and counters. A job ends done; budget-full (the disk cache's room, the memory
// budget, or the control memory its queue would take); failed (a listing error); or
// cancelled. Decisions only: the prefetcher lists and fetches what it says.
//
// Thread-safety: none; the prefetcher guards it. Ownership: owns the queues (charged to the
// ControlMemory) and, in memory mode, the fetched bytes until their first read (WarmHolds).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ossmount/status.h"
#include "prefetch/control_memory.h"
#include "prefetch/fetch_result.h"
#include "prefetch/prefetch_item.h"
#include "prefetch/prefetch_options.h"
#include "prefetch/prefetch_status.h"
#include "prefetch/warm_holds.h"
#include "prefetch/warmup_queue.h"

namespace ossmount::prefetch {

// A warm-up file to fetch for job `job`; `hold`: keep the bytes in memory until read.
struct WarmupStart {
  uint64_t job = 0;
  PrefetchItem item;
  bool hold = false;
};

class WarmupJobs {
 public:
  static constexpr size_t kKeptJobs = 32;
  // Paths one warm-up may name: a job keeps them for its status (kKeptJobs after it ends).
  static constexpr size_t kMaxWarmupPaths = 4096;

  // What the caller does after a listing step.
  enum class ListStep {
    kNone,  // the job ended or is gone: nothing
    kPath,  // list the path returned
    kOver,  // the job is listed: start what it queued
  };
  enum class ListingEnd {
    kNone,      // the job ended or is gone: nothing
    kNextPath,  // list the job's next path
    kPump,      // no further path: start what is queued
  };

  WarmupJobs(const DatasetPrefetchOptions& options, ControlMemory& memory);

  // A job listing `paths` for `by` (concurrency 0: the default). kInvalidArgument past
  // kMaxWarmupPaths; kNoSpace when `by` is another user with kOtherUserJobs running, or the
  // control memory has no room to queue a listed page. Gives the disk cache's whole room
  // back to warm-up (an explicit request).
  Result<uint64_t> Start(const Requester& by, std::vector<std::string> paths, int concurrency);
  // A job of files already listed (automatic mode). Returns its id and whether they were
  // queued (false: the control memory had no room and the job ended budget-full).
  std::pair<uint64_t, bool> AddFiles(std::string label, const std::vector<PrefetchItem>& items);

  // Job `id`'s path number `index` to list next (into *path).
  ListStep NextPath(uint64_t id, size_t index, std::string* path);
  // A listed page of job `id`. Returns false to stop the listing (the job ended, or its
  // queue would pass the control memory: it ends budget-full once what it queued is done);
  // *queued: files were queued.
  bool OnPage(uint64_t id, std::vector<PrefetchItem> items, bool* queued);
  // The listing of job `id`'s `path` ended with `status`.
  ListingEnd OnListingDone(uint64_t id, const std::string& path, const ossmount::Status& status);

  // Files to start now: a job's while fewer than its concurrency are in flight (`total`,
  // hints included, counts up), until the warm-up concurrency is reached. None while the
  // disk cache is busy.
  void Collect(int& total, std::vector<WarmupStart>& starts);
  // A fetch ended. Returns true when the disk cache was busy: the file is queued again and
  // nothing starts until EndBusyWait (the caller retries shortly).
  bool OnFetchDone(const WarmupStart& start, FetchResult result, Drops& drop);
  void EndBusyWait() { busy_wait_ = false; }
  // Ends every queued and running job (in-flight fetches finish). Returns how many.
  size_t CancelAll();
  // `path` was read: a memory-mode hold of it goes to `drop`. Returns whether there was one.
  bool OnRead(const std::string& path, Drops& drop) { return holds_.OnRead(path, drop); }

  int in_flight() const { return in_flight_; }
  uint64_t held_bytes() const { return holds_.bytes(); }
  // Appends every kept job's status; returns the control memory the jobs hold.
  uint64_t Status(std::vector<WarmupJobStatus>& out) const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Job {
    WarmupJobStatus status;
    int concurrency = 0;
    Requester by;
    WarmupQueue pending;
    // Control memory: the job itself and its paths while it runs, and `pending`.
    uint64_t fixed_bytes = 0;
    uint64_t charged = 0;
    // Why listing stopped before the end (the control memory): the message the job ends
    // with, kBudgetFull, once what was queued is done. "" while listing may go on.
    std::string stopped;
    Clock::time_point started;
    std::optional<Clock::time_point> ended;
    bool automatic = false;  // AddFiles (--prefetch-on-list): logged at debug
  };

  Job& Add(std::vector<std::string> paths, int concurrency, Requester by);
  void Trim();
  Job* Find(uint64_t id);
  static bool Ended(const Job& job) { return job.ended.has_value(); }
  void Finish(Job& job, JobState state, std::string message);
  // Ends `job` (done, or kBudgetFull if its listing was stopped) once it is listed, its
  // queue empty and nothing of it in flight.
  void FinishIfDrained(Job& job);
  // Brings what `job` is charged to what it holds: fixed_bytes and its queue while it runs,
  // nothing once it ended.
  void SyncCharge(Job& job);
  static uint64_t FixedBytes(const std::vector<std::string>& paths);
  // Disk mode: whether `item` fits the disk cache's room; if not, ends `job` saying why.
  bool FitsDisk(Job& job, const PrefetchItem& item);

  const DatasetPrefetchOptions options_;
  ControlMemory& memory_;
  uint64_t next_id_ = 1;
  std::deque<Job> jobs_;  // queued, running and the last kKeptJobs ended
  int in_flight_ = 0;
  // The disk cache was busy: nothing starts until EndBusyWait.
  bool busy_wait_ = false;
  // Disk mode: bytes warm-up jobs brought into (or found in) the disk cache; a job stops
  // when the next object would take this past the cache's room. An explicit Start resets
  // it (the user asks for the cache again); automatic jobs share it.
  uint64_t committed_bytes_ = 0;
  WarmHolds holds_;
};

}  // namespace ossmount::prefetch
