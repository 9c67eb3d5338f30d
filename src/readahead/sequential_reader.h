// SequentialReader: the reads of one open large file, with readahead for its sequential
// readers. The object is read in aligned parts of part_size (index = offset / part_size, the
// disk cache's blocks), each one ranged GET with If-Match on the etag pinned at open; a
// random read, or a short run, fetches about the bytes it asks for. docs/ARCHITECTURE.md
// ("Readahead") describes the window, runs, pieces and the whole-object CRC-64 check.
//
// What a caller can rely on:
//   - Memory stays within the shared MemoryBudget and readahead GETs within FetchSlots; a
//     read that waits is never refused for memory (it gets a smaller piece instead).
//   - A read is answered once its own bytes have arrived; its ReadBytes stay valid while
//     `owner` is held, even if the GET fails later.
//   - Bytes of two versions are never mixed: a 412 or a changed size/etag fails the read
//     with kPreconditionFailed (ESTALE). A whole-object CRC-64 mismatch fails the reads that
//     reach the end with kIntegrity (EIO). A failed part is not kept: a later read retries.
//
// Ownership: create with std::make_shared; in-flight GETs keep it alive. Call Close() when
// the file is released. Thread-safety: all methods may be called concurrently; mu_ is a
// leaf lock (never held while calling the client, the disk cache or a callback).
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "data/disk_block_cache.h"
#include "data/memory_budget.h"
#include "ossmount/object_client.h"
#include "readahead/fetch_slots.h"
#include "readahead/part_crc_fold.h"
#include "readahead/readahead_window.h"

namespace ossmount::readahead {

// Versions (key, etag) whose whole-object CRC-64 check failed in this process. Their parts
// in the disk cache may hold the damaged bytes, and the cache cannot drop single blocks, so
// readers opened later fetch them from the server instead, and the filesystem does not
// let the kernel keep its page cache of them across opens. Bounded (the oldest are
// forgotten); thread-safe.
bool IsSuspectVersion(const std::string& key, const std::string& etag);
void MarkSuspectVersion(const std::string& key, const std::string& etag);

struct ReaderOptions {
  uint64_t initial_window = 1ull << 20;
  uint64_t max_window = 64ull << 20;
  uint64_t part_size = 8ull << 20;
  int per_file_concurrency = 8;
  // How long a part is kept after the reader passed its end, and how far behind the reader
  // a read still counts as sequential.
  uint64_t slack = 256ull << 10;
  // A read further behind the reader than `slack` but within this distance is a straggler
  // (the kernel's concurrent readahead requests arrive out of order, by up to about twice
  // its readahead): it is fetched alone, without closing the window or dropping parts.
  // Values below `slack` mean `slack`.
  uint64_t late_tolerance = 0;
  // A ready piece no read used for this long is dropped at the next read of the file: its
  // reader has most likely moved on to another record. (Until then it stays; so does the
  // last piece of each run, until the run is forgotten, at most ReadaheadWindow's streams.)
  std::chrono::milliseconds piece_idle{1000};
  // Runs of one open file holding a readahead window at once (readers of regions of the file
  // through one descriptor); further established runs read in pieces. A window whose reader
  // has not read for piece_idle is closed.
  size_t windows = 8;
  // The clock piece_idle is measured by; empty means std::chrono::steady_clock. Tests pass
  // one they advance, so that no outcome depends on how fast the machine runs.
  std::function<std::chrono::steady_clock::time_point()> clock;
  // The object's CRC-64 when its metadata knows it (a HEAD, a manifest), for the
  // whole-object check; a GET's x-oss-hash-crc64ecma replaces it.
  std::optional<uint64_t> object_crc64;
};

// What all readers of one mount share.
struct SharedReadState {
  std::shared_ptr<data::MemoryBudget> budget;        // required
  std::shared_ptr<FetchSlots> slots;                 // required: global readahead GETs
  std::shared_ptr<data::DiskBlockCache> disk_cache;  // optional
};

// Bytes of one read; `data` stays valid while `owner` is held.
struct ReadBytes {
  const char* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const void> owner;
};
using ReadCallback = std::function<void(Result<ReadBytes>)>;

class SequentialReader : public std::enable_shared_from_this<SequentialReader> {
 public:
  SequentialReader(boost::asio::io_context& io, std::shared_ptr<ObjectClient> client,
                   std::string key, uint64_t size, std::string etag, ReaderOptions options,
                   SharedReadState shared);
  ~SequentialReader();

