#include "prefetch/readahead_window.h"

#include <algorithm>

namespace ossmount::prefetch {

ReadaheadWindow::ReadaheadWindow(Options options) : options_(options) {}

ReadaheadWindow::Access ReadaheadWindow::OnRead(uint64_t offset, uint64_t size) {
  const uint64_t read_end = offset + size;
  bool continues;
  if (!any_read_) {
    continues = offset == 0;
  } else {
    const uint64_t low = end_ > options_.slack ? end_ - options_.slack : 0;
    const uint64_t high = end_ + std::max(options_.slack, window_);
    continues = offset >= low && offset <= high;
  }
  any_read_ = true;
  if (!continues) {
    window_ = 0;
    advanced_ = 0;
    run_start_ = offset;
    end_ = read_end;
    return Access::kRandom;
  }
  if (window_ == 0) {
    const uint64_t run_end = std::max(end_, read_end);
    if (run_start_ != 0 && run_end - run_start_ < options_.establish) {
      end_ = run_end;
      return Access::kShortRun;
    }
    window_ = std::min(options_.initial, options_.max);
    advanced_ = 0;
  } else if (read_end > end_) {
    advanced_ += read_end - end_;
    if (advanced_ >= window_) {
      window_ = std::min(window_ * 2, options_.max);
      advanced_ = 0;
    }
  }
  end_ = std::max(end_, read_end);
  return Access::kSequential;
}

void ReadaheadWindow::Shrink() {
  if (window_ == 0) return;
  window_ = std::max(std::min(options_.initial, options_.max), window_ / 2);
  advanced_ = 0;
}

}  // namespace ossmount::prefetch
