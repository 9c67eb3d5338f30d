// In-progress multipart uploads (parts held in memory until Complete or Abort).
//
// Complete follows OSS: parts listed in ascending order (InvalidPartOrder), each listed ETag
// must match the uploaded part (InvalidPart), every part except the last at least
// min_part_size bytes (EntityTooSmall). The result ETag is "<MD5 of the concatenated binary
// part MD5s>-<N>", its CRC-64 is combined from the part CRCs. A Complete that fails these
// checks leaves the upload open (the client may fix its list); one that passes removes it, so
// a retried Complete or UploadPart gets NoSuchUpload, as from OSS. Aborted uploads are
// forgotten too.
//
// Listing (ListMultipartUploads) orders uploads by key, then upload id, both in byte order,
// like S3: key-marker alone resumes after that key, key-marker with upload-id-marker after
// that upload of that key.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/time_util.h"
#include "object_store.h"
#include "ossmount/status.h"

namespace ossmount::testserver {

struct UploadedPart {
  std::string etag;  // uppercase hex MD5, unquoted
  uint64_t crc = 0;
  std::string data;
  SystemTime mtime;
};

struct CompletedUpload {
  std::vector<std::string> pieces;  // the parts' bytes, in order (moved out, never copied)
  std::string etag;
  uint64_t crc = 0;
  PutOptions options;
};

// One open upload as listed.
struct UploadSummary {
  std::string bucket, key, upload_id;
  SystemTime initiated;
  size_t parts = 0;
  uint64_t bytes = 0;  // sum of the part sizes
};

struct UploadListQuery {
  std::string prefix;
  std::string key_marker;
  std::string upload_id_marker;  // only with key_marker
  int max_uploads = 1000;
};

struct UploadListPage {
  std::vector<UploadSummary> uploads;
  bool truncated = false;
  std::string next_key_marker, next_upload_id_marker;  // set when truncated
};

struct PartSummary {
  int number = 0;
  std::string etag;  // unquoted
  uint64_t size = 0;
  uint64_t crc = 0;
  SystemTime mtime;
};

struct PartListPage {
  std::vector<PartSummary> parts;
  bool truncated = false;
  int next_marker = 0;  // the last listed part number (set when truncated)
};

// Failures carry the OSS error code in the message: NoSuchUpload, InvalidPart,
// InvalidPartOrder, EntityTooSmall, InvalidArgument.
class MultipartUploads {
 public:
  std::string Initiate(const std::string& bucket, const std::string& key, PutOptions options);
  // True while the upload is open (for checks before expensive work, e.g. a part copy).
  bool IsOpen(const std::string& upload_id, const std::string& bucket,
              const std::string& key) const;
  // Stores (or replaces) a part; returns its ETag and CRC-64. `known` digests of `data`
  // (computed while it arrived) are used instead of computing them again.
  Result<std::pair<std::string, uint64_t>> UploadPart(const std::string& upload_id,
                                                      const std::string& bucket,
                                                      const std::string& key, int part_number,
                                                      std::string data,
                                                      const KnownDigests& known = {});
  Result<CompletedUpload> Complete(const std::string& upload_id, const std::string& bucket,
                                   const std::string& key,
                                   const std::vector<std::pair<int, std::string>>& parts,
                                   uint64_t min_part_size);
  Status Abort(const std::string& upload_id, const std::string& bucket, const std::string& key);

  UploadListPage List(const std::string& bucket, const UploadListQuery& query) const;
  // Parts with numbers above `marker`, at most `max_parts`.
  Result<PartListPage> ListParts(const std::string& upload_id, const std::string& bucket,
                                 const std::string& key, int marker, int max_parts) const;
  // Every open upload of every bucket (control API), and how many there are.
  std::vector<UploadSummary> All() const;
  size_t open_count() const;

 private:
  struct Upload {
    std::string bucket, key;
    PutOptions options;
    SystemTime initiated;
    std::map<int, UploadedPart> parts;
  };
  static UploadSummary Summarize(const std::string& id, const Upload& u);

  mutable std::mutex mu_;
  uint64_t next_id_ = 1;                   // guarded by mu_
  std::map<std::string, Upload> uploads_;  // guarded by mu_
};

}  // namespace ossmount::testserver
