// The "warmup-status" answer: the dataset prefetcher's status (prefetch::PrefetchStatus) as
// one JSON object, the form `ossmount warmup`, the Python hints module and the mount tests
// read. A pure function; any thread.
#pragma once

#include <string>

#include "prefetch/prefetch_options.h"
#include "prefetch/prefetch_status.h"

namespace ossmount::daemon {

// `options`: the prefetcher's, for the concurrency limits the object reports beside the
// status.
std::string PrefetchStatusJson(const prefetch::PrefetchStatus& status,
                               const prefetch::DatasetPrefetchOptions& options);

}  // namespace ossmount::daemon
