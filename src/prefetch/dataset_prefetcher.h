// DatasetPrefetcher: fetches whole objects BEFORE a reader asks for them, with far more
// requests in flight than the readers have (a DataLoader worker reads one file at a time),
// so epoch 1 is not bound by workers / latency.
//
// Two sources of work, one scheduler:
//   - Sampler-order hints (SetHints): the paths in the order they will be read. The
//     prefetcher fetches them in list order up to `hint_ahead_files` positions past the
//     furthest position read so far, holding at most about `hint_ahead_bytes` fetched and
//     unread (and at most kStaleFactor * hint_ahead_files files). OnRead(path) (the
//     filesystem calls it once a handle has the file's bytes) marks the first unread
//     position of that path read, releases what the prefetcher held for it, and moves the
//     window. Reads arrive out of order (16 workers each read their own batch, a band of
//     about workers x prefetch_factor x batch_size positions): an unread file behind the
//     furthest read is kept for the slower worker, never skipped; one that falls more than
//     kStaleFactor * hint_ahead_files positions behind is released (the reader skipped
//     it). A position read before its turn is not fetched. A file the fetcher reports in
//     the kernel's page cache (kPageCached: the reader will not ask the daemon for it) is
//     not fetched, and not waited for: a handle of it released without a READ counts as its
//     read; RefetchPageCached() fetches the unread ones after all.
//     One list per sender (HintSender: the sending process), so the ranks of a distributed
//     job (one process per GPU, each reading its own share of the dataset) are each
//     followed: a sender's new list replaces its own previous list and releases its holds;
//     lists of senders that have exited are dropped when any new list arrives (the next
//     epoch's, or the next job's); beyond kMaxHintLists lists the oldest is dropped. Each
//     list has its own window of hint_ahead_files; hint_ahead_bytes is shared evenly
//     among the lists, and fetch slots go round-robin among them.
//   - Warm-up jobs (StartWarmup, EnqueueDirectory): every object under some paths, in
//     listing order, one job after another. With a disk cache the bytes go to disk and
//     nothing is held in memory; without one they are held in memory until first read.
//     A job stops, and says so in its status, when the next object would take it past the
//     disk cache's size (which would evict what it just fetched) or when the memory budget
//     refuses a buffer: it never evicts what is about to be read for what is further ahead.
// Hints go first: hinted fetches start while fewer than `hint_concurrency` fetches (hinted
// and warm-up together) are in flight; a warm-up job's fetches start while fewer than its
// concurrency (`concurrency` unless the job asks for its own) are in flight. Hints get the larger
// share by default because a reader is waiting close behind them; at 35 ms per GET, 128 in
// flight cap a hinted epoch near 3,600 files/s. Every fetch goes through the `Fetcher` the
// filesystem provides, which sends it at Priority::kPrefetch (on-demand reads overtake it in the
// fetch engine's queue) and verifies it like any read.
//
// Knows nothing of the filesystem: listing and fetching are injected, so the scheduling is
// unit-tested with fakes.
//
// Thread-safety: every public method may be called from any thread. mu_ is a leaf lock:
// fetches are started, holds released and callbacks run outside it.
#pragma once

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ossmount/status.h"

