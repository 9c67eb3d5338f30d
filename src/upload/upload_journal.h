// UploadJournal: the record of the multipart uploads this daemon started and has not yet
// completed or aborted, one small file per upload, so that the uploads a crash leaves open
// are aborted by the next mount of the same bucket and prefix (AbortLeftovers), and only
// those: never another machine's, and never another live daemon's.
//
// Layout: a directory per mounted endpoint, bucket and prefix (DirectoryFor), shared by every
// daemon that mounts that source on this machine with the same --upload-journal. In it each
// daemon has a session directory of its own, "session-<pid>-<random>", holding its records
// and a file "lock" it holds an exclusive flock(2) on for as long as the journal lives. The
// kernel drops that lock when the daemon exits, however it exits (kill -9 and OOM included),
// so a session whose lock can be taken is one whose owner is gone: its uploads are
// leftovers. A session is created under a hidden name and renamed into place once locked, so
// no one ever sees it unlocked. Records an older version of ossmount wrote straight into the
// directory have no owner to ask and are leftovers too.
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

#include "common/unique_fd.h"
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

  // Opens (creating it, mode 0700) the journal directory `dir` and starts this journal's
  // session in it.
  static Result<std::shared_ptr<UploadJournal>> Open(const std::string& dir);
  // The directory of the journal of one mount source under `base`: one subdirectory per
  // endpoint, bucket and prefix, so mounts of different prefixes never touch each other's.
  static std::string DirectoryFor(const std::string& base, const std::string& endpoint,
                                  const std::string& bucket, const std::string& prefix);

  // Records an upload before its first part is sent. An error means the upload must not go
  // on (a crash would leave it where no remount looks).
  Status Add(const std::string& key, const std::string& upload_id);
  // Forgets an upload that was completed or aborted.
  void Remove(const std::string& upload_id);
  // This session's records.
  std::vector<Record> Records() const;

  // Aborts every upload recorded by a session whose owner is gone (and by an older version of
  // ossmount), and removes each record whose abort succeeded, and each such session once it
  // holds none. Live sessions, this one included, are left alone. `done` gets the number
  // aborted and the first error.
  void AbortLeftovers(std::shared_ptr<ObjectClient> client,
                      std::function<void(size_t aborted, Status first_error)> done);

  const std::string& dir() const { return dir_; }
  const std::string& session_dir() const { return session_dir_; }

 private:
  UploadJournal(std::string dir, std::string session_dir, UniqueFd lock)
      : dir_(std::move(dir)), session_dir_(std::move(session_dir)), lock_(std::move(lock)) {}
  std::string FileFor(const std::string& upload_id) const;

  const std::string dir_;
  const std::string session_dir_;
  const UniqueFd lock_;  // holds the session's flock
};

}  // namespace ossmount::upload
