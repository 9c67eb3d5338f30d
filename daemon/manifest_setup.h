// --manifest at start-up: load the manifest, check the bucket without listing it, and put
// the manifest's ObjectClient (meta/manifest_client.h) in front of the real one.
#pragma once

#include <chrono>
#include <memory>

#include "bucket_probe.h"
#include "config/mount_config.h"
#include "ossmount/object_client.h"
#include "ossmount/status.h"

namespace boost::asio {
class io_context;
}

namespace ossmount::daemon {

// Loads config.manifest (errors name the file and the lines), then proves the endpoint,
// bucket and credentials with one 1-byte GET of the first entry instead of a LIST (a
// missing first object only warns; a slow answer is waited for as ProbeBucket's is).
// Returns the client the filesystem must use.
// REQUIRES: config.manifest is set; the io_context is being run by other threads.
Result<std::shared_ptr<ObjectClient>> SetUpManifest(boost::asio::io_context& io,
                                                    std::shared_ptr<ObjectClient> client,
                                                    const config::MountConfig& config,
                                                    std::chrono::seconds probe_timeout,
                                                    const WaitingNotice& on_waiting = nullptr);

}  // namespace ossmount::daemon
