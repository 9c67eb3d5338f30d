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
// order), or, for a run that holds a window, inside the window ahead of it (skipping forward
// into data that is already being fetched); runs with a window are tried first, then the most
// recently read. The first read of the file continues a run when it starts at 0. Any other
// read is random: it starts a new run.
//
//   - Each run has its own window, up to `windows` runs at once (readers of regions of one
//     file through one descriptor: a parallel copy, a multi-threaded loader). A run that
//     started at offset 0 opens one at once (a reader of the whole file).
//   - A run that started anywhere else opens one only once it covers `establish` bytes.
//     Until then its reads are a short run (kShortRun): a page fault of a memory-mapped file
//     arrives as the kernel's read-around, two or three adjacent reads around one record, and
//     a window opened by them would fetch megabytes for every record of a random-access
//     reader. A run established while `windows` runs hold one stays a short run.
//   - Every time the reader has advanced by a whole window, the window doubles, up to `max`.
//   - Grow() doubles it too, up to `max`: the last read waited for bytes that readahead
//     should have had there (a stall; SequentialReader decides what counts). Readahead
//     then does not cover the fetch's latency at this reader's pace, which is what happens
//     where each connection is slower than the reader (tens of MB/s to an object store
//     across a network): there the reader advances only as fast as one part arrives, so
//     growth by consumption alone would take the first 64 MiB to put more than a part or
//     two in flight. A stall is the signal that more parts in parallel are worth their
//     memory, whatever the latency and bandwidth.
//   - Shrink() halves the last read's run's window (not below `initial`): the memory budget
//     refused a part.
//   - A short run's read that is at least twice as long as the run's previous read is a
//     ramp (ramping()): the kernel's readahead growing its requests for a read() that goes on
//     (a 4 MiB record read after its header), which the fixed-size read-around of page
//     faults never does.
//   - A random read closes the windows of runs never interleaved with another run's reads:
//     a lone reader that jumped has left its window. Other readers' windows stay open, until
//     CloseWindow() (their reader went idle) or their run is forgotten.
//
// Pure logic, no I/O. Not thread-safe: its owner serialises calls (SequentialReader::mu_).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ossmount::readahead {

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
    // Runs holding a window at once (at least 1).
    size_t windows = 8;
  };
  enum class Access { kSequential, kShortRun, kRandom };

  explicit ReadaheadWindow(Options options);

  // Classifies the read [offset, offset + size) and updates its run and the window.
  Access OnRead(uint64_t offset, uint64_t size);
  // The run the last read belonged to: an index below Options::streams. A random read starts
  // its run in the slot of a forgotten one.
  size_t stream() const { return current_; }
  // Bytes to have fetched beyond window_start() for the last read's run; 0 when it holds no
  // window (after a random read or a short run's read).
  uint64_t window() const { return runs_[current_].window; }
  // Where that window begins: the end of the furthest read of the last read's run.
  uint64_t window_start() const { return window() == 0 ? 0 : runs_[current_].end; }
  // Runs holding a window now, and the largest of their windows (0 when none).
  size_t windows() const;
  uint64_t largest_window() const;
  // Whether run `stream` was continued right after another run's read: a reader that
  // shares the file with others, not one that moved on from it.
  bool interleaved(size_t stream) const { return runs_[stream].interleaved; }
  // Where the furthest read of the last read's run ended (the reader's position). After a
  // kSequential read, that run holds a window.
  uint64_t end() const { return runs_[current_].end; }
  // Whether the last read continued a short run with a request at least twice as long as
  // the run's previous one (see above).
  bool ramping() const { return runs_[current_].ramping; }
  // Bytes the last read's run covers, from where it started to end().
  uint64_t run() const { return runs_[current_].end - runs_[current_].start; }
  // Whether any byte of [from, to) is within `margin` of the position of the last read's run,
  // a run with a window or an interleaved run, or inside the window ahead of a run that holds
  // one: bytes a reader will likely read next. (A lone reader's earlier runs do not count: it
  // moved on from them.)
  bool NearAnyRun(uint64_t from, uint64_t to, uint64_t margin) const;
  void Shrink();
  // The last read's run stalled (see above): doubles its window, up to `max`, and starts
  // counting its advance toward the next doubling afresh. No-op for a run without a window.
  void Grow();
  // Closes run `stream`'s window (its reader stopped reading); the run stays tracked.
  void CloseWindow(size_t stream);
  // Whether run `stream` holds a window.
  bool has_window(size_t stream) const { return runs_[stream].window > 0; }

 private:
  struct Run {
    bool live = false;
    uint64_t start = 0;
    uint64_t end = 0;
    uint64_t last_read = 0;  // OnRead call count at its last read (least recent goes first)
    bool interleaved = false;
    uint64_t window = 0;     // bytes to fetch beyond `end`; 0: no window
    uint64_t advanced = 0;   // bytes the run moved since its window last grew
    uint64_t last_size = 0;  // bytes of the run's latest read
    bool ramping = false;    // that read was at least twice as long as the one before
  };
  // [*low, *high]: within `margin` of run `index`'s position, or inside the window ahead of it.
  void Reach(size_t index, uint64_t margin, uint64_t* low, uint64_t* high) const;
  size_t SlotForNewRun() const;
  void Open(Run& run);

  const Options options_;
  std::vector<Run> runs_;
  static constexpr size_t kNone = ~size_t{0};
  size_t current_ = 0;
  uint64_t reads_ = 0;
};

}  // namespace ossmount::readahead