namespace ossmount::prefetch {

struct PrefetchItem {
  std::string path;  // relative to the mount root, no leading '/'
  // Known from a listing (warm-up); for hints the fetcher resolves the path itself and
  // these stay empty / 0.
  std::string key;
  uint64_t size = 0;
  std::string etag;
};

enum class FetchOutcome {
  kFetched,        // bytes fetched (and written to disk / held)
  kAlreadyCached,  // the disk cache already has it: no GET
  // Hints: the kernel's page cache holds it, so the reader will not ask the daemon: no GET.
  // The position is fetched after all if RefetchPageCached() comes before it is read.
  kPageCached,
  kSkipped,     // not fetchable this way (a directory, a large file in memory mode)
  kBudgetFull,  // the memory budget refused the buffer
  kBusy,        // the disk cache's write queue is full: try again a little later
  kFailed,      // the GET failed (the reader will see its own error, if any)
};

struct FetchResult {
  FetchOutcome outcome = FetchOutcome::kFailed;
  uint64_t bytes = 0;                // the object's size (known after resolving)
  std::shared_ptr<const void> hold;  // keeps the bytes in memory while set
  std::string error;                 // for kFailed / kSkipped
};

// hold_in_memory: the caller keeps `hold` until the file is read; false: the bytes only
// need to reach the disk cache.
using FetchDone = std::function<void(FetchResult)>;
using Fetcher = std::function<void(const PrefetchItem& item, bool hold_in_memory, FetchDone)>;
// Lists everything under `path` (recursive): `batch` once per page (may be called from any
// thread, in order), then `done` once. Files only. `batch` returns false to stop the listing
// (its job was cancelled): no further page is requested, and `done` gets kCancelled.
using ListBatch = std::function<bool(std::vector<PrefetchItem>)>;
using Lister =
    std::function<void(const std::string& path, ListBatch batch, std::function<void(Status)> done)>;

struct DatasetPrefetchOptions {
  int concurrency = 128;       // warm-up: fetches in flight (hints included) it fills up to
  int hint_concurrency = 256;  // hints: fetches in flight (warm-up included) they fill up to
  // Hinted files fetched or in flight past the furthest read. 16 DataLoader workers read a
  // band of about 1,024 positions at once (workers x prefetch_factor x batch_size); the
  // window has to reach past it and cover the fetches in flight.
  size_t hint_ahead_files = 2048;
  uint64_t hint_ahead_bytes = 512ull << 20;
  // Disk cache size (--max-cache-size); 0 = no disk cache: warm-up holds objects in memory.
  uint64_t disk_budget = 0;
  // What the disk cache can hold now (DiskBlockCache::capacity): less than disk_budget when
  // its file system keeps less room above --cache-min-free. Unset: disk_budget.
  std::function<uint64_t()> disk_capacity;
  // How long to wait before retrying a kBusy fetch.
  std::chrono::milliseconds busy_retry{20};
};

enum class JobState { kListing, kRunning, kDone, kBudgetFull, kCancelled, kFailed };
const char* JobStateName(JobState state);

struct WarmupJobStatus {
  uint64_t id = 0;
  std::vector<std::string> paths;
  JobState state = JobState::kListing;
  bool listing_done = false;
  uint64_t files_total = 0;  // listed so far
  uint64_t bytes_total = 0;
  uint64_t files_done = 0;  // fetched + already cached + skipped + failed
  uint64_t bytes_done = 0;  // fetched + already cached
  uint64_t files_fetched = 0;
  uint64_t files_cached = 0;  // already in the disk cache
  uint64_t files_skipped = 0;
  uint64_t files_failed = 0;
  int in_flight = 0;
  double seconds = 0;   // since start (until the end, once ended)
  std::string message;  // why it stopped (budget, error), "" otherwise
};

// Who sent a hint list. Lists are keyed by pid; all senders whose pid is unknown (0) share
// one list.
struct HintSender {
  int pid = 0;
  // Only for pid 0 (a process the daemon cannot see, e.g. in another container's pid
  // namespace): the name its client gave itself, so that such senders' lists are told apart.
  // Lists are replaced per (pid, name).
  std::string name;
  // False once the sender has exited. Called under the prefetcher's lock: it must be cheap,
  // must not block and must not call the prefetcher. Empty: the sender counts as running.
  std::function<bool()> alive;

