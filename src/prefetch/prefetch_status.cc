#include "prefetch/prefetch_status.h"

namespace ossmount::prefetch {

const char* JobStateName(JobState state) {
  switch (state) {
    case JobState::kListing:
      return "listing";
    case JobState::kRunning:
      return "running";
    case JobState::kDone:
      return "done";
    case JobState::kBudgetFull:
      return "budget-full";
    case JobState::kCancelled:
      return "cancelled";
    case JobState::kFailed:
      return "failed";
  }
  return "?";
}

}  // namespace ossmount::prefetch
