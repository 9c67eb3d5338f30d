// DatasetPrefetcher: fetches whole objects before a reader asks for them, from two sources:
// sampler-order hint lists (HintTracker) and warm-up jobs (WarmupJobs), within the control
// memory (ControlMemory). It is their scheduler: the one lock, and the only part that
// lists and fetches (through the injected Lister and Fetcher) and uses the io_context.
// Fetches in flight share one limit: hints start while fewer than hint_concurrency fetches
// (both kinds) are in flight, a warm-up job's files while fewer than its concurrency are.
// docs/ARCHITECTURE.md ("Dataset prefetch") describes the window, the holds and the limits.
//
// Ownership: create with std::make_shared; fetches and listings in flight keep it alive.
// `fetch` and `list` must stay callable for its life.
// Thread-safety: every public method may be called from any thread. mu_ is a leaf lock:
// fetches are started, holds released and callbacks run outside it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ossmount/status.h"
#include "prefetch/control_memory.h"
#include "prefetch/fetch_result.h"
#include "prefetch/hint_paths.h"
#include "prefetch/hint_tracker.h"
#include "prefetch/hint_window.h"
#include "prefetch/prefetch_item.h"
#include "prefetch/prefetch_options.h"
#include "prefetch/prefetch_status.h"
#include "prefetch/warmup_jobs.h"

namespace ossmount::prefetch {

class DatasetPrefetcher;

// Room in the control memory for one hint request, from the check (ReserveHints) until the
// list is in place (SetHints / AppendHints take it) or the reservation is dropped.
class HintReservation {
 public:
  HintReservation() = default;
  HintReservation(HintReservation&& other) noexcept { *this = std::move(other); }
  HintReservation& operator=(HintReservation&& other) noexcept;
  ~HintReservation();
  uint64_t bytes() const { return grant_.bytes; }

 private:
  friend class DatasetPrefetcher;
  void Release();  // gives the room back (locks the prefetcher)
  std::weak_ptr<DatasetPrefetcher> owner_;
  HintGrant grant_;
};

class DatasetPrefetcher : public std::enable_shared_from_this<DatasetPrefetcher> {
 public:
  static constexpr size_t kStaleFactor = HintTracker::kStaleFactor;
  static constexpr size_t kKeptJobs = WarmupJobs::kKeptJobs;
  static constexpr size_t kMaxHintLists = HintTracker::kMaxHintLists;
  static constexpr int kMaxHintPieces = HintTracker::kMaxHintPieces;
  static constexpr uint64_t kOtherUsersShare = ControlMemory::kOtherUsersShare;
  static constexpr size_t kOtherUserHintLists = prefetch::kOtherUserHintLists;
  static constexpr size_t kOtherUserJobs = prefetch::kOtherUserJobs;
  static constexpr size_t kMaxWarmupPaths = WarmupJobs::kMaxWarmupPaths;
  // Control memory a list of `count` paths totalling `path_bytes` holds.
  uint64_t HintListBytes(uint64_t count, uint64_t path_bytes) const;

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
  // concurrency 0 = the default. Returns the job id (0 when refused, logged).
  uint64_t StartWarmup(std::vector<std::string> paths, int concurrency = 0);
  // The same for `by`: refused (kNoSpace) when `by` is another user with kOtherUserJobs
  // running, or the control memory has no room to queue a listed page; kInvalidArgument
  // past kMaxWarmupPaths paths.
  Result<uint64_t> StartWarmupFor(Requester by, std::vector<std::string> paths,
                                  int concurrency = 0);
  // Queues a warm-up of the given files (automatic mode, after a listing), as one job.
  // Returns 0 (and queues nothing) when `items` is empty.
  uint64_t EnqueueFiles(std::string label, std::vector<PrefetchItem> items);
  // Cancels every queued and running job: queued files are dropped, a listing stops at its
  // next page; fetches in flight finish. Returns how many.
  size_t CancelWarmups();
  // The filesystem read `path` (a handle now holds its bytes), or a handle of it was
  // released without a READ (the kernel's page cache served it): what was held for it goes.
  void OnRead(const std::string& path);
  // The kernel's page cache stopped holding what kPageCached said it held: every position
  // skipped for that and not read yet is fetched after all (behind the furthest read only
  // within the stale distance, like any unread file).
  void RefetchPageCached();

  PrefetchStatus Status() const;
  const DatasetPrefetchOptions& options() const { return options_; }

 private:
  friend class HintReservation;

  // Takes what may start now (under mu_) and starts it (outside mu_).
  void Pump();
  void StartFetch(HintStart start);
  void StartFetch(WarmupStart start);
  void OnHintDone(const HintStart& start, FetchResult result);
  void OnWarmupDone(const WarmupStart& start, FetchResult result);
  // Lists job `id`'s paths one after another from path number `index`.
  void ListNext(uint64_t id, size_t index);
  // Pumps again after busy_retry (the disk cache was busy).
  void ScheduleRetry();

  const DatasetPrefetchOptions options_;
  const Fetcher fetch_;
  const Lister list_;

  mutable std::mutex mu_;  // guards everything below
  ControlMemory memory_;
  HintTracker hints_;
  WarmupJobs jobs_;
  bool retry_scheduled_ = false;
  std::unique_ptr<boost::asio::steady_timer> retry_timer_;
};

}  // namespace ossmount::prefetch
