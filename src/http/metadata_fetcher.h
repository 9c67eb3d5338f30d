// A blocking auth::HttpFetcher built on FetchBlocking, so that src/auth can call the ECS
// instance metadata service (RAM role credentials) without depending on libcurl.
//
// Thread-safety: the returned function may be called concurrently from any thread; each
// call uses its own easy handle. It blocks the calling thread: never call it from an
// io_context thread that other work depends on.
#pragma once

#include "auth/credential_providers.h"
#include "http/fetch_engine.h"

namespace ossmount::http {

// Options suited to the metadata service at 100.100.100.200: plain http on the local
// network, so short deadlines (connect 2 s, whole request 10 s).
EngineOptions MetadataServiceOptions();

// The fetcher returns the HTTP status and body of any response that arrived (2xx or not;
// a non-2xx body is truncated to 64 KiB), or the transport error (kNetwork, kTimeout, ...)
// when none did. A 2xx body over kMaxMetadataBodyBytes is such an error (kProtocol): the
// transfer is abandoned at the limit.
inline constexpr size_t kMaxMetadataBodyBytes = 64 * 1024;
auth::HttpFetcher MakeBlockingHttpFetcher(EngineOptions options = MetadataServiceOptions());

}  // namespace ossmount::http
