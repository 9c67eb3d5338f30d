#include "audit_log.h"

#include <fcntl.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>

#include "common/metrics.h"
#include "common/write_all.h"

namespace ossmount::daemon {
namespace {

constexpr auto kFlushInterval = std::chrono::seconds(1);

int OpenFile(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

std::string IsoTime(std::chrono::system_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof(buf) - n, ".%03dZ", static_cast<int>(ms % 1000));
  return buf;
}

metrics::Counter& Dropped() {
  static metrics::Counter& c = metrics::Registry::Global().GetCounter(
      "ossmount_audit_dropped_total", "Audit records dropped because the writer fell behind.");
  return c;
}

}  // namespace

Result<std::shared_ptr<AuditLog>> AuditLog::Open(const std::string& path) {
  int fd = OpenFile(path);
  if (fd < 0) {
    return Status(ErrorCode::kInvalidArgument,
                  "--audit-log '" + path + "' cannot be opened: " + std::strerror(errno));
  }
  return std::shared_ptr<AuditLog>(new AuditLog(path, fd));
}

AuditLog::AuditLog(std::string path, int fd) : path_(std::move(path)), fd_(fd) {
  thread_ = std::thread([this] { Run(); });
}

AuditLog::~AuditLog() { Stop(); }

void AuditLog::Record(fs::AuditRecord record) {
  auto closed = std::chrono::system_clock::now();
  {
    std::lock_guard lock(mu_);
    if (stop_ || queue_.size() >= kMaxQueued) {
      Dropped().Add();
      return;
    }
    queue_.emplace_back(std::move(record), closed);
  }
  // No notify: the writer wakes on its timer, so a busy epoch costs no wake-up per close.
}

void AuditLog::Reopen() {
  {
    std::lock_guard lock(mu_);
    reopen_ = true;
  }
  cv_.notify_one();
}

void AuditLog::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void AuditLog::Run() {
  std::deque<std::pair<fs::AuditRecord, std::chrono::system_clock::time_point>> batch;
  std::string text;
  bool stopping = false;
  while (!stopping) {
    bool reopen = false;
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, kFlushInterval, [this] { return stop_ || reopen_; });
      batch.swap(queue_);
      reopen = reopen_;
      reopen_ = false;
      stopping = stop_;
    }
    text.clear();
    for (const auto& [record, closed] : batch) {
      text += Format(record, closed);
      text.push_back('\n');
    }
    batch.clear();
    // Lines queued before the reopen belong to the old file (logrotate has moved it).
    if (!text.empty() && fd_ >= 0 && !WriteAll(fd_, text)) {
      spdlog::warn("audit log: write failed: {}", std::strerror(errno));
    }
    if (reopen) {
      int fd = OpenFile(path_);
      if (fd < 0) {
        spdlog::warn("audit log: cannot reopen {}: {}; keeping the old file", path_,
                     std::strerror(errno));
      } else {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
      }
    }
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string AuditLog::Format(const fs::AuditRecord& r,
                             std::chrono::system_clock::time_point closed) {
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> w(out);
  w.StartObject();
  std::string time = IsoTime(closed);
  w.Key("time");
  w.String(time.c_str());
  w.Key("event");
  w.String(r.write ? "write" : r.at_unmount ? "unmount" : "close");
  w.Key("path");
  w.String(r.path.data(), static_cast<rapidjson::SizeType>(r.path.size()));
  w.Key("pid");
  w.Uint(r.caller.pid);
  w.Key("uid");
  w.Uint(r.caller.uid);
  w.Key("gid");
  w.Uint(r.caller.gid);
  if (r.write) {
    w.Key("bytes_written");
    w.Uint64(r.bytes_written);
    w.Key("result");
    w.String(r.result.c_str());
  } else {
    w.Key("bytes_read");
    w.Uint64(r.bytes_read);
  }
  w.Key("size");
  w.Uint64(r.size);
  std::string opened = IsoTime(r.opened);
  w.Key("opened");
  w.String(opened.c_str());
  w.Key("duration_ms");
  w.Double(std::round(static_cast<double>(r.duration.count()) / 1e3) / 1e3);
  w.EndObject();
  return out.GetString();
}

}  // namespace ossmount::daemon
