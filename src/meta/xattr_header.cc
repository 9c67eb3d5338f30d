#include "meta/xattr_header.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "common/base64.h"
#include "common/bounded_json.h"
#include "common/url.h"

namespace ossmount::meta {

std::string EncodeXattrHeader(const Xattrs& xattrs) {
  rapidjson::StringBuffer text;
  rapidjson::Writer<rapidjson::StringBuffer> writer(text);
  writer.StartObject();
  for (const auto& [name, value] : xattrs) {
    writer.Key(name.data(), static_cast<rapidjson::SizeType>(name.size()));
    const std::string encoded = Base64Encode(value);
    writer.String(encoded.data(), static_cast<rapidjson::SizeType>(encoded.size()));
  }
  writer.EndObject();
  return PercentEncode(std::string_view(text.GetString(), text.GetSize()));
}

std::optional<Xattrs> DecodeXattrHeader(std::string_view header) {
  Result<std::string> text = PercentDecode(header);
  if (!text.ok()) return std::nullopt;
  // User metadata is at most a few KiB on either service; the bound only keeps a hostile
  // header from costing more.
  rapidjson::Document doc;
  if (!ParseBoundedJson(*text, JsonLimits{.max_bytes = 64 << 10}, &doc).ok() || !doc.IsObject()) {
    return std::nullopt;
  }
  Xattrs out;
  for (const auto& member : doc.GetObject()) {
    if (!member.value.IsString()) return std::nullopt;
    std::optional<std::string> value =
        Base64Decode(std::string_view(member.value.GetString(), member.value.GetStringLength()));
    if (!value) return std::nullopt;
    out.emplace(std::string(member.name.GetString(), member.name.GetStringLength()),
                std::move(*value));
  }
  return out;
}

}  // namespace ossmount::meta
