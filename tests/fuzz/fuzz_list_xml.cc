// Fuzz target: ListObjectsV2 response bodies (object::ParseListObjectsV2), the XML the server
// sends for every directory listing.
//
// Invariants on a successful parse:
//   - the listing holds exactly the <Contents> and <CommonPrefixes> entries of the document
//     (counted independently with pugixml), each key being the <Key> text, url-decoded only
//     when the document says <EncodingType>url</EncodingType>;
//   - a truncated page always has a continuation token (else the caller would loop forever).
#include <pugixml.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/url.h"
#include "fuzz/fuzz_check.h"
#include "object/list_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view xml(reinterpret_cast<const char*>(data), size);
  auto parsed = ossmount::object::ParseListObjectsV2(xml);
  if (!parsed.ok()) {
    FUZZ_CHECK(!parsed.status().message().empty());
    return 0;
  }
  const auto& page = parsed->page;
  FUZZ_CHECK(!page.truncated || !page.next_continuation_token.empty());

  // Reparse with the parser's flags (whitespace-only keys kept, line ends untouched).
  pugi::xml_document doc;
  unsigned flags = (pugi::parse_default | pugi::parse_ws_pcdata) & ~pugi::parse_eol;
  FUZZ_CHECK(doc.load_buffer(data, size, flags));
  pugi::xml_node root = doc.child("ListBucketResult");
  FUZZ_CHECK(root);
  size_t contents = 0;
  for (pugi::xml_node c = root.child("Contents"); c; c = c.next_sibling("Contents")) {
    FUZZ_CHECK(contents < page.objects.size());
    std::string key = c.child_value("Key");
    if (parsed->url_encoded) {
      auto decoded = ossmount::PercentDecode(key, /*plus_as_space=*/true);
      FUZZ_CHECK(decoded.ok());
      key = *decoded;
    }
    FUZZ_CHECK(page.objects[contents].key == key);
    ++contents;
  }
  FUZZ_CHECK(contents == page.objects.size());
  size_t prefixes = 0;
  for (pugi::xml_node p = root.child("CommonPrefixes"); p; p = p.next_sibling("CommonPrefixes")) {
    std::string prefix = p.child_value("Prefix");
    if (parsed->url_encoded) prefix = ossmount::PercentDecode(prefix, true).value();
    if (prefix.empty()) continue;  // an empty <Prefix> is dropped by contract
    FUZZ_CHECK(prefixes < page.common_prefixes.size());
    FUZZ_CHECK(page.common_prefixes[prefixes] == prefix);
    ++prefixes;
  }
  FUZZ_CHECK(prefixes == page.common_prefixes.size());
  return 0;
}
