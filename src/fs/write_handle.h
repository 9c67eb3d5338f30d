// WriteHandle: one file opened for writing (WriteService). Its bytes reach the bucket
// through its FileWriter: streamed while they are written in order, or staged locally
// when the program writes out of order, reads back, truncates or changes an existing object.
// Close (from the opener's process) and fsync complete the object and answer with the
// result; the last release completes what nobody completed. A handle that may write owns its
// path from its open to its release: no other handle of the mount opens, renames or removes
// the path meanwhile (WriteService::OwnerOf).
//
// Thread-safety: the const fields are set before the handle is shared; the rest is guarded
// by mu or atomic.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fs/file_writer.h"
#include "fs/filesystem.h"
#include "meta/posix_attrs.h"

namespace ossmount::fs {

struct WriteHandle {
  InodeId ino = 0;
  Caller opener;
  // Writes are refused: an existing object opened for writing without O_TRUNC where no
  // staging directory can hold a copy. Such a handle owns nothing and leaves the object as
  // it is.
  bool may_write = true;
  // The object is (re)written at completion even if nothing was written: a new file, or
  // O_TRUNC. Otherwise a handle with no writes leaves the object as it was.
  bool replaces = true;
  // A name that did not exist before this handle created it.
  bool created = false;
  std::chrono::system_clock::time_point opened = std::chrono::system_clock::now();

  // The path (and its key) the handle writes; a rename of the open file changes them.
  std::string path() const {
    std::lock_guard lock(name_mu_);
    return path_;
  }
  std::string key() const {
    std::lock_guard lock(name_mu_);
    return key_;
  }
  void SetPath(std::string path, std::string key) {
    std::lock_guard lock(name_mu_);
    path_ = std::move(path);
    key_ = std::move(key);
  }
  // Null when !may_write. A streaming writer may be swapped for a staged one (SetWriter).
  std::shared_ptr<FileWriter> writer() const {
    std::lock_guard lock(name_mu_);
    return writer_;
  }
  // The writer with the number of completions the handle's writers before it made: a
  // writer numbers its completions from 1, the handle counts them all (recorded_completion).
  std::pair<std::shared_ptr<FileWriter>, uint64_t> numbered_writer() const {
    std::lock_guard lock(name_mu_);
    return {writer_, completions_before_};
  }
  // Swaps in `writer` (a streaming file moving to staging) after `completions_before` of
  // the handle's completions.
  void SetWriter(std::shared_ptr<FileWriter> writer, uint64_t completions_before = 0) {
    std::lock_guard lock(name_mu_);
    writer_ = std::move(writer);
    completions_before_ = completions_before;
  }

  // Orders the writes (and a writer's swap) of the handle and guards the fields below. Taken
  // before name_mu_ when both are.
  mutable std::mutex mu;
  // An existing object the staged copy starts from at its first change (FileWriter::StartFrom;
  // a file opened "r+" and closed unchanged costs nothing).
  std::optional<ObjectInfo> load_from;
  // The name was removed while the file was open (unlink): nothing is saved any more.
  bool discarded = false;
  // --posix-metadata: what chmod, chown and utime set on the open file, stored with the
  // object (a copy onto itself) after each completion.
  std::optional<meta::PosixAttrs> posix;
  // --posix-metadata: what the version being written starts from (the mode, owner and
  // extended attributes of the object it replaces or changes, else a new file's).
  std::optional<meta::PosixAttrs> posix_base;
  // Adds `change` to what is stored with the next completion. REQUIRES mu.
  void ChangePosixLocked(const meta::PosixAttrs& change) {
    posix = meta::MergePosix(posix.value_or(meta::PosixAttrs{}), change);
    posix_unsaved = true;
  }
  // posix_base with posix written over it: what the file shows now. REQUIRES mu.
  meta::PosixAttrs CurrentPosixLocked() const {
    return meta::MergePosix(posix_base.value_or(meta::PosixAttrs{}),
                            posix.value_or(meta::PosixAttrs{}));
  }
  bool posix_unsaved = false;  // set since the last time it was stored

  // The last completion whose outcome was recorded (metadata, audit, log), so that a flush
  // and a release answered by the same completion record it once; a failure is recorded
  // once (failed_recorded).
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

 private:
  mutable std::mutex name_mu_;  // a leaf lock: guards path_, key_ and writer_
  std::string path_;
  std::string key_;
  std::shared_ptr<FileWriter> writer_;
  uint64_t completions_before_ = 0;
};

}  // namespace ossmount::fs
