// ManifestObjectClient: an ObjectClient that answers listings from a manifest (--manifest)
// and passes data requests through to the real client.
//
// The filesystem lists directories and probes names with List (fs/dir_lister.h,
// fs/name_prober.h); behind this decorator those never reach the server, so a mount with a
// manifest sends ZERO LIST requests, and keys absent from the manifest are never visible.
// Everything else about the tree is unchanged: the pages look like a server's (delimiter
// roll-up, continuation tokens, max-keys), and meta::DirectoryBuilder turns them into
// directories, hiding hostile keys by the usual rules.
//
//   - List: answered from the index for prefixes under the mounted prefix; an empty page
//     for any other prefix. An entry the manifest gave with size AND etag is reported as
//     given (mtime: the manifest file's). An entry without a size or an etag is completed
//     by one HEAD the first time a page shows it (remembered for the life of the mount):
//     without an etag, reads could not be pinned to one version of the object with
//     If-Match, nor cached on disk safely. An entry whose HEAD says 404 is left out of
//     the page; any other HEAD failure fails that List.
//   - Head: kNotFound for keys not in the manifest; otherwise passed through.
//   - Get, Put, multipart, Delete: passed through unchanged (reads carry If-Match with the
//     etag the listing gave, as for any listing).
//
// Thread-safety: all methods may be called concurrently; the index is immutable and the
// learned entries are guarded by a leaf mutex. Completions are always posted to `io`.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>

#include "meta/manifest_index.h"
#include "ossmount/object_client.h"

namespace ossmount::meta {

struct ManifestClientOptions {
  std::string mount_prefix;  // "" or ending in '/': what manifest keys are relative to
  int64_t mtime_sec = 0;     // reported for entries the manifest describes
};

std::shared_ptr<ObjectClient> MakeManifestObjectClient(boost::asio::io_context& io,
                                                       std::shared_ptr<ObjectClient> inner,
                                                       std::shared_ptr<const ManifestIndex> index,
                                                       ManifestClientOptions options);

}  // namespace ossmount::meta
