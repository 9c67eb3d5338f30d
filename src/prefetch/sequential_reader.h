// SequentialReader: reads of one open large file, with readahead for sequential readers.
//
// The object is read in aligned parts of part_size (index = offset / part_size), each one
// ranged GET with If-Match = the etag pinned at open.
//   - Sequential reads (ReadaheadWindow) keep the parts covering [reader, reader + window)
//     fetched or in flight: parts the reader waits for go out with Priority::kForeground,
//     parts ahead of it with Priority::kPrefetch. The window starts at initial_window and
//     doubles while reads stay sequential, up to max_window: every time the reader has
//     consumed a window, and at every read that waits for a part fetched ahead of it (a
//     stall: readahead does not cover the fetch's latency at this reader's pace, as where
//     each connection is slower than the reader). Once its run covers twice initial_window,
//     a read waiting for any part an earlier read asked for is a stall too, the part the
//     run started in included: at a slow connection the first part alone then no longer
//     holds the reader until it is 7 MiB in. Before that (a `head -c`, a format probe,
//     the kernel's first readahead of a small read), waiting for that part fetches nothing.
//   - A random read (one that continues no reader's run, see ReadaheadWindow) that no kept
//     part covers closes a lone reader's window, cancels (CancelFlag) and drops every part it
//     does not need and that holds no other run's position, and fetches exactly the bytes asked for
//     with one ranged GET that is not kept (a 4 KiB pread costs 4 KiB, not a part). With a
//     disk cache, random reads fetch the covering parts instead, so that they are looked up
//     in and fed to the cache.
//   - Reads that continue a run that did not start at 0 are a short run until the run covers
//     part_size (ReadaheadWindow's `establish`), and stay one while `windows` other runs hold
//     a window: each read its run's last piece does not cover fetches one unaligned piece from
//     its offset, as long as the run so far (at most part_size, at least the read), and
//     nothing ahead. A random-access reader of a memory-mapped file (whose page faults come
//     as two or three adjacent reads of the kernel's read-around) so costs about what the
//     kernel asked for, not a part and a window per record; a run that goes on doubles its
//     pieces until its window opens. A run from offset 0 opens its window at once. With a
//     disk cache, short runs fetch the covering parts, like random reads.
//   - Several readers of one open file (forked workers, threads) each have their own run, so
//     each grows its own pieces and, once established, its own window (up to `windows` runs;
//     beyond them, runs go on in pieces), kept with its parts while the others read
//     elsewhere. Each run keeps its last piece for its next reads until the reader left it:
//     it read past it, it was not read for piece_idle, or (a run never interleaved with
//     another's reads: a lone reader that jumped) another run read; a window not read for
//     piece_idle is closed. Beyond the budget, only one piece of the file is kept.
//   - Parts behind the reader (ended more than `slack` before it) are dropped at once, so a
//     sequential reader holds about one window of memory. A late read for bytes so dropped,
//     within `late_tolerance` of the reader, is fetched exactly and alone (a straggler of
//     the kernel's concurrent readahead), keeping the window.
//
// Backpressure: readahead parts are issued only while this file has fewer than
// per_file_concurrency GETs in flight, a slot of the shared FetchSlots (global_concurrency) is
// free and the shared MemoryBudget grants TryReserve(); a refusal by the budget stops the
// readahead and shrinks the window instead of growing the process. A part a reader waits for
// also asks TryReserve(); when the budget is spent (by the readahead of all files) the reader
// instead gets a small unaligned piece (max(read, min(part_size, initial_window)) bytes) that
// is Reserve()d, so a waiting reader never fails or waits for memory, and the overshoot is
// about initial_window per waiting reader, not a part. The reservation lives with the buffer
// (also in replies still being sent).
//
// Disk cache (optional): a part is looked up ({key, etag, index}, its exact length) before it
// is fetched, and stored after a successful GET.
//
// Version pinning: a 412, or a body whose size/etag differs from the pinned ones, fails the
// read with kPreconditionFailed (ESTALE); bytes of two versions are never mixed in a reply.
// Failed parts are not kept, so a later read retries.
//
// Whole-object CRC-64 (PartCrcFold): a ranged GET's bytes carry no checksum of their own, so a
// reader that gets the object's aligned parts from offset 0 to its end has their CRC-64s
// combined in order (each computed once per part, when it is complete, off the reader's
// thread) and compared with the object's CRC-64: x-oss-hash-crc64ecma of the parts' GETs
// (OSS sends the whole object's on ranged GETs too), else ReaderOptions::object_crc64. The
// fold starts when part 0 is created. A read that reaches the end of the object while every
// part not yet folded is folded or on its way waits for the verdict. On a mismatch: a warning
// naming the key and both CRCs, that read (and every later one reaching the end, until a
// later pass from 0 matches) fails with kIntegrity (EIO), the parts held are dropped, and
// readers of that version opened later in this process skip the disk cache (its blocks may
// hold the damaged bytes) and fetch again. Not verified: objects read out of order or only in
// part (random reads, a run that did not start at 0, parts read as pieces when the budget was
// spent, bytes the kernel page cache answered), reads fetched directly (stragglers, random
// reads), and objects whose CRC-64 is unknown (S3; parts all from the disk cache with no GET
// of this reader to tell it). Counted in ossmount_object_crc_checks_total{result}.
//
// Replies: a read inside one part points into the part buffer (owner = the buffer); a read
// spanning parts is gathered into one new buffer. A read is answered as soon as its own bytes
// have arrived (GetTarget::on_arrival), not when the whole part or piece has: the first
// 128 KiB of a file, or of a seek's new piece, wait for those bytes and not for 8 MiB.
// Bytes that arrived stay valid if the GET fails later; a read still waiting gets the error.
//
// Ownership: create with std::make_shared; in-flight GETs keep it alive. Call Close() when
// the file is released: it cancels every GET and drops every part (reads after it fail).
// Thread-safety: all methods may be called concurrently; mu_ is a leaf lock (never held
// while calling the client, the disk cache or a callback).
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
#include "prefetch/fetch_slots.h"
#include "prefetch/part_crc_fold.h"
#include "prefetch/readahead_window.h"

namespace ossmount::prefetch {

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
  // REQUIRES mu_. Drops the pieces their readers have left (see the class comment), before a
  // read of the current run that `holding` (if any) answers; `random`: the run's slot was a
  // forgotten run's.
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
  // `got`: the GET's result when it succeeded (its CRC header), else null.
  void OnPartDone(const std::shared_ptr<Part>& part, Status status, const GetResult* got);
  // REQUIRES mu_. A GET of this object succeeded: what it says of the object's CRC-64.
  void NoteGetLocked(const GetResult& got);

  // Whole-object CRC-64 (see the class comment).
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

}  // namespace ossmount::prefetch
