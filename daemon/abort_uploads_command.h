// `ossmount abort-uploads BUCKET[:/PREFIX] [--older-than AGE] [--dry-run] [options]`: aborts
// the multipart uploads left open under the prefix, the parts of saves that never completed
// (a machine that crashed and never mounted again). The other options are the mount's
// (endpoint, region, protocol, credentials, config file), without a mountpoint.
//
// Only uploads started more than AGE ago (default 24h) are aborted, so that saves still in
// progress on other machines are left alone; an upload whose start the server does not give
// is aborted only with --older-than 0. --dry-run lists what would be aborted.
// Exit status: 0 all aborted (or nothing to do), 1 a listing or an abort failed, 2 bad
// arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ossmount/object_client.h"

namespace ossmount::daemon {

// The uploads of `open` to abort: started at least `older_than_sec` before `now_sec`.
// Pure: unit-testable.
std::vector<OpenUpload> UploadsToAbort(const std::vector<OpenUpload>& open, int64_t now_sec,
                                       int64_t older_than_sec);

int AbortUploadsCommand(const std::vector<std::string>& args);

}  // namespace ossmount::daemon
