// PrefetchStatus: what the dataset prefetcher reports (DatasetPrefetcher::Status): each hint
// list, each warm-up job and the control memory. Plain values; the control socket's JSON of
// it is written by the daemon (daemon/prefetch_status_json.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ossmount::prefetch {

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

}  // namespace ossmount::prefetch
