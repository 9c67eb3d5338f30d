// CredentialSources: where the credentials provider may find credentials (an explicit pair,
// files, an ECS RAM role, or none at all), filled by src/config and the tools and handed to
// BuildCredentialsProvider (credential_providers.h). A leaf: plain values only, so the
// configuration needs no class of src/auth.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ossmount/client_options.h"
#include "ossmount/status.h"

namespace ossmount::auth {

// A minimal blocking HTTP call for the ECS metadata service, injected so that src/auth does
// not depend on libcurl (src/http provides one). Returns the status code and body.
struct HttpFetchResult {
  long status = 0;
  std::string body;
};
using HttpFetcher = std::function<Result<HttpFetchResult>(
    const std::string& method, const std::string& url,
    const std::vector<std::pair<std::string, std::string>>& headers)>;

struct CredentialSources {
  Protocol protocol = Protocol::kOss;
  std::string bucket;  // selects bucket:id:secret lines in a passwd file
  bool anonymous = false;
  std::string access_key_id;  // explicit pair (command line or config file)
  std::string access_key_secret;
  std::string security_token;
  std::string credentials_file;  // explicit path, or "" for the default paths
  std::string passwd_file;       // explicit path, or "" for the default paths
  std::string ram_role;          // role name, "auto" to discover it, "" = not used
  std::string ecs_metadata_url = "http://100.100.100.200";
  HttpFetcher fetcher;  // required when ram_role is set
};

}  // namespace ossmount::auth
