// ReadaheadWindow: the access-pattern state of one open file: which reads continue a reader's
// run, and how far ahead of it should data be fetched.
//
// One open file may have several readers at once, each at its own position: threads sharing
// a descriptor, or DataLoader workers forked after the Dataset opened the file. Each of their
// runs is tracked on its own, up to `streams` of them (the least recently read is forgotten
// first), so that interleaved readers are not each other's random reads.
//
// A read continues a run when it starts within `slack` of where the run's furthest read so far
// ended (slightly behind covers reads the kernel issues concurrently and that arrive out of
// order), or, for the run that holds the window, inside the window ahead of it (skipping
// forward into data that is already being fetched); the window's run is tried first, then the
// most recently read. The first read of the file continues a run when it starts at 0. Any
// other read is random: it closes the window and starts a new run.
//
//   - One run at a time holds the window. A run that started at offset 0 opens it at once (a
//     reader of the whole file), if no other run holds it.
//   - A run that started anywhere else opens it only once it covers `establish` bytes. Until
//     then its reads are a short run (kShortRun): a page fault of a memory-mapped file arrives
//     as the kernel's read-around, two or three adjacent reads around one record, and a
//     window opened by them would fetch megabytes for every record of a random-access reader.
//     A run that is established while another holds the window stays a short run.
//   - Every time the reader has advanced by a whole window, the window doubles, up to `max`.
//   - Shrink() halves it (not below `initial`): the memory budget refused a part.
//   - A random read closes the window (window() == 0) until a run is established again.
//
// Pure logic, no I/O. Not thread-safe: its owner serialises calls (SequentialReader::mu_).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ossmount::prefetch {

class ReadaheadWindow {
 public:
  struct Options {
    uint64_t initial = 1ull << 20;
    uint64_t max = 64ull << 20;
    uint64_t slack = 256ull << 10;
    // Bytes a run that did not start at offset 0 covers before its window opens; 0 opens it
    // at the run's second read.
    uint64_t establish = 0;
    // Runs tracked at once (at least 1).
    size_t streams = 32;
  };
  enum class Access { kSequential, kShortRun, kRandom };

  explicit ReadaheadWindow(Options options);

  // Classifies the read [offset, offset + size) and updates its run and the window.
  Access OnRead(uint64_t offset, uint64_t size);
  // The run the last read belonged to: an index below Options::streams. A random read starts
  // its run in the slot of a forgotten one.
  size_t stream() const { return current_; }
  // Bytes to have fetched beyond window_start(); 0 while no run holds the window.
  uint64_t window() const { return window_; }
  // Where the window begins: the end of the furthest read of the run that holds it.
  uint64_t window_start() const { return window_ == 0 ? 0 : runs_[window_run_].end; }
  // Whether run `stream` was continued right after another run's read: a reader that
  // shares the file with others, not one that moved on from it.
  bool interleaved(size_t stream) const { return runs_[stream].interleaved; }
  // Where the furthest read of the last read's run ended (the reader's position). After a
  // kSequential read, that run holds the window.
  uint64_t end() const { return runs_[current_].end; }
  // Bytes the last read's run covers, from where it started to end().
  uint64_t run() const { return runs_[current_].end - runs_[current_].start; }
  // Whether any byte of [from, to) is within `margin` of the position of the last read's run,
  // the window's run or an interleaved run, or inside the window ahead of the run that holds
  // it: bytes a reader will likely read next. (A lone reader's earlier runs do not count: it
  // moved on from them.)
  bool NearAnyRun(uint64_t from, uint64_t to, uint64_t margin) const;
  void Shrink();

 private:
  struct Run {
    bool live = false;
    uint64_t start = 0;
    uint64_t end = 0;
    uint64_t last_read = 0;  // OnRead call count at its last read (least recent goes first)
    bool interleaved = false;
  };
  // [*low, *high]: within `margin` of run `index`'s position, or inside the window ahead of it.
  void Reach(size_t index, uint64_t margin, uint64_t* low, uint64_t* high) const;
  size_t SlotForNewRun() const;

  const Options options_;
  std::vector<Run> runs_;
  static constexpr size_t kNone = ~size_t{0};
  size_t window_run_ = kNone;
  size_t current_ = 0;
  uint64_t reads_ = 0;
  uint64_t window_ = 0;
  uint64_t advanced_ = 0;  // bytes the window run moved since the window last grew
};

}  // namespace ossmount::prefetch