  // The same sender: its lists replace and extend each other.
  bool SameAs(const HintSender& other) const { return pid == other.pid && name == other.name; }
};

// For one list, or (PrefetchStatus::hints) summed over the lists being followed.
struct HintStatus {
  uint64_t generation = 0;  // one list: its number; the sum: how many lists were received
  int pid = 0;              // one list: its sender (0: unknown)
  std::string name;         // one list: its sender's own name, for pid 0
  uint64_t files = 0;       // in the list
  uint64_t next = 0;        // next position to consider
  uint64_t read = 0;        // positions read
  uint64_t fetched = 0;     // prefetched (including joined by a reader in flight)
  uint64_t failed = 0;
  uint64_t page_cached = 0;      // not fetched (and not refetched): the page cache held it
  uint64_t released_unread = 0;  // held, then released because the reader moved far past
  uint64_t outstanding_files = 0;
  uint64_t outstanding_bytes = 0;
  int in_flight = 0;
  bool budget_wait = false;  // the memory budget refused; waiting for reads to free some
};

struct PrefetchStatus {
  HintStatus hints;                    // summed over hint_lists
  std::vector<HintStatus> hint_lists;  // one per sender, oldest first
  std::vector<WarmupJobStatus> jobs;   // oldest first (the last kKeptJobs)
  uint64_t held_bytes = 0;             // hints + warm-up, in memory
  int in_flight = 0;
};

class DatasetPrefetcher : public std::enable_shared_from_this<DatasetPrefetcher> {
 public:
  static constexpr size_t kStaleFactor = 8;
  static constexpr size_t kKeptJobs = 32;
  // More concurrent senders than any one machine has GPUs; beyond, the oldest list goes.
  static constexpr size_t kMaxHintLists = 64;

  // Create with std::make_shared. `fetch` and `list` must stay callable for its life.
  DatasetPrefetcher(boost::asio::io_context& io, DatasetPrefetchOptions options, Fetcher fetch,
                    Lister list);
  ~DatasetPrefetcher();

  // Replaces `sender`'s hint list (an empty list clears it) and drops the lists of senders
  // that have exited. Returns the number of paths.
  size_t SetHints(std::vector<std::string> paths, HintSender sender = {});
  // Appends `paths` to the end of `sender`'s list: a list too long for one request arrives
  // in several (the first by SetHints). Without a list of that sender (it was dropped, or
  // none was sent), the same as SetHints. Returns the number of paths appended.
  size_t AppendHints(std::vector<std::string> paths, HintSender sender = {});
  // Starts a warm-up of everything under `paths` (relative to the mount; "" is the root).
  // concurrency 0 = the default. Returns the job id.
  uint64_t StartWarmup(std::vector<std::string> paths, int concurrency = 0);
  // Queues a warm-up of the given files (automatic mode, after a listing), as one job.
  // Returns 0 (and queues nothing) when `items` is empty.
  uint64_t EnqueueFiles(std::string label, std::vector<PrefetchItem> items);
  // Cancels every queued and running job (in-flight fetches finish). Returns how many.
  size_t CancelWarmups();
  // The filesystem read `path` (a handle now holds its bytes), or a handle of it was
  // released without a READ (the kernel's page cache served it).
  void OnRead(const std::string& path);
  // The kernel's page cache stopped holding what kPageCached said it held: every position
  // skipped for that and not read yet is fetched after all (behind the furthest read only
  // within the stale distance, like any unread file).
  void RefetchPageCached();

  PrefetchStatus Status() const;
  // JSON object text of Status(), for the control socket.
  std::string StatusJson() const;
  const DatasetPrefetchOptions& options() const { return options_; }

 private:
  // kPageCached: not fetched because the kernel held it; kDone: fetched to disk, failed, or
  // released unread.
  enum class PosState : uint8_t { kPending, kInFlight, kHeld, kRead, kDone, kPageCached };
  struct Hint {
    PosState state = PosState::kPending;
    uint64_t bytes = 0;
    std::shared_ptr<const void> hold;
  };
  // One sender's list and its window.
  struct HintList {
    uint64_t generation = 0;  // unique among all lists ever received
    HintSender sender;
    std::vector<std::string> paths;
    std::vector<Hint> hints;
    std::unordered_map<std::string, std::vector<size_t>> positions;
    size_t next = 0;
    size_t read_frontier = 0;         // 1 + the furthest position read
    std::map<size_t, uint64_t> held;  // position -> bytes, held and unread
    size_t outstanding_files = 0;     // in flight + held, unread
    uint64_t outstanding_bytes = 0;
    int in_flight = 0;
    HintStatus counters;
  };
  struct Job {
    WarmupJobStatus status;
    int concurrency = 0;
    std::deque<PrefetchItem> pending;
    std::chrono::steady_clock::time_point started;
    std::optional<std::chrono::steady_clock::time_point> ended;
    bool automatic = false;  // EnqueueFiles (--prefetch-on-list): logged at debug
  };
  struct Start {
    PrefetchItem item;
    bool hold = false;
    bool is_hint = false;
    uint64_t generation = 0;  // hints: list generation; warm-up: job id
    size_t position = 0;      // hints
  };

