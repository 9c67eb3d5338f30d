// Standard Base64 (RFC 4648, '=' padding, no line breaks), on OpenSSL.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ossmount {

std::string Base64Encode(std::string_view bytes);
// The bytes `text` encodes; nullopt when it is not Base64 (a wrong length or character).
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace ossmount
