// In-progress multipart uploads (parts held in memory until Complete or Abort).
//
// Complete follows OSS: parts listed in ascending order, each listed ETag must match the
// uploaded part, every part except the last at least min_part_size bytes (EntityTooSmall).
// The result ETag is "<MD5 of the concatenated binary part MD5s>-<N>", its CRC-64 is
// combined from the part CRCs.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "object_store.h"
#include "ossmount/status.h"

namespace ossmount::testserver {

struct UploadedPart {
  std::string etag;  // uppercase hex MD5, unquoted
  uint64_t crc = 0;
  std::string data;
};

struct CompletedUpload {
  std::string data;
  std::string etag;
  uint64_t crc = 0;
  PutOptions options;
};

// Failures carry the OSS error code in the message: NoSuchUpload, InvalidPart,
// InvalidPartOrder, EntityTooSmall, InvalidArgument.
class MultipartUploads {
 public:
  std::string Initiate(const std::string& bucket, const std::string& key, PutOptions options);
  Result<std::pair<std::string, uint64_t>> UploadPart(const std::string& upload_id,
                                                      const std::string& bucket,
                                                      const std::string& key, int part_number,
                                                      std::string data);
  Result<CompletedUpload> Complete(const std::string& upload_id, const std::string& bucket,
                                   const std::string& key,
                                   const std::vector<std::pair<int, std::string>>& parts,
                                   uint64_t min_part_size);
  Status Abort(const std::string& upload_id, const std::string& bucket, const std::string& key);

 private:
  struct Upload {
    std::string bucket, key;
    PutOptions options;
    std::map<int, UploadedPart> parts;
  };
  std::mutex mu_;
  uint64_t next_id_ = 1;
  std::map<std::string, Upload> uploads_;  // guarded by mu_
};

}  // namespace ossmount::testserver
