// Percent-encoding as OSS, S3 and RFC 3986 use it.
#pragma once

#include <string>
#include <string_view>

#include "ossmount/status.h"

namespace ossmount {

// Encodes every byte outside the unreserved set A-Z a-z 0-9 - _ . ~ as %XX (uppercase hex),
// byte-wise over UTF-8. With keep_slash, '/' is left as is (object keys in URL paths).
std::string PercentEncode(std::string_view in, bool keep_slash = false);

// Decodes %XX escapes (either hex case). With plus_as_space, '+' becomes ' ' (form
// encoding); otherwise '+' is kept. A '%' not followed by two hex digits is an error.
Result<std::string> PercentDecode(std::string_view in, bool plus_as_space = false);

}  // namespace ossmount
