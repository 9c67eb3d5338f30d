// Percent-encoding as OSS, S3 and RFC 3986 use it.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ossmount/status.h"

namespace ossmount {

// Encodes every byte outside the unreserved set A-Z a-z 0-9 - _ . ~ as %XX (uppercase hex),
// byte-wise over UTF-8. With keep_slash, '/' is left as is (object keys in URL paths).
std::string PercentEncode(std::string_view in, bool keep_slash = false);

// "a=1&b&c=x%2Fy": names and values percent-encoded, in the given order, a bare name for an
// empty value (the form OSS URLs and OSS V4 use; AWS SigV4 canonicalisation differs).
std::string EncodeQueryString(const std::vector<std::pair<std::string, std::string>>& params);

// Decodes %XX escapes (either hex case). With plus_as_space, '+' becomes ' ' (form
// encoding); otherwise '+' is kept. A '%' not followed by two hex digits is an error.
Result<std::string> PercentDecode(std::string_view in, bool plus_as_space = false);

}  // namespace ossmount
