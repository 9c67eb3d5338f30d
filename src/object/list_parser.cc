#include "object/list_parser.h"

#include <charconv>
#include <pugixml.hpp>

#include "common/time_util.h"
#include "common/url.h"

namespace ossmount::object {
namespace {

Status Malformed(const std::string& what) {
  return Status(ErrorCode::kProtocol, "malformed ListObjectsV2 response: " + what);
}

Result<std::string> Decode(const char* text, bool url_encoded, const char* field) {
  if (!url_encoded) return std::string(text);
  auto decoded = PercentDecode(text, /*plus_as_space=*/true);
  if (!decoded.ok()) return Malformed(std::string("bad url encoding in ") + field);
  return decoded;
}

}  // namespace

Result<ParsedListPage> ParseListObjectsV2(std::string_view xml) {
  pugi::xml_document doc;
  // Keep whitespace-only text (a key of spaces) and raw line ends byte for byte.
  unsigned flags = (pugi::parse_default | pugi::parse_ws_pcdata) & ~pugi::parse_eol;
  pugi::xml_parse_result parsed = doc.load_buffer(xml.data(), xml.size(), flags);
  if (!parsed) return Malformed(std::string("XML error: ") + parsed.description());
  pugi::xml_node root = doc.child("ListBucketResult");
  if (!root) return Malformed("no ListBucketResult element");

  ParsedListPage out;
  std::string_view encoding = root.child_value("EncodingType");
  out.url_encoded = encoding == "url";
  std::string_view truncated = root.child_value("IsTruncated");
  out.page.truncated = truncated == "true" || truncated == "True" || truncated == "TRUE";
  if (pugi::xml_node count = root.child("KeyCount")) {
    std::string_view v = count.child_value();
    int n = 0;
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || ptr != v.data() + v.size()) return Malformed("bad KeyCount");
    out.key_count = n;
  }

  for (pugi::xml_node c : root.children("Contents")) {
    ObjectInfo info;
    auto key = Decode(c.child_value("Key"), out.url_encoded, "Key");
    if (!key.ok()) return key.status();
    info.key = std::move(key.value());
    if (info.key.empty()) return Malformed("a Contents entry has no Key");
    std::string_view size = c.child_value("Size");
    auto [ptr, ec] = std::from_chars(size.data(), size.data() + size.size(), info.size);
    if (size.empty() || ec != std::errc() || ptr != size.data() + size.size()) {
      return Malformed("bad Size for key '" + info.key + "'");
    }
    info.etag = c.child_value("ETag");
    std::string_view modified = c.child_value("LastModified");
    if (!modified.empty()) {
      auto t = ParseIso8601(modified);
      if (!t.ok()) return Malformed("bad LastModified for key '" + info.key + "'");
      info.mtime_sec = t.value();
    }
    info.storage_class = c.child_value("StorageClass");
    const std::string_view type = c.child_value("Type");
    info.symlink = type == "Symlink";
    info.appendable = type == "Appendable";
    out.page.objects.push_back(std::move(info));
  }
  for (pugi::xml_node p : root.children("CommonPrefixes")) {
    auto prefix = Decode(p.child_value("Prefix"), out.url_encoded, "CommonPrefixes/Prefix");
    if (!prefix.ok()) return prefix.status();
    if (!prefix.value().empty()) out.page.common_prefixes.push_back(std::move(prefix.value()));
  }
  if (out.page.truncated) {
    auto token =
        Decode(root.child_value("NextContinuationToken"), out.url_encoded, "NextContinuationToken");
    if (!token.ok()) return token.status();
    if (token.value().empty())
      return Malformed("IsTruncated is true but NextContinuationToken is missing");
    out.page.next_continuation_token = std::move(token.value());
  }
  return out;
}

}  // namespace ossmount::object
