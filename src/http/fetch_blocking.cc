// FetchBlocking: one request on a private easy handle with curl_easy_perform. No engine,
// no io_context, no connection reuse; for start-up probes and the ECS metadata service.
#include <curl/curl.h>

#include "http/curl_global.h"
#include "http/fetch_engine.h"
#include "http/transfer.h"

namespace ossmount::http {

Response FetchBlocking(const Request& request, const EngineOptions& options) {
  internal::Transfer transfer(request, nullptr);
  if (!internal::EnsureCurlGlobalInit()) {
    return transfer.Fail(Status(ErrorCode::kInternal, "libcurl failed to initialise"));
  }
  if (transfer.cancel_requested()) {
    return transfer.Fail(Status(ErrorCode::kCancelled, "request cancelled"));
  }
  CURL* easy = curl_easy_init();
  if (easy == nullptr) {
    return transfer.Fail(Status(ErrorCode::kInternal, "curl_easy_init failed", true));
  }
  Status configured = transfer.Configure(easy, options);
  Response response;
  if (!configured.ok()) {
    response = transfer.Fail(configured);
  } else {
    CURLcode code = curl_easy_perform(easy);
    response = transfer.Finish(code);
  }
  curl_easy_cleanup(easy);
  return response;
}

}  // namespace ossmount::http
