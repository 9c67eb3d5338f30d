// Malformed responses for fault injection (--malformed KIND,... --malformed-rate P): what a
// broken proxy, a captive portal or a buggy server sends. Each kind rewrites one successful
// response; kinds that do not fit the response (XML kinds on an object body, wrong-crc
// without a CRC header) leave it alone and are not counted.
//
//   invalid-xml           an XML body (listing) replaced by unparsable XML
//   truncated-xml         an XML body cut in half (Content-Length matches the cut body)
//   huge-xml              an XML body with a 50 MiB comment inside (valid, absurdly large)
//   html-200              any body replaced by an HTML error page with status 200, and the
//                         object headers (ETag, CRC, Content-Range, Last-Modified) dropped
//   short-content-length  Content-Length declares fewer bytes than are sent, then close
//   long-content-length   Content-Length declares 1,000 more bytes than are sent, then close
//   missing-headers       no ETag, Last-Modified, CRC-64 or Content-Length (the body ends at
//                         connection close)
//   wrong-crc             x-oss-hash-crc64ecma is off by one; the bytes are right
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "response.h"

namespace ossmount::testserver {

bool IsMalformedKind(std::string_view kind);
std::string MalformedKindList();  // "invalid-xml truncated-xml ..."

// Rewrites `resp` (a 2xx response) as `kind` says; false when the kind does not apply.
bool ApplyMalformed(std::string_view kind, Response& resp);

}  // namespace ossmount::testserver
