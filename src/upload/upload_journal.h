// UploadJournal: the record of the multipart uploads this mount started and has not yet
// completed or aborted, one small file per upload in a directory of its own for the mounted
// bucket and prefix. A daemon killed mid-write leaves its records behind; the next mount of
// the same bucket and prefix aborts those uploads (AbortLeftovers) and only those, never
// another machine's.
//
// A record holds the key and the upload id, written with fsync before the first part is
// sent, and is removed once the upload is completed or aborted.
//
// Thread-safety: thread-safe (each record is its own file).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ossmount/object_client.h"
#include "ossmount/status.h"

namespace ossmount::upload {

class UploadJournal {
 public:
  struct Record {
    std::string key;
    std::string upload_id;
    std::string file;  // the record's path
  };

  // Opens (creating it, mode 0700) the journal directory `dir`.
  static Result<std::shared_ptr<UploadJournal>> Open(const std::string& dir);
  // The directory of the journal of one mount source under `base`: one subdirectory per
  // endpoint, bucket and prefix, so mounts of different prefixes never touch each other's.
  static std::string DirectoryFor(const std::string& base, const std::string& endpoint,
                                  const std::string& bucket, const std::string& prefix);

  // Records an upload before its first part is sent. An error is logged by the caller; the
  // upload goes on (the bucket's lifecycle rule is the last resort).
  Status Add(const std::string& key, const std::string& upload_id);
  // Forgets an upload that was completed or aborted.
  void Remove(const std::string& upload_id);
  // The records left by earlier runs (and by this one so far).
  std::vector<Record> Records() const;

  // Aborts every recorded upload and removes each record whose abort succeeded. `done` gets
  // the number aborted and the first error.
  void AbortLeftovers(std::shared_ptr<ObjectClient> client,
                      std::function<void(size_t aborted, Status first_error)> done);

  const std::string& dir() const { return dir_; }

 private:
  explicit UploadJournal(std::string dir) : dir_(std::move(dir)) {}
  std::string FileFor(const std::string& upload_id) const;

  const std::string dir_;
};

}  // namespace ossmount::upload
