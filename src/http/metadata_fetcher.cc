#include "http/metadata_fetcher.h"

#include <vector>

namespace ossmount::http {

EngineOptions MetadataServiceOptions() {
  EngineOptions options;
  options.timeouts.connect = std::chrono::milliseconds(2000);
  options.timeouts.request = std::chrono::milliseconds(10000);
  options.max_in_flight = 1;
  return options;
}

auth::HttpFetcher MakeBlockingHttpFetcher(EngineOptions options) {
  return [options = std::move(options)](
             const std::string& method, const std::string& url,
             const std::vector<std::pair<std::string, std::string>>& headers)
             -> Result<auth::HttpFetchResult> {
    std::vector<char> body;
    Request request;
    request.method = method;
    request.url = url;
    request.headers = headers;
    // The metadata service's replies are a token, a role name or a small JSON object.
    request.target = GetTarget::Growable(&body, kMaxMetadataBodyBytes);
    Response response = FetchBlocking(request, options);
    if (!response.transport.ok()) return response.transport;
    auth::HttpFetchResult result;
    result.status = response.status;
    if (response.status >= 200 && response.status < 300) {
      result.body.assign(body.begin(), body.end());
    } else {
      result.body = std::move(response.error_body);
    }
    return result;
  };
}

}  // namespace ossmount::http
