// The --audit-log writer: one JSON line per opened file, written when it is released (or
// when the mount ends, for a file still open then).
//
//   {"time":"2024-05-01T12:00:03.250Z","event":"close","path":"train/cat/1.jpg",
//    "pid":4242,"uid":1000,"gid":1000,"bytes_read":51234,"size":51234,
//    "opened":"2024-05-01T12:00:03.241Z","duration_ms":9.137}
//
// event: "close", or "unmount" for a file still open when the mount ended (no release came;
// time is then the end of the mount). time: when the file was released (UTC); opened: when
// it was opened; bytes_read: bytes
// replied to reads through that handle (pages the kernel already cached are not asked
// again, so a re-read may show 0); duration_ms: open to release.
//
// Off the hot path: Record() only moves the record into a queue; a writer thread formats
// and appends the lines, flushing at least once a second and at Stop(). When more than
// kMaxQueued records wait, new ones are dropped and counted (reported in the log and in
// ossmount_audit_dropped_total). Reopen() (SIGHUP) makes the writer reopen the path, for
// logrotate. The file is opened with O_APPEND, mode 0600 (paths can be private).
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "fs/audit.h"
#include "ossmount/status.h"

namespace ossmount::daemon {

class AuditLog : public fs::AuditSink {
 public:
  static constexpr size_t kMaxQueued = 100000;

  // Opens (creates) the file and starts the writer thread.
  static Result<std::shared_ptr<AuditLog>> Open(const std::string& path);
  ~AuditLog() override;

  void Record(fs::AuditRecord record) override;
  void Reopen();
  // Writes everything queued, closes the file and ends the thread. Idempotent.
  void Stop();

  // One line (without the newline) for a record; exposed for tests.
  static std::string Format(const fs::AuditRecord& record,
                            std::chrono::system_clock::time_point closed);

 private:
  explicit AuditLog(std::string path, int fd);
  void Run();

  const std::string path_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<fs::AuditRecord, std::chrono::system_clock::time_point>> queue_;
  bool reopen_ = false;
  bool stop_ = false;
  int fd_;  // writer thread only (after construction)
  std::thread thread_;
};

}  // namespace ossmount::daemon
