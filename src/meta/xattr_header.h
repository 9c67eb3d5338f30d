// The "xattr" user metadata in which s3fs and ossfs keep a file's extended attributes: a JSON
// object of name to Base64 value, percent-encoded ({"user.origin":"aW1hZ2VuZXQ="} becomes
// %7B%22user.origin%22%3A%22aW1hZ2VuZXQ%3D%22%7D), so that each of them and ossmount read
// what the others wrote.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ossmount::meta {

using Xattrs = std::map<std::string, std::string>;

std::string EncodeXattrHeader(const Xattrs& xattrs);
// nullopt when the text is not such an object (values that are not Base64 included).
std::optional<Xattrs> DecodeXattrHeader(std::string_view header);

}  // namespace ossmount::meta
