// Tiny helpers to write the XML bodies OSS and S3 send (error bodies, listings, multipart
// results). Output only; request bodies are parsed with pugixml.
#pragma once

#include "common/xml_escape.h"

#include <string>
#include <string_view>

namespace ossmount::testserver {

using ossmount::XmlEscape;

// Appends "<name>escaped text</name>".
void AppendElement(std::string& out, std::string_view name, std::string_view text);

// base64url without padding, and its inverse (false on bad input).
std::string Base64UrlEncode(std::string_view data);
bool Base64UrlDecode(std::string_view text, std::string& out);

}  // namespace ossmount::testserver
