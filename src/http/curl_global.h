// Process-wide libcurl initialisation (curl_global_init), done once, lazily, before the
// first easy or multi handle is created. Internal to src/http.
//
// Thread-safety: EnsureCurlGlobalInit() may be called concurrently from any thread.
#pragma once

namespace ossmount::http::internal {

// Calls curl_global_init(CURL_GLOBAL_DEFAULT) exactly once per process. Returns false when
// that failed (every later call returns the same answer).
bool EnsureCurlGlobalInit();

}  // namespace ossmount::http::internal
