// WriteHandle: one file opened for writing. Its bytes go up while they are written
// (upload::ObjectUpload); close (from the opener's process) and fsync complete the upload
// and answer with its result, and the last release completes what nobody completed. A handle
// that may write owns its path from its open to its release: no other handle of the mount
// opens, renames or removes the path meanwhile (ObjectFilesystem::OwnerOf).
//
// States: open -> writing -> completing -> done | failed, held by the upload; the first
// error sticks to the handle and every later call returns it.
//
// Thread-safety: the fields are set before the handle is shared and constant after, except
// next_offset (under mu, which also orders the appends) and the atomics.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "fs/filesystem.h"
#include "upload/object_upload.h"

namespace ossmount::fs {

struct WriteHandle {
  InodeId ino = 0;
  std::string path;
  std::string key;
  Caller opener;
  // Writes are refused: an existing object opened for writing without O_TRUNC (ossmount
  // writes whole objects; it cannot change one in place). Such a handle owns nothing: it is
  // not the writer of its path and leaves the object as it is.
  bool may_write = true;
  // The object is (re)written at completion even if nothing was written: a new file, or
  // O_TRUNC. Otherwise a handle with no writes leaves the object as it was.
  bool replaces = true;
  // A name that did not exist before this handle created it.
  bool created = false;
  std::shared_ptr<upload::ObjectUpload> upload;  // null when !may_write
  std::chrono::system_clock::time_point opened = std::chrono::system_clock::now();

  std::mutex mu;  // orders the appends; guards next_offset and reserved_size
  uint64_t next_offset = 0;
  // The size posix_fallocate(3) gave the file: bytes up to it that were not written are
  // zeros, added before each completion (ObjectFilesystem::Fallocate).
  uint64_t reserved_size = 0;
  // The last completion of the upload whose outcome was recorded (metadata, audit, log), so
  // that a flush and a release answered by the same completion record it once; a failure is
  // recorded once (failed_recorded).
  std::atomic<uint64_t> recorded_completion{0};
  std::atomic<bool> failed_recorded{false};
  // Its opener closed a descriptor of it (a flush) and wrote nothing since: its release is
  // on its way, so an operation that meets it waits for that release (RetryWhileBusy)
  // instead of failing at once.
  std::atomic<bool> closing{false};
  // The kernel released it: its completion is under way or done.
  std::atomic<bool> releasing{false};
  // Released (or the session ended) and completed: the handle no longer answers for its path.
  std::atomic<bool> released{false};
};

}  // namespace ossmount::fs
