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
// Control memory (--control-memory, DatasetPrefetchOptions::control_memory): hint lists
// (HintPaths and a byte of state per position, plus a bound on their held entries) and
// warm-up queues (WarmupQueue) come from requests any user of the mount may send, so what
// they hold is charged to one limit. A hint request is checked before it is answered
// (ReserveHints: room reserved, then the list applied); a sender's list that a new one
// replaces is credited. A warm-up whose next page of listed files does not fit stops
// listing, warms what it queued, and ends kBudgetFull with a message naming the option.
// A Requester that is not the mount's owner or root (another user of an allow_other mount)
// shares with the other such users a quarter of the limit (kOtherUsersShare), and may have
// kOtherUserHintLists lists and kOtherUserJobs running warm-ups at once (each at most at
// the mount's warm-up concurrency); its list never evicts an owner's list.
// Cancel (CancelWarmups) ends every queued and running job: queued files are dropped, a
// listing in flight stops at its next page (its batch callback returns false) and no
// further path of the job is listed; fetches in flight finish. A replaced or cleared hint
// list starts nothing more; its fetches in flight finish and their bytes are dropped.
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
#include "prefetch/hint_paths.h"
#include "prefetch/prefetch_item.h"
#include "prefetch/warmup_queue.h"

namespace ossmount::prefetch {

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
// (its job was cancelled): no further page is requested, and `done` gets kCancelled. Pages
// without files give an empty batch, so that a cancel is noticed at every page.
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
  // Control memory (--control-memory): hint lists and warm-up queues together, at most.
  // 256 MiB holds a hint list of about 5 million ImageNet paths, or warm-up queues of about
  // 2.5 million listed files.
  uint64_t control_memory = 256ull << 20;
};

// Who asked for a hint list or a warm-up. `owner`: the mount's owner or root, bounded by
// control_memory only; anyone else has the smaller share and counts of other users.
struct Requester {
  unsigned uid = 0;
  bool owner = true;
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
  double seconds = 0;         // since start (until the end, once ended)
  std::string message;        // why it stopped (budget, error), "" otherwise
  uint64_t queued_files = 0;  // listed and not started
  uint64_t queued_bytes = 0;  // what the queue holds in memory (control memory)
  unsigned uid = 0;           // who started it
};

// Who sent a hint list. Lists are keyed by pid (and uid); all senders of one uid whose pid is
// unknown (0) and who give no name share one list.
struct HintSender {
  int pid = 0;
  // Only for pid 0 (a process the daemon cannot see, e.g. in another container's pid
  // namespace): the name its client gave itself, so that such senders' lists are told apart.
  // Lists are replaced per (pid, name).
  std::string name;
  // False once the sender has exited. Called under the prefetcher's lock: it must be cheap,
  // must not block and must not call the prefetcher. Empty: the sender counts as running.
  std::function<bool()> alive;
  // Who sent it, for the control memory's shares. Part of the sender's identity, so a name
  // given by another user's client never reaches this user's list.
  Requester by;

  // The same sender: its lists replace and extend each other.
  bool SameAs(const HintSender& other) const {
    return pid == other.pid && name == other.name && by.uid == other.by.uid;
  }
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
  bool budget_wait = false;   // the memory budget refused; waiting for reads to free some
  uint64_t memory_bytes = 0;  // what the list holds (control memory)
  unsigned uid = 0;           // one list: who sent it
};

// The control channel's memory (control_memory).
struct ControlMemoryStatus {
  uint64_t used = 0;  // hint lists (and reservations for lists being built) + warm-up queues
  uint64_t limit = 0;
  uint64_t other_users_used = 0;  // of `used`: users other than the mount's owner and root
  uint64_t other_users_limit = 0;
  uint64_t hint_bytes = 0;
  uint64_t warmup_bytes = 0;  // running jobs and their queues
};

struct PrefetchStatus {
  HintStatus hints;                    // summed over hint_lists
  std::vector<HintStatus> hint_lists;  // one per sender, oldest first
  std::vector<WarmupJobStatus> jobs;   // oldest first (the last kKeptJobs)
  uint64_t held_bytes = 0;             // hints + warm-up, in memory
  int in_flight = 0;
  ControlMemoryStatus control_memory;
};

class DatasetPrefetcher;

// Room in the control memory for one hint request, from the check (ReserveHints) until the
// list is in place (SetHints / AppendHints take it) or the reservation is dropped.
class HintReservation {
 public:
  HintReservation() = default;
  HintReservation(HintReservation&& other) noexcept { *this = std::move(other); }
  HintReservation& operator=(HintReservation&& other) noexcept;
  ~HintReservation();
  uint64_t bytes() const { return bytes_; }

 private:
  friend class DatasetPrefetcher;
  void Release();  // gives the room back (locks the prefetcher)
  std::weak_ptr<DatasetPrefetcher> owner_;
  Requester by_;
  uint64_t bytes_ = 0;
  bool new_list_ = false;  // counts among by_'s lists until applied (other users only)
};

class DatasetPrefetcher : public std::enable_shared_from_this<DatasetPrefetcher> {
 public:
  static constexpr size_t kStaleFactor = 8;
  static constexpr size_t kKeptJobs = 32;
  // More concurrent senders than any one machine has GPUs; beyond, the oldest list goes.
  static constexpr size_t kMaxHintLists = 64;
  // Pieces one list may arrive in (each piece rebuilds the list's index: bounded work).
  static constexpr int kMaxHintPieces = 64;
  // Users other than the mount's owner and root: together at most 1/kOtherUsersShare of
  // control_memory; each at most this many hint lists and running warm-ups.
  static constexpr uint64_t kOtherUsersShare = 4;
  static constexpr size_t kOtherUserHintLists = 8;
  static constexpr size_t kOtherUserJobs = 4;
  // Paths one warm-up may name: a job keeps them for its status (kKeptJobs after it ends).
  static constexpr size_t kMaxWarmupPaths = 4096;
  // Control memory a list of `count` paths totalling `path_bytes` holds (its HintPaths,
  // one state byte a position, the list itself, and its held entries at most).
  uint64_t HintListBytes(uint64_t count, uint64_t path_bytes) const;

