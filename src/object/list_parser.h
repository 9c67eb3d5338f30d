// Parsing a ListObjectsV2 response body with pugixml.
//
// Keys, prefixes and the continuation token are url-decoded ('+' is a space, %XX a byte)
// only when the response says <EncodingType>url</EncodingType>: a server that ignores
// encoding-type=url (s3rver does) sends raw keys, which must not be decoded a second time.
// Limits: the client hands it at most 16 MiB (a bigger LIST reply is refused as kProtocol
// before it is all in memory, object_client_impl.cc); pugixml parses without recursion, so
// any nesting depth costs heap, not stack. Pure function; thread-safe.
#pragma once

#include <string_view>

#include "ossmount/object_client.h"
#include "ossmount/status.h"

namespace ossmount::object {

struct ParsedListPage {
  ListPage page;
  int key_count = -1;  // <KeyCount>, -1 when absent
  bool url_encoded = false;
};

// kProtocol for malformed XML, a root other than ListBucketResult, a non-numeric Size, an
// undecodable escape, or IsTruncated=true without a NextContinuationToken (which would
// otherwise make the caller loop on the first page forever).
Result<ParsedListPage> ParseListObjectsV2(std::string_view xml);

}  // namespace ossmount::object
