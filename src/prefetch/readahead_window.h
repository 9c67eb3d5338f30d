// ReadaheadWindow: the access-pattern state of one open file: is the reader sequential, and
// how far ahead of it should data be fetched.
//
// A read continues the reader's run when it is the first read and starts at 0, or when it
// starts within `slack` of where the furthest read so far ended (slightly behind covers reads
// the kernel issues concurrently and that arrive out of order), or inside the current window
// ahead of it (skipping forward into data that is already being fetched). Anything else is
// random and starts a new run.
//
//   - A run that started at offset 0 opens a window of `initial` bytes (beyond the read's end)
//     at once: a reader of the whole file.
//   - A run that started anywhere else opens it only once it covers `establish` bytes. Until
//     then its reads are a short run (kShortRun): a page fault of a memory-mapped file arrives
//     as the kernel's read-around, two or three adjacent reads around one record, and a
//     window opened by them would fetch megabytes for every record of a random-access reader.
//   - Every time the reader has advanced by a whole window, the window doubles, up to `max`.
//   - Shrink() halves it (not below `initial`): the memory budget refused a part.
//   - A random read closes the window (window() == 0) until a run is established again.
//
// Pure logic, no I/O. Not thread-safe: its owner serialises calls (SequentialReader::mu_).
#pragma once

#include <cstdint>

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
  };
  enum class Access { kSequential, kShortRun, kRandom };

  explicit ReadaheadWindow(Options options);

  // Classifies the read [offset, offset + size) and updates the window.
  Access OnRead(uint64_t offset, uint64_t size);
  // Bytes to have fetched beyond end(); 0 while the access pattern is random or a short run.
  uint64_t window() const { return window_; }
  // Where the furthest read so far ended (the reader's position).
  uint64_t end() const { return end_; }
  // Bytes the current run covers, from where it started to end().
  uint64_t run() const { return end_ - run_start_; }
  void Shrink();

 private:
  const Options options_;
  bool any_read_ = false;
  uint64_t end_ = 0;
  uint64_t run_start_ = 0;
  uint64_t window_ = 0;
  uint64_t advanced_ = 0;  // bytes the reader moved since the window last grew
};

}  // namespace ossmount::prefetch