  // Up to `size` bytes at `offset` (fewer only at the end of the object); `done` is always
  // called asynchronously, exactly once.
  void Read(uint64_t offset, size_t size, ReadCallback done);
  // Cancels every GET in flight and drops every part; later reads fail with kCancelled.
  void Close();

  struct Stats {
    size_t parts = 0;     // kept, ready or in flight
    int in_flight = 0;    // GETs of this file not yet completed (including cancelled ones)
    uint64_t window = 0;  // the largest readahead window of a run, bytes (0: none open)
  };
  Stats stats() const;

 private:
  std::chrono::steady_clock::time_point Now() const {
    return options_.clock ? options_.clock() : std::chrono::steady_clock::now();
  }
  struct PartBuffer;
  struct Part;
  struct Gather;
  static constexpr uint64_t kPieceIndex = ~0ull;

  // Parts to start once mu_ is released.
  using StartList = std::vector<std::shared_ptr<Part>>;

  uint64_t PartLength(uint64_t index) const;
  // REQUIRES mu_. Creates the missing parts of [first, last] for a waiting reader if the
  // budget has room for them (TryReserve); nullopt (nothing created) when it has not.
  std::optional<StartList> NewNeededPartsLocked(uint64_t first, uint64_t last);
  // REQUIRES mu_. An unaligned piece for a waiting reader (a short run's, or a small one
  // when the budget is spent), holding `reservation`: not kept in parts_, not cached on disk.
  std::shared_ptr<Part> NewPieceLocked(uint64_t offset, uint64_t length,
                                       data::Reservation reservation);
  // REQUIRES mu_. How long the piece of a ramping short run is (ReadaheadWindow::ramping()):
  // a whole part at first, then a quarter more than the last such piece served.
  uint64_t RampPieceLengthLocked() const;
  // REQUIRES mu_. Drops the pieces their readers have left (read past, idle for piece_idle,
  // or another run read), before a read of the current run that `holding` (if any)
  // answers; `random`: the run's slot was a forgotten run's.
  void ReleasePiecesLocked(bool random, const std::shared_ptr<Part>& holding,
                           std::chrono::steady_clock::time_point now);
  // REQUIRES mu_. Notes the current run's read and closes the windows of runs not read for
  // piece_idle (their readers stopped), so that their parts can be dropped.
  void CloseIdleWindowsLocked(std::chrono::steady_clock::time_point now);
  // REQUIRES mu_. A readahead part, or nullptr when the per-file cap, the global slots or the
  // budget (then *budget_refused) says no.
  std::shared_ptr<Part> NewReadaheadPartLocked(uint64_t index, bool* budget_refused);
  // REQUIRES mu_. Issues readahead parts for the last read's run's window:
  // [window_start, + window).
  void TopUpLocked(StartList& start);
  // REQUIRES mu_. Drops (and cancels) parts nobody waits for with index outside [lo, hi].
  void DropOutsideLocked(uint64_t lo, uint64_t hi);
  void DropLocked(std::map<uint64_t, std::shared_ptr<Part>>::iterator it);

  void StartParts(StartList parts);
  // Returns whether the part was found in the disk cache (and is done).
  bool StartPart(const std::shared_ptr<Part>& part);
  // Fetches a piece as `count` ranged GETs at once, each into its own stretch of the buffer;
  // arrivals report the bytes in place from the piece's start, and the piece is done when
  // every GET is (failed when any failed, which cancels the others).
  void StartSplitPiece(const std::shared_ptr<Part>& part, size_t count);
  // `got`: the GET's result when it succeeded (its CRC header), else null.
  void OnPartDone(const std::shared_ptr<Part>& part, Status status, const GetResult* got);
  // REQUIRES mu_. A GET of this object succeeded: what it says of the object's CRC-64.
  void NoteGetLocked(const GetResult& got);

