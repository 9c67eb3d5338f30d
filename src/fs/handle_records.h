// HandleRecords: the handles a mount's kernel holds (open files and directories), kept in a
// RecordLog so that the next daemon process on the same FUSE connection can serve them
// (ObjectFilesystem::RestoreSession). Each handle is recorded before its number is handed to
// the kernel, and erased at its release.
//
// Thread-safety: thread-safe; mu_ is a leaf lock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/record_log.h"
#include "fs/filesystem.h"

namespace ossmount::fs {

struct HandleRecord {
  enum class Kind : uint64_t {
    kRead = 1,       // a file open for reading, pinned to the version below
    kDirectory = 2,  // an open directory
    kWrite = 3,      // a file open for writing (or a reader of one): its bytes died with the
                     // process that held them
  };
  Kind kind = Kind::kRead;
  InodeId ino = 0;
  std::string path;
  // kRead: the version pinned at open.
  std::string etag;
  uint64_t size = 0;
  int64_t mtime_sec = 0;
  std::optional<uint64_t> crc64;
  bool appendable = false;

  // A handle of `kind` with no version (a directory, a file open for writing).
  static HandleRecord Of(Kind kind, InodeId ino, std::string path) {
    HandleRecord r;
    r.kind = kind;
    r.ino = ino;
    r.path = std::move(path);
    return r;
  }

  std::string Encode() const;
  static std::optional<HandleRecord> Decode(std::string_view payload);
};

class HandleRecords {
 public:
  // `live`: the records `log` holds already (an earlier process's, restored).
  explicit HandleRecords(std::unique_ptr<RecordLog> log, RecordLog::Records live = {})
      : log_(std::move(log)), live_(live.begin(), live.end()) {}

  void Opened(uint64_t fh, const HandleRecord& record);
  void Released(uint64_t fh);
  // The first error writing the log.
  Status error() const;

  // The handles of `records` (RecordLog::Load), by number; records that cannot be read are
  // left out.
  static std::map<uint64_t, HandleRecord> Decode(const RecordLog::Records& records);

 private:
  mutable std::mutex mu_;  // guards log_ and live_
  std::unique_ptr<RecordLog> log_;
  std::unordered_map<uint64_t, std::string> live_;  // what a rewrite writes
};

}  // namespace ossmount::fs
