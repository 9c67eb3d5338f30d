// MD5 for the wire: the Content-MD5 header (base64 of the binary digest) that S3 checks on
// every upload body and both services require on DeleteMultipleObjects, and the S3 multipart
// ETag (hex MD5 of the concatenated binary part MD5s, then "-<part count>").
//
// MD5 here is an integrity check against transmission errors, not a security measure.
// Pure functions on OpenSSL; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ossmount::object {

// The raw 16-byte MD5 of data.
std::string Md5(std::string_view data);
// Base64 (with padding) of the MD5 of data: the Content-MD5 header value.
std::string ContentMd5(std::string_view data);
// Lowercase hex of bytes.
std::string HexLower(std::string_view bytes);

// The ETag S3 gives the object completed from parts with these ETags (each the quoted or
// bare hex MD5 of its part): "\"<hex md5 of the concatenated part digests>-<count>\"".
// nullopt when a part ETag is not a 32-digit hex MD5 (SSE-KMS and some S3-compatible
// servers use other ETags), so there is nothing to compare.
std::optional<std::string> S3MultipartEtag(const std::vector<std::string>& part_etags);

}  // namespace ossmount::object
