#include "http/curl_global.h"

#include <curl/curl.h>

#include <mutex>

namespace ossmount::http::internal {

bool EnsureCurlGlobalInit() {
  static std::once_flag once;
  static bool ok = false;
  // Never cleaned up: handles may outlive static destructors, and the OS reclaims it all.
  std::call_once(once, [] { ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK; });
  return ok;
}

}  // namespace ossmount::http::internal
