// --manifest at start-up: load the manifest (a local file, or an object of the mounted bucket:
// --manifest oss://BUCKET/KEY), check the bucket without listing it, and put the manifest's
// ObjectClient (meta/manifest_client.h) in front of the real one.
#pragma once

#include <chrono>
#include <memory>

#include "bucket_probe.h"
#include "config/mount_config.h"
#include "meta/manifest_parser.h"
#include "ossmount/object_client.h"
#include "ossmount/status.h"

namespace boost::asio {
class io_context;
}

namespace ossmount::daemon {

// Loads config.manifest (errors name the file and the lines), then proves the endpoint,
// bucket and credentials with one 1-byte GET of the first entry instead of a LIST (a
// missing first object only warns; a slow answer is waited for as ProbeBucket's is). A
// manifest in the bucket (config.manifest_key set) is read with FetchManifestObject, whose
// requests already prove all that, so no other probe is sent.
// Returns the client the filesystem must use.
// REQUIRES: config.manifest is set; the io_context is being run by other threads.
Result<std::shared_ptr<ObjectClient>> SetUpManifest(boost::asio::io_context& io,
                                                    std::shared_ptr<ObjectClient> client,
                                                    const config::MountConfig& config,
                                                    std::chrono::seconds probe_timeout,
                                                    const WaitingNotice& on_waiting = nullptr);

// The largest manifest object read from the bucket: about 5 million ImageNet-style lines. It
// is held whole in memory while it is parsed, so a wrong key (a tar file, a checkpoint)
// must fail fast instead of filling memory.
inline constexpr uint64_t kMaxManifestObjectBytes = 512ull << 20;

// Reads the manifest object `key` of the client's bucket: one HEAD (size and etag; more than
// `max_bytes` fails with kTooBig before any byte is read), then one whole-object GET pinned
// to that etag (If-Match) and checked against its CRC-64, parsed like a manifest file. Every
// entry's mtime is the object's Last-Modified. Errors start with `uri` (the --manifest text,
// which holds no secret) and say what to fix: kNotFound when the object is missing,
// kInvalidArgument with the bad lines when it is malformed, kTimeout when no answer came
// within `timeout`, the request's own error otherwise.
// REQUIRES: the client's io_context is being run by other threads.
Result<meta::LoadedManifest> FetchManifestObject(ObjectClient& client, const std::string& key,
                                                 const std::string& uri,
                                                 const meta::ManifestScope& scope,
                                                 std::chrono::seconds timeout,
                                                 const WaitingNotice& on_waiting = nullptr,
                                                 uint64_t max_bytes = kMaxManifestObjectBytes);

}  // namespace ossmount::daemon
