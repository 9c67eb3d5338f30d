// Hashing, MAC and encoding primitives the signers and verifiers need, on OpenSSL 3.
//
// Internal to src/auth. Pure functions; safe to call from any thread. Every result is a
// byte string (raw digest) unless the name says Hex or Base64.
#pragma once

#include <string>
#include <string_view>

namespace ossmount::auth::internal {

// Raw 20-byte HMAC-SHA1 of msg under key.
std::string HmacSha1(std::string_view key, std::string_view msg);
// Raw 32-byte HMAC-SHA256 of msg under key.
std::string HmacSha256(std::string_view key, std::string_view msg);
// Raw 32-byte SHA-256 of data.
std::string Sha256(std::string_view data);
// Lowercase hex of arbitrary bytes.
std::string HexEncode(std::string_view bytes);
// Equality that takes the same time wherever the first difference is (for signatures).
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace ossmount::auth::internal
