// MoveDirectoryOnServer: the server side of a directory rename. Object stores have no
// directories and no rename: every object under the source prefix is copied to the target
// prefix, and the sources are deleted only once every copy is complete.
//
// The rules that keep data safe:
//   - A copy never replaces an object: each is made with forbid-overwrite. A copy refused
//     because its target exists is this rename's own when the object there is the source's
//     (a retry after a lost answer), else another client's, which fails the rename.
//   - A rename that fails removes every copy it made, and every copy it may have made (a
//     copy whose answer was lost may exist): each failed copy's target is looked at, and
//     removed when it is the source's object. Each key that cannot be removed is logged.
//     The sources are untouched.
//   - Past `limit` objects it fails with kCrossDevice before copying anything (mv copies).
//
// Thread-safety: a free function; `done` runs once, on a client completion thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "ossmount/object_client.h"
#include "upload/upload_gate.h"
#include "upload/upload_journal.h"
#include "upload/upload_options.h"

namespace ossmount::fs {

struct DirectoryMove {
  std::string from_prefix;  // "a/b/" (with the mount prefix)
  std::string to_prefix;
  // The target directory's marker object exists (an empty directory is replaced): the source's
  // marker is not copied onto it.
  bool target_marker = false;
  size_t limit = 0;  // objects; more is kCrossDevice
  std::string what;  // "rename 'a' -> 'b'", for messages
};

void MoveDirectoryOnServer(std::shared_ptr<ObjectClient> client,
                           std::shared_ptr<upload::UploadGate> gate,
                           std::shared_ptr<upload::UploadJournal> journal,
                           const upload::UploadOptions& options, DirectoryMove move,
                           std::function<void(Status)> done);

// Deletes `keys` in batches of 1,000; a batch the server refuses is deleted key by key, and
// each key that could not be deleted is logged (`what` says why they were being deleted).
// `done` gets the first error.
void DeleteKeysLoggingFailures(std::shared_ptr<ObjectClient> client, std::vector<std::string> keys,
                               std::string what, std::function<void(Status)> done);

}  // namespace ossmount::fs
