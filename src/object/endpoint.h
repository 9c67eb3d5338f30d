// Endpoint: a parsed --endpoint / --data-endpoint value, and the option checks the factory
// runs before building a client.
//
// Accepted endpoint forms: "host", "host:port", "http://host[:port]", "https://host[:port]",
// with an optional trailing '/'. A bare host means https. Anything with a path, query,
// user info or another scheme is rejected with a message naming the option.
#pragma once

#include <string>
#include <string_view>

#include "ossmount/client_options.h"
#include "ossmount/status.h"

namespace ossmount::object {

struct Endpoint {
  std::string scheme;       // "http" or "https"
  std::string host;         // "oss-cn-hangzhou.aliyuncs.com", "127.0.0.1:9000", "[::1]:9000"
  bool ip_literal = false;  // IPv4/IPv6 literal or localhost: no virtual-hosted buckets
  std::string Display() const { return scheme + "://" + host; }
};

// `option` names the option in error messages ("--endpoint").
Result<Endpoint> ParseEndpoint(std::string_view text, std::string_view option);

// Bucket-name check: OSS rules (3-63 of a-z 0-9 '-', not starting or ending with '-') for
// OSS; for S3 also '.', '_' and upper case, as S3-compatible servers accept them.
Status ValidateBucketName(std::string_view bucket, Protocol protocol);

}  // namespace ossmount::object