  // Create with std::make_shared. `fetch` and `list` must stay callable for its life.
  DatasetPrefetcher(boost::asio::io_context& io, DatasetPrefetchOptions options, Fetcher fetch,
                    Lister list);
  ~DatasetPrefetcher();

  // Checks that a hint request of `count` paths totalling `path_bytes` fits the control
  // memory and sender.by's limits, and reserves its room: kNoSpace with a message naming
  // the limit otherwise. Not appending, it first drops the lists of senders that have
  // exited, and credits the sender's own list (the new one replaces it).
  Result<HintReservation> ReserveHints(const HintSender& sender, size_t count, uint64_t path_bytes,
                                       bool append);
  // Replaces `sender`'s hint list (an empty list clears it) and drops the lists of senders
  // that have exited. Indexes `paths` if not done yet (outside the lock). Returns the
  // number of paths.
  size_t SetHints(HintPaths paths, HintSender sender, HintReservation reservation);
  // Appends `paths` to the end of `sender`'s list: a list too long for one request arrives
  // in several (the first by SetHints). The list is rebuilt outside the lock and swapped
  // in. Without a list of that sender (it was dropped, or none was sent), the same as
  // SetHints. Returns the number of paths appended.
  size_t AppendHints(HintPaths paths, HintSender sender, HintReservation reservation);
  // ReserveHints, then SetHints / AppendHints.
  Result<size_t> SendHints(std::vector<std::string> paths, HintSender sender, bool append);
  // SendHints; 0 when refused (logged).
  size_t SetHints(std::vector<std::string> paths, HintSender sender = {});
  size_t AppendHints(std::vector<std::string> paths, HintSender sender = {});
  // Starts a warm-up of everything under `paths` (relative to the mount; "" is the root).
  // concurrency 0 = the default. Returns the job id.
  uint64_t StartWarmup(std::vector<std::string> paths, int concurrency = 0);
  // The same for `by`: refused (kNoSpace) when `by` is another user with kOtherUserJobs
  // running, or the control memory has no room to queue a listed page; kInvalidArgument
  // past kMaxWarmupPaths paths.
  Result<uint64_t> StartWarmupFor(Requester by, std::vector<std::string> paths,
                                  int concurrency = 0);
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
  struct Held {
    uint64_t bytes = 0;
    std::shared_ptr<const void> hold;
  };
  // One sender's list and its window.
  struct HintList {
    uint64_t generation = 0;  // unique among all lists ever received
    HintSender sender;
    // Immutable once in place: AppendHints builds the longer list beside it and swaps.
    std::shared_ptr<const HintPaths> paths;
    std::vector<PosState> states;  // one per position
    size_t next = 0;
    size_t read_frontier = 0;      // 1 + the furthest position read
    std::map<size_t, Held> held;   // position -> what is held for it, unread
    size_t outstanding_files = 0;  // in flight + held, unread
    uint64_t outstanding_bytes = 0;
    int in_flight = 0;
    HintStatus counters;
    uint64_t bytes = 0;  // charged to the control memory (ListBytes)
    int pieces = 1;      // SetHints + AppendHints reserved
  };
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
  // Ends `job` (done, or kBudgetFull if its listing was stopped) once it is listed, its
  // queue empty and nothing of it in flight.
  void FinishIfDrainedLocked(Job& job);
  // Brings the control memory charged for `job` to what it holds: fixed_bytes and its
  // queue while it runs, nothing once it ended.
  void SyncJobChargeLocked(Job& job);
  static uint64_t JobFixedBytes(const std::vector<std::string>& paths);
  // Control memory. TryChargeLocked charges `bytes` if, less `credit` (bytes of `by` about
  // to be released), they fit the limit and, for another user, the other users' share.
  uint64_t OthersLimit() const { return options_.control_memory / kOtherUsersShare; }
  bool TryChargeLocked(const Requester& by, uint64_t bytes, uint64_t credit = 0);
  void ChargeLocked(const Requester& by, uint64_t bytes);
  void UnchargeLocked(const Requester& by, uint64_t bytes);
  // Why `bytes` more do not fit `by`'s room: "the control channel's memory
  // (--control-memory 256MiB) has 12.0 MiB free", or the same of the other users' share.
  std::string NoRoomMessageLocked(const Requester& by, uint64_t bytes, uint64_t credit) const;
  void ReleaseReservationLocked(HintReservation& r);
  uint64_t ListBytes(const HintList& list) const;
  friend class HintReservation;
  // Lists job `id`'s paths one after another into its pending queue.
  void ListNext(uint64_t id, size_t path_index);
  void ScheduleRetry();
  Job* FindJobLocked(uint64_t id);
  static bool Ended(const Job& job);
  void TrimJobsLocked();
  uint64_t AddJobLocked(std::vector<std::string> paths, int concurrency, Requester by);

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
  // Control memory charged: everything, and users other than the owner and root.
  uint64_t control_used_ = 0;
  uint64_t others_used_ = 0;
  uint64_t hint_reserved_ = 0;                 // reservations not applied yet
  std::map<unsigned, size_t> reserved_lists_;  // other users: new lists not applied yet
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
