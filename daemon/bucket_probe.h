// The start-up check: one small listing proves, before anything is mounted, that the
// endpoint answers, the bucket exists and the credentials are accepted. A failure comes
// back as a message naming the bucket and endpoint, with a hint saying what to fix.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "config/mount_config.h"
#include "fs/filesystem.h"
#include "ossmount/object_client.h"
#include "ossmount/status.h"

namespace ossmount::daemon {

// Blocks until the listing completes or `timeout` passes. While it waits (a slow or
// silent endpoint: the client's retries can take minutes), it tells the user so: a message
// to `on_waiting` and the log after kProbeFirstNotice, then every kProbeNoticeEvery.
// REQUIRES: the client's io_context is being run by other threads.
Status ProbeBucket(ObjectClient& client, const config::MountConfig& config,
                   std::chrono::seconds timeout,
                   const std::function<void(const std::string&)>& on_waiting = nullptr);
inline constexpr std::chrono::seconds kProbeFirstNotice{5};
inline constexpr std::chrono::seconds kProbeNoticeEvery{15};

// Lists the mount root through the filesystem (OpenDir + the first ReadDir) so that its
// listing is cached before the first lookup: a first `stat MOUNT/train` then needs no
// HEAD/LIST probe. Best effort: waits at most `timeout`, logs and carries on otherwise.
void WarmRootListing(fs::Filesystem& filesystem, std::chrono::seconds timeout);

// The hint for a failed probe (exposed for tests and for other start-up paths).
std::string ProbeHint(const Status& status, const config::MountConfig& config);

}  // namespace ossmount::daemon
