#include "object/upload_verification.h"

#include "common/crc64.h"
#include "common/strings.h"
#include "object/content_md5.h"

namespace ossmount::object {
namespace {

Status Unknown(const std::string& what, const std::string& why) {
  return Status(ErrorCode::kIntegrity,
                what + ": the answer was lost and the outcome of the upload is unknown: " + why,
                false);
}

}  // namespace

std::optional<uint64_t> CombinedCrc64(const std::vector<PartInfo>& parts) {
  uint64_t crc = 0;
  for (const PartInfo& part : parts) {
    if (!part.crc64) return std::nullopt;
    crc = Crc64Combine(crc, *part.crc64, part.size);
  }
  return crc;
}

ExpectedObject ExpectedFromParts(const std::vector<PartInfo>& parts, const Dialect& dialect) {
  ExpectedObject expected;
  for (const PartInfo& part : parts) expected.size += part.size;
  expected.crc64 = CombinedCrc64(parts);
  if (dialect.protocol == Protocol::kS3) {
    std::vector<std::string> etags;
    etags.reserve(parts.size());
    for (const PartInfo& part : parts) etags.push_back(part.etag);
    expected.etag = S3MultipartEtag(etags);
  }
  return expected;
}

Status CheckFoundObject(const ObjectInfo& found, const ExpectedObject& expected,
                        const std::string& what) {
  if (found.size != expected.size) {
    return Unknown(what, "the object now at '" + found.key + "' has " + std::to_string(found.size) +
                             " bytes, not the " + std::to_string(expected.size) + " sent");
  }
  if (expected.crc64 && found.crc64) {
    if (*expected.crc64 == *found.crc64) return Status::Ok();
    return Unknown(what, "the object now at '" + found.key + "' has CRC-64 " +
                             std::to_string(*found.crc64) + ", not the " +
                             std::to_string(*expected.crc64) + " of the bytes sent");
  }
  if (expected.etag) {
    if (EqualsIgnoreCase(*expected.etag, found.etag)) return Status::Ok();
    return Unknown(what, "the object now at '" + found.key + "' has ETag " + found.etag +
                             ", not the " + *expected.etag + " of the parts sent");
  }
  return Unknown(what, "the object now at '" + found.key +
                           "' has the right size, but neither a CRC-64 nor an ETag tells "
                           "whether it holds the bytes sent");
}

}  // namespace ossmount::object
