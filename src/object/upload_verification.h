// Deciding what an unanswered write did. A write whose answer was lost (the connection cut
// after the server acted) is retried; the retry can then be refused for reasons the first
// attempt caused: a Complete answered NoSuchUpload (the first attempt completed it), a
// forbid-overwrite write answered "already exists" (the first attempt created it). The
// client then HEADs the key and compares the object there with the one it sent; these
// functions say what to compare and whether it matches. Never a guess: an object that
// cannot be told apart from another is reported as unknown.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "object/dialect.h"
#include "ossmount/object_client.h"
#include "ossmount/status.h"

namespace ossmount::object {

// What the object the client sent looks like to a HEAD.
struct ExpectedObject {
  uint64_t size = 0;
  std::optional<uint64_t> crc64;    // known when every piece's CRC-64 is
  std::optional<std::string> etag;  // S3 only: the ETag S3 computes for it (quoted)
};

// The object `parts` make: their total size, the CRC-64 combined from theirs (when every
// part has one), and on S3 the multipart ETag (when every part ETag is an MD5).
ExpectedObject ExpectedFromParts(const std::vector<PartInfo>& parts, const Dialect& dialect);

// The CRC-64 of the parts' concatenation, when every part has one.
std::optional<uint64_t> CombinedCrc64(const std::vector<PartInfo>& parts);

// OK when `found` is `expected`: the same size, and the same CRC-64 when both are known,
// else (S3) the same ETag. Otherwise kIntegrity, not retryable, whose message says the
// outcome is unknown and why (`what` names the write, e.g. "CompleteMultipartUpload of 'k'").
Status CheckFoundObject(const ObjectInfo& found, const ExpectedObject& expected,
                        const std::string& what);

}  // namespace ossmount::object