  // Whole-object CRC-64 (PartCrcFold).
  // What a part's settling or a verdict leaves to do once mu_ is released.
  struct FoldNews {
    std::vector<std::function<void(Status)>> resolved;  // verdict waiters
    Status status;                                      // what they get
    PartCrcFold::Outcome outcome;                       // a verdict, to log and count
    std::optional<uint64_t> expected;                   // the object's CRC-64, for the log
    std::vector<std::shared_ptr<Part>> dropped;         // freed after mu_
    bool suspect = false;                               // a mismatch: MarkSuspectVersion
  };
  // REQUIRES mu_. An aligned part was created: its CRC may come; part 0 arms the fold.
  void NotePartCreatedLocked(uint64_t index);
  // After a successful part: computes its CRC (when the fold wants it) and records it.
  void FoldPart(const std::shared_ptr<Part>& part);
  // REQUIRES mu_. Part `index`'s CRC came (`outcome`: what recording it did) or will not
  // come: resolves the verdict waiters when the fold ended or can no longer end.
  void SettlePartLocked(uint64_t index, PartCrcFold::Outcome outcome, FoldNews& news);
  // REQUIRES mu_. Resolves the verdict waiters (with mismatch_) when the fold can no longer
  // end: it was disarmed, or a part not folded yet is neither recorded nor on its way.
  void ReleaseStuckWaitersLocked(FoldNews& news);
  // REQUIRES mu_. Whether every part not folded yet is recorded or has its CRC on its way.
  bool FoldCompletableLocked() const;
  void DeliverFoldNews(FoldNews news);
  // From the client's network thread: `bytes` of the part's GET are in place. Wakes the
  // reads those bytes answer (posted to io_).
  void OnPartArrival(const std::shared_ptr<Part>& part, size_t bytes);
  // REQUIRES mu_. Moves the waiters of `part` that its arrived bytes answer into `woken`.
  static void TakeAnsweredWaitersLocked(Part& part, std::vector<std::function<void()>>& woken);
  void ReadDirect(uint64_t offset, uint64_t length, ReadCallback done);
  // Checks a GET result against the pinned version; ok when the bytes may be used.
  Status CheckGet(const Result<GetResult>& r, uint64_t expected_bytes) const;
  static void Assemble(const std::shared_ptr<Gather>& gather);

  boost::asio::io_context& io_;
  const std::shared_ptr<ObjectClient> client_;
  const std::string key_;
  const uint64_t size_;
  const std::string etag_;
  const ReaderOptions options_;
  const SharedReadState shared_;

  // mu_ guards everything below and the state/waiters/buffer of every Part.
  mutable std::mutex mu_;
  ReadaheadWindow window_;
  std::map<uint64_t, std::shared_ptr<Part>> parts_;
  // The last unaligned piece fetched for each run, by ReadaheadWindow::stream().
  std::vector<std::shared_ptr<Part>> pieces_;
  // Bytes from its start that reads took from the last ramping run's piece (null: none yet).
  std::shared_ptr<uint64_t> last_ramp_served_;
  // When each run was last read, by ReadaheadWindow::stream(): windows idle for piece_idle
  // are closed.
  std::vector<std::chrono::steady_clock::time_point> run_read_at_;
  int in_flight_ = 0;
  bool closed_ = false;
  // Whole-object CRC-64: the fold, how many aligned parts of each index may still bring a
  // CRC (created, not yet settled), the reads reaching the end that wait for the verdict,
  // and the mismatch every later read reaching the end fails with (OK: none).
  PartCrcFold fold_;
  std::map<uint64_t, int> crc_coming_;
  std::vector<std::function<void(Status)>> verdict_waiters_;
  Status mismatch_;
  // Set once this reader sent a GET: a disk-cache part's CRC is computed only when the
  // object's CRC is known or a GET may tell it (a file read wholly from the disk cache
  // costs no CRC work that could never be compared).
  std::atomic<bool> sent_get_{false};
  // This version failed the check in this process: its disk-cache blocks are not used.
  std::atomic<bool> skip_disk_cache_{false};
};

}  // namespace ossmount::readahead
