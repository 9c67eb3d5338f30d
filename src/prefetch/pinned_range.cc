#include "prefetch/pinned_range.h"

namespace ossmount::prefetch {

GetRequest PinnedGetRequest(const PinnedRange& range, Priority priority,
                            std::shared_ptr<CancelFlag> cancel) {
  GetRequest request;
  request.key = range.key;
  request.offset = range.offset;
  request.length = range.length;
  request.if_match = range.etag;
  request.priority = priority;
  request.cancel = std::move(cancel);
  return request;
}

Status CheckPinnedRange(const Result<GetResult>& r, const PinnedRange& range) {
  if (!r.ok()) {
    if (r.status().code() == ErrorCode::kInvalidRange) {
      return Status(ErrorCode::kPreconditionFailed, r.status().message());
    }
    return r.status();
  }
  return CheckPinnedGet(*r, range.key, range.length, range.object_size, range.etag);
}

}  // namespace ossmount::prefetch
