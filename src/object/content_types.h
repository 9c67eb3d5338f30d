// ContentTypeFor: the Content-Type an uploaded object gets from its name's extension, as ossfs
// and s3fs set it, so that objects served over HTTP or a CDN keep working. The table is the
// system's (/etc/mime.types, Debian's media-types), read once; a name with no extension, or
// one the table does not know, gets application/octet-stream, and so does PyTorch's ".pt"
// (which the table gives to another format). A directory marker ("dir/") is
// application/x-directory, as ossfs and s3fs write theirs.
//
// Thread-safety: thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

namespace ossmount::object {

inline constexpr const char* kDefaultContentType = "application/octet-stream";

// Extension (lowercase, without the dot) to type, from a mime.types file's text: lines of
// "type ext1 ext2 ...", '#' comments. The first type given an extension keeps it.
std::unordered_map<std::string, std::string> ParseMimeTypes(std::string_view text);

// The type for object key `key` (its last component's extension, matched case-insensitively).
std::string ContentTypeFor(std::string_view key);

}  // namespace ossmount::object
