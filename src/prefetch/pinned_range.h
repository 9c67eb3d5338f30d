// PinnedRange: one ranged GET of an object version pinned at open (If-Match its etag), and
// the check that its answer holds exactly that range of that version. One way to send and
// check a part, for the disk-cache warm-up (DatasetFetcher) and large-file readers alike.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ossmount/object_client.h"
#include "ossmount/status.h"

namespace ossmount::prefetch {

struct PinnedRange {
  std::string key;
  std::string etag;          // pinned at open
  uint64_t object_size = 0;  // pinned at open
  uint64_t offset = 0;
  uint64_t length = 0;
};

GetRequest PinnedGetRequest(const PinnedRange& range, Priority priority,
                            std::shared_ptr<CancelFlag> cancel = nullptr);

// OK when `r` holds the range of the pinned version. kPreconditionFailed when the object
// changed: another size or etag, or a range past its end (it shrank). Else the GET's error.
Status CheckPinnedRange(const Result<GetResult>& r, const PinnedRange& range);

}  // namespace ossmount::prefetch
