// The start-up check: one small listing proves, before anything is mounted, that the
// endpoint answers, the bucket exists and the credentials are accepted. A failure comes
// back as a message naming the bucket and endpoint, with a hint saying what to fix.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <string>

#include "config/mount_config.h"
#include "fs/filesystem.h"
#include "ossmount/object_client.h"
#include "ossmount/status.h"

namespace ossmount::daemon {

// Where a start-up check tells the user that it is still waiting (StartupReporter::Note).
using WaitingNotice = std::function<void(const std::string&)>;

// Blocks until the listing completes or `timeout` passes, telling the user while it waits
// (see WaitForStartupAnswer).
// REQUIRES: the client's io_context is being run by other threads.
Status ProbeBucket(ObjectClient& client, const config::MountConfig& config,
                   std::chrono::seconds timeout, const WaitingNotice& on_waiting = nullptr);

// "bucket 'B' at endpoint E": how the start-up checks' messages name what they check.
std::string DescribeBucket(const config::MountConfig& config);

// Waits up to `timeout` for a start-up check's answer; false if none came. A slow or silent
// endpoint can take minutes (the client's retries), so the wait is not silent: 5 s in, and
// every 15 s after, "waiting for <what>: N s so far, at most M s" goes to the log (warning)
// and to `on_waiting`.
bool WaitForStartupAnswer(const std::future<Status>& answer, const std::string& what,
                          std::chrono::seconds timeout, const WaitingNotice& on_waiting);

// Lists the mount root through the filesystem (OpenDir + the first ReadDir) so that its
// listing is cached before the first lookup: a first `stat MOUNT/train` then needs no
// HEAD/LIST probe. Best effort: waits at most `timeout`, logs and carries on otherwise.
void WarmRootListing(fs::Filesystem& filesystem, std::chrono::seconds timeout);

// The hint for a failed probe (exposed for tests and for other start-up paths).
std::string ProbeHint(const Status& status, const config::MountConfig& config);

}  // namespace ossmount::daemon
