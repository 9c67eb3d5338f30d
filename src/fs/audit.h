// The audit hook: one record per opened file, handed over when the file is released (a
// written file: when its upload ended), or,
// for a file still open when the mount ends (the kernel drops releases still queued then,
// and a process may hold a file open across the unmount), at SessionHooks::EndSession.
//
// The filesystem fills a record (path, who opened it, when, bytes read through the handle,
// how long it was open) and calls AuditSink::Record from the thread that handles the
// release. A sink must not block there: it queues and writes elsewhere (the daemon's
// --audit-log writer buffers and flushes on a timer; see daemon/audit_log.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "fs/filesystem.h"

namespace ossmount::fs {

struct AuditRecord {
  std::string path;  // relative to the mount point, no leading '/'
  Caller caller;     // who opened it (zero when unknown)
  std::chrono::system_clock::time_point opened;
  std::chrono::nanoseconds duration{0};  // open to release
  uint64_t bytes_read = 0;               // bytes replied to reads through this handle
  uint64_t size = 0;                     // the object's size at open
  bool at_unmount = false;               // the mount ended with the file open: no release came
  // A file written through the mount: recorded once its upload ended (completed or failed).
  bool write = false;
  uint64_t bytes_written = 0;
  std::string result;  // "ok", or the error's ErrorCodeName
};

class AuditSink {
 public:
  virtual ~AuditSink() = default;
  // Thread-safe, non-blocking.
  virtual void Record(AuditRecord record) = 0;
};

}  // namespace ossmount::fs