  // Picks what may start now (under mu_) and starts it (outside mu_).
  void Pump();
  void CollectLocked(std::vector<Start>& starts);
  void StartFetch(Start s);
  void OnHintDone(const Start& s, FetchResult r);
  HintList* FindHintListLocked(uint64_t generation);
  // The next position of `list` its window lets start now, if any (moves list.next past
  // positions that need no fetch).
  std::optional<size_t> NextHintLocked(HintList& list, uint64_t bytes_share);
  // kStaleFactor * hint_ahead_files: how far behind the furthest read an unread position
  // still counts as a slower worker's (further behind, the reader skipped it), and the cap
  // on a list's files outstanding.
  size_t StaleDistance() const {
    return kStaleFactor * std::max<size_t>(options_.hint_ahead_files, 1);
  }
  // The first position of `path` in `list` not read yet.
  static std::optional<size_t> FirstUnreadLocked(const HintList& list, const std::string& path);
  // Marks position `pos` of `list` read, and releases what the reader left far behind.
  void MarkHintReadLocked(HintList& list, size_t pos,
                          std::vector<std::shared_ptr<const void>>& drop);
  // Releases everything `list` holds (into `drop`) before the list goes.
  static void ReleaseHintListLocked(HintList& list, std::vector<std::shared_ptr<const void>>& drop);
  HintStatus HintListStatusLocked(const HintList& list) const;
  void OnJobDone(const Start& s, FetchResult r);
  void FinishJobLocked(Job& job, JobState state, std::string message);
  // Lists job `id`'s paths one after another into its pending queue.
  void ListNext(uint64_t id, size_t path_index);
  void ScheduleRetry();
  Job* FindJobLocked(uint64_t id);
  static bool Ended(const Job& job);
  void TrimJobsLocked();
  uint64_t AddJobLocked(std::vector<std::string> paths, int concurrency);

  const DatasetPrefetchOptions options_;
  const Fetcher fetch_;
  const Lister list_;

  mutable std::mutex mu_;  // guards everything below
  // Hints.
  uint64_t hint_generation_ = 0;                       // lists received
  std::vector<std::unique_ptr<HintList>> hint_lists_;  // oldest first
  size_t hint_turn_ = 0;                               // round-robin among the lists
  int hint_in_flight_ = 0;                             // all lists, and dropped lists' fetches
  bool hint_budget_wait_ = false;  // the memory budget refused; waiting for a read
  // Warm-up.
  uint64_t next_job_id_ = 1;
  std::deque<Job> jobs_;  // queued, running and the last kKeptJobs ended
  // Disk mode: bytes warm-up jobs brought into (or found in) the disk cache; a job stops
  // when the next object would take this past disk_budget. An explicit StartWarmup resets
  // it (the user asks for the cache again); automatic jobs share it.
  uint64_t warm_committed_bytes_ = 0;
  std::unordered_map<std::string, std::shared_ptr<const void>> warm_holds_;  // by path
  std::unordered_map<std::string, uint64_t> warm_hold_bytes_;
  uint64_t warm_held_bytes_ = 0;
  // Memory mode: paths being fetched by warm-up -> read meanwhile (then the bytes are not
  // held: the reader has them and will not read again).
  std::unordered_map<std::string, bool> warm_in_flight_;
  int job_in_flight_ = 0;
  bool retry_scheduled_ = false;
  // The disk cache was busy: warm-up starts nothing until the retry timer fires.
  bool warm_busy_wait_ = false;
  std::unique_ptr<boost::asio::steady_timer> retry_timer_;
};

}  // namespace ossmount::prefetch
