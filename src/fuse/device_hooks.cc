#include "fuse/device_hooks.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/unique_fd.h"
#include "common/write_all.h"

#include "fuse/fuse_ops.h"
#include "fuse/fuse_wire.h"
#include "fuse/passthrough.h"
#include "fuse/uring_transport.h"

namespace ossmount::fuse {
namespace {

using namespace wire;

DeviceHooks* Self(void* userdata) { return static_cast<AdapterContext*>(userdata)->device_hooks; }

ssize_t ReadHook(int fd, void* buf, size_t len, void* userdata) {
  DeviceHooks* self = Self(userdata);
  ssize_t n = static_cast<ssize_t>(self->TakeReplayedInit(static_cast<char*>(buf), len));
  if (n == 0) n = ::read(fd, buf, len);
  if (n > 0) self->OnRequestRead(static_cast<const char*>(buf), static_cast<size_t>(n));
  return n;
}

ssize_t WritevHook(int fd, struct iovec* iov, int count, void* userdata) {
  DeviceHooks* self = Self(userdata);
  if (self->OnReplyWrite(iov, count)) {
    ssize_t total = 0;
    for (int i = 0; i < count; ++i) total += static_cast<ssize_t>(iov[i].iov_len);
    return total;
  }
  ssize_t n = ::writev(fd, iov, count);
  int saved = errno;
  self->OnReplyWritten(n >= 0);
  errno = saved;
  return n;
}

}  // namespace

bool DeviceHooks::Install(fuse_session* se) {
  session_ = se;
  dev_fd_ = fuse_session_fd(se);
  if (passthrough_ != nullptr) passthrough_->set_device_fd(dev_fd_);
  fuse_custom_io io{};
  io.read = ReadHook;
  io.writev = WritevHook;
  if (int rc = fuse_session_custom_io(se, &io, dev_fd_); rc != 0) {
    const std::string why = std::string("libfuse refused the I/O hooks: ") + std::strerror(-rc);
    spdlog::warn("{}; lookups in one directory run one at a time", why);
    if (passthrough_ != nullptr) passthrough_->TurnOff(why);
    return false;
  }
  return true;
}

Status DeviceHooks::LoadInit() {
  if (!replay_.resume) return Status::Ok();
  std::ifstream in(replay_.record, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  saved_init_ = bytes.str();
  if (!in || saved_init_.size() < kInitInFlags2 + 4 ||
      LoadU32(saved_init_.data() + 4) != kOpcodeInit ||
      LoadU32(saved_init_.data()) != saved_init_.size()) {
    return Status(ErrorCode::kNotFound, "no INIT request recorded in " + replay_.record +
                                            " to resume the FUSE connection with");
  }
  return Status::Ok();
}

size_t DeviceHooks::TakeReplayedInit(char* buf, size_t size) {
  if (!replay_.resume || init_replayed_.load(std::memory_order_acquire)) return 0;
  if (init_replayed_.exchange(true) || size < saved_init_.size()) return 0;
  std::memcpy(buf, saved_init_.data(), saved_init_.size());
  spdlog::info("FUSE: resuming the connection with the INIT recorded by the process before");
  return saved_init_.size();
}

void DeviceHooks::RecordInit(const char* buf, size_t size) {
  if (replay_.record.empty() || replay_.resume) return;
  // Whole or not at all: a process killed mid-write must not leave half an INIT.
  const std::string next = replay_.record + ".new";
  UniqueFd fd(::open(next.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd || !WriteAll(fd.get(), std::string_view(buf, size)) ||
      ::rename(next.c_str(), replay_.record.c_str()) != 0) {
    spdlog::error(
        "cannot record the FUSE INIT in {} ({}): a restarted daemon could not resume "
        "this connection",
        replay_.record, std::strerror(errno));
  }
}

void DeviceHooks::SendResend() {
  char header[kOutHeaderSize] = {};
  StoreU32(header, kOutHeaderSize);
  std::memcpy(header + 4, &kNotifyResend, sizeof(kNotifyResend));
  if (::write(dev_fd_, header, sizeof(header)) == static_cast<ssize_t>(sizeof(header))) {
    resend_sent_.store(true, std::memory_order_release);
    spdlog::info("FUSE: asked the kernel to resend the requests the process before left");
  } else {
    spdlog::warn(
        "FUSE: the kernel refused to resend unanswered requests ({}; Linux 6.9 has "
        "FUSE_NOTIFY_RESEND): their callers wait until the connection ends",
        std::strerror(errno));
  }
}

void DeviceHooks::OnRequestRead(const char* buf, size_t size) {
  if (init_seen_.load(std::memory_order_acquire)) return;
  if (size < kInitInFlags2 + 4 || LoadU32(buf + 4) != kOpcodeInit) return;
  RecordInit(buf, size);
  std::memcpy(&init_unique_, buf + 8, sizeof(init_unique_));
  const uint32_t flags = LoadU32(buf + kInitInFlags);
  const uint32_t flags2 = LoadU32(buf + kInitInFlags2);
  parallel_dirops_offered_ = (flags & kParallelDirops) != 0;
  if (passthrough_ != nullptr) passthrough_->NoteInitRequest(flags, flags2);
  if (uring_ != nullptr) uring_->NoteInitRequest(flags, flags2);
  init_seen_.store(true, std::memory_order_release);
}

bool DeviceHooks::OnReplyWrite(::iovec* iov, int count) {
  if (init_delivered_.load(std::memory_order_acquire)) {
    return uring_ != nullptr && uring_->TryReply(iov, count);
  }
  if (!init_seen_.load(std::memory_order_acquire) ||
      init_replied_.load(std::memory_order_relaxed) || count < 2 || iov[0].iov_len < 16) {
    return false;
  }
  uint64_t unique;
  int32_t error;
  std::memcpy(&error, static_cast<char*>(iov[0].iov_base) + 4, sizeof(error));
  std::memcpy(&unique, static_cast<char*>(iov[0].iov_base) + 8, sizeof(unique));
  if (unique != init_unique_) return false;
  init_replied_.store(true, std::memory_order_relaxed);
  if (error != 0) return false;  // the connection fails anyway
  char* out = static_cast<char*>(iov[1].iov_base);
  const size_t size = iov[1].iov_len;
  if (parallel_dirops_offered_ && size >= kInitOutFlags + 4) {
    const uint32_t flags = LoadU32(out + kInitOutFlags) | kParallelDirops;
    std::memcpy(out + kInitOutFlags, &flags, sizeof(flags));
    spdlog::info("FUSE: lookups and readdirs in one directory run in parallel");
  }
  if (passthrough_ != nullptr) passthrough_->AmendInitReply(out, size);
  if (uring_ != nullptr) uring_->AmendInitReply(out, size);
  if (!replay_.resume) return false;
  // The kernel had the first process's reply: this one only sets up what it agreed to.
  if (passthrough_ != nullptr) passthrough_->OnInitReplyWritten(true);
  InitDelivered();
  SendResend();
  return true;
}

void DeviceHooks::OnReplyWritten(bool delivered) {
  // Only the INIT reply matters: what it turned on starts once it reached the kernel.
  if (!init_replied_.load(std::memory_order_relaxed) ||
      init_delivered_.load(std::memory_order_relaxed)) {
    return;
  }
  if (passthrough_ != nullptr) passthrough_->OnInitReplyWritten(delivered);
  if (delivered) InitDelivered();
}

void DeviceHooks::InitDelivered() {
  // Every later reply is offered to the rings first, before they can carry a request.
  init_delivered_.store(true, std::memory_order_release);
  if (uring_ != nullptr) uring_->Start(session_, dev_fd_);
}

}  // namespace ossmount::fuse
