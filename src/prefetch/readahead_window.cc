#include "prefetch/readahead_window.h"

#include <algorithm>

namespace ossmount::prefetch {

ReadaheadWindow::ReadaheadWindow(Options options)
    : options_(options), runs_(std::max<size_t>(1, options.streams)) {}

void ReadaheadWindow::Reach(size_t index, uint64_t margin, uint64_t* low, uint64_t* high) const {
  const Run& run = runs_[index];
  *low = run.end > margin ? run.end - margin : 0;
  *high = run.end + (index == window_run_ ? std::max(margin, window_) : margin);
}

size_t ReadaheadWindow::SlotForNewRun() const {
  size_t slot = 0;
  for (size_t i = 0; i < runs_.size(); ++i) {
    if (!runs_[i].live) return i;
    if (runs_[i].last_read < runs_[slot].last_read) slot = i;
  }
  return slot;
}

ReadaheadWindow::Access ReadaheadWindow::OnRead(uint64_t offset, uint64_t size) {
  const uint64_t read_end = offset + size;
  const bool first_read = reads_ == 0;
  ++reads_;
  // Near a run's position first (the window's run, else the most recently read), then
  // skipping forward into the window.
  size_t match = kNone;
  for (size_t i = 0; i < runs_.size(); ++i) {
    const Run& run = runs_[i];
    const uint64_t low = run.end > options_.slack ? run.end - options_.slack : 0;
    if (!run.live || offset < low || offset > run.end + options_.slack) continue;
    if (match == kNone || i == window_run_ ||
        (match != window_run_ && run.last_read > runs_[match].last_read)) {
      match = i;
    }
  }
  if (match == kNone && window_run_ != kNone) {
    uint64_t low, high;
    Reach(window_run_, options_.slack, &low, &high);
    if (offset >= low && offset <= high) match = window_run_;
  }
  if (match == kNone) {
    const size_t slot = SlotForNewRun();
    runs_[slot] = Run{true, offset, read_end, reads_, false};
    current_ = slot;
    if (!(first_read && offset == 0)) {
      window_ = 0;
      advanced_ = 0;
      window_run_ = kNone;
      return Access::kRandom;
    }
    // The file's first read, from offset 0: a reader of the whole file.
    window_run_ = slot;
    window_ = std::min(options_.initial, options_.max);
    advanced_ = 0;
    return Access::kSequential;
  }
  Run& run = runs_[match];
  if (match != current_) run.interleaved = true;
  current_ = match;
  run.last_read = reads_;
  if (match == window_run_) {
    if (read_end > run.end) {
      advanced_ += read_end - run.end;
      if (advanced_ >= window_) {
        window_ = std::min(window_ * 2, options_.max);
        advanced_ = 0;
      }
      run.end = read_end;
    }
    return Access::kSequential;
  }
  run.end = std::max(run.end, read_end);
  const bool established = run.start == 0 || run.end - run.start >= options_.establish;
  if (window_run_ != kNone || !established) return Access::kShortRun;
  window_run_ = match;
  window_ = std::min(options_.initial, options_.max);
  advanced_ = 0;
  return Access::kSequential;
}

bool ReadaheadWindow::NearAnyRun(uint64_t from, uint64_t to, uint64_t margin) const {
  for (size_t i = 0; i < runs_.size(); ++i) {
    const Run& run = runs_[i];
    if (!run.live || (i != current_ && i != window_run_ && !run.interleaved)) continue;
    uint64_t low, high;
    Reach(i, margin, &low, &high);
    if (from <= high && to > low) return true;
  }
  return false;
}

void ReadaheadWindow::Shrink() {
  if (window_ == 0) return;
  window_ = std::max(std::min(options_.initial, options_.max), window_ / 2);
  advanced_ = 0;
}

}  // namespace ossmount::prefetch
