#include "readahead/readahead_window.h"

#include <algorithm>

namespace ossmount::readahead {

namespace {
ReadaheadWindow::Options Sanitise(ReadaheadWindow::Options o) {
  o.streams = std::max<size_t>(1, o.streams);
  o.windows = std::max<size_t>(1, o.windows);
  return o;
}
}  // namespace

ReadaheadWindow::ReadaheadWindow(Options options)
    : options_(Sanitise(options)), runs_(options_.streams) {}

void ReadaheadWindow::Reach(size_t index, uint64_t margin, uint64_t* low, uint64_t* high) const {
  const Run& run = runs_[index];
  *low = run.end > margin ? run.end - margin : 0;
  *high = run.end + std::max(margin, run.window);
}

size_t ReadaheadWindow::SlotForNewRun() const {
  size_t slot = 0;
  for (size_t i = 0; i < runs_.size(); ++i) {
    if (!runs_[i].live) return i;
    if (runs_[i].last_read < runs_[slot].last_read) slot = i;
  }
  return slot;
}

size_t ReadaheadWindow::windows() const {
  size_t n = 0;
  for (const Run& run : runs_) n += run.live && run.window > 0;
  return n;
}

uint64_t ReadaheadWindow::largest_window() const {
  uint64_t largest = 0;
  for (const Run& run : runs_) {
    if (run.live) largest = std::max(largest, run.window);
  }
  return largest;
}

void ReadaheadWindow::Open(Run& run) {
  run.window = std::min(options_.initial, options_.max);
  run.advanced = 0;
}

ReadaheadWindow::Access ReadaheadWindow::OnRead(uint64_t offset, uint64_t size) {
  const uint64_t read_end = offset + size;
  const bool first_read = reads_ == 0;
  ++reads_;
  // Near a run's position first (a run with a window, else the most recently read), then
  // skipping forward into a window.
  size_t match = kNone;
  auto better = [&](size_t i) {
    if (match == kNone) return true;
    const bool windowed = runs_[i].window > 0, match_windowed = runs_[match].window > 0;
    if (windowed != match_windowed) return windowed;
    return runs_[i].last_read > runs_[match].last_read;
  };
  for (size_t i = 0; i < runs_.size(); ++i) {
    const Run& run = runs_[i];
    const uint64_t low = run.end > options_.slack ? run.end - options_.slack : 0;
    if (!run.live || offset < low || offset > run.end + options_.slack) continue;
    if (better(i)) match = i;
  }
  if (match == kNone) {
    for (size_t i = 0; i < runs_.size(); ++i) {
      if (!runs_[i].live || runs_[i].window == 0) continue;
      uint64_t low, high;
      Reach(i, options_.slack, &low, &high);
      if (offset >= low && offset <= high && better(i)) match = i;
    }
  }
  if (match == kNone) {
    // A lone reader that jumped has left its window; other readers' windows (runs that were
    // interleaved with another's reads) stay open.
    for (Run& run : runs_) {
      if (!run.interleaved) run.window = 0;
    }
    const size_t slot = SlotForNewRun();
    runs_[slot] = Run{true, offset, read_end, reads_, false, 0, 0, size, false};
    current_ = slot;
    if (!(first_read && offset == 0)) return Access::kRandom;
    // The file's first read, from offset 0: a reader of the whole file.
    Open(runs_[slot]);
    return Access::kSequential;
  }
  Run& run = runs_[match];
  if (match != current_) run.interleaved = true;
  current_ = match;
  run.last_read = reads_;
  run.ramping = run.window == 0 && read_end > run.end && size >= 2 * run.last_size;
  run.last_size = size;
  if (run.window > 0) {
    if (read_end > run.end) {
      run.advanced += read_end - run.end;
      if (run.advanced >= run.window) {
        run.window = std::min(run.window * 2, options_.max);
        run.advanced = 0;
      }
      run.end = read_end;
    }
    return Access::kSequential;
  }
  run.end = std::max(run.end, read_end);
  const bool established = run.start == 0 || run.end - run.start >= options_.establish;
  if (!established || windows() >= options_.windows) return Access::kShortRun;
  Open(run);
  return Access::kSequential;
}

bool ReadaheadWindow::NearAnyRun(uint64_t from, uint64_t to, uint64_t margin) const {
  for (size_t i = 0; i < runs_.size(); ++i) {
    const Run& run = runs_[i];
    if (!run.live || (i != current_ && run.window == 0 && !run.interleaved)) continue;
    uint64_t low, high;
    Reach(i, margin, &low, &high);
    if (from <= high && to > low) return true;
  }
  return false;
}

void ReadaheadWindow::Shrink() {
  Run& run = runs_[current_];
  if (run.window == 0) return;
  run.window = std::max(std::min(options_.initial, options_.max), run.window / 2);
  run.advanced = 0;
}

void ReadaheadWindow::Grow() {
  Run& run = runs_[current_];
  if (run.window == 0) return;
  run.window = std::min(run.window * 2, options_.max);
  run.advanced = 0;
}

void ReadaheadWindow::CloseWindow(size_t stream) {
  runs_[stream].window = 0;
  runs_[stream].advanced = 0;
}

}  // namespace ossmount::readahead
