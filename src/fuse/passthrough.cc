#include "fuse/passthrough.h"

#include <linux/ioctl.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/metrics.h"
#include "fuse/fuse_wire.h"

namespace ossmount::fuse {
namespace {

using namespace wire;

// From the kernel's include/uapi/linux/fuse.h (7.40), which Debian 12's headers predate.
struct BackingMap {  // struct fuse_backing_map
  int32_t fd;
  uint32_t flags;
  uint64_t padding;
};
constexpr unsigned long kBackingOpen = _IOW(229, 1, BackingMap);  // FUSE_DEV_IOC_BACKING_OPEN
constexpr unsigned long kBackingClose = _IOW(229, 2, uint32_t);   // FUSE_DEV_IOC_BACKING_CLOSE

metrics::Counter& PassthroughOpens() {
  static metrics::Counter& c = metrics::Registry::Global().GetCounter(
      "ossmount_passthrough_opens_total",
      "Opens answered with FUSE passthrough: the kernel reads the verified disk-cache file "
      "itself, so those bytes are not in ossmount_read_bytes_total.");
  return c;
}

}  // namespace

void Passthrough::NoteInitRequest(uint32_t flags, uint32_t flags2) {
  offered_ = (flags & kInitExt) && (flags2 & kPassthroughFlags2);
}

void Passthrough::AmendInitReply(char* out, size_t size) {
  if (!wanted_) {
    spdlog::info("FUSE passthrough off: {}", off_reason());
    return;
  }
  if (!offered_) {
    TurnOff(
        "this kernel does not offer FUSE passthrough (Linux 6.9+ with "
        "CONFIG_FUSE_PASSTHROUGH)");
    return;
  }
  if (size < kInitOutMaxStackDepth + 4 || !(LoadU32(out + kInitOutFlags) & kInitExt)) {
    TurnOff("the INIT reply cannot carry the passthrough flag");
    return;
  }
  StoreU32(out + kInitOutFlags2, LoadU32(out + kInitOutFlags2) | kPassthroughFlags2);
  // Backing files may not themselves be FUSE-passthrough or stacked files: depth 1.
  StoreU32(out + kInitOutMaxStackDepth, 1);
  amended_ = true;
}

void Passthrough::OnInitReplyWritten(bool delivered) {
  // enabled_ flips once, right after the amended reply was delivered.
  if (!amended_ || enabled_.load(std::memory_order_relaxed)) return;
  std::lock_guard lock(mu_);
  if (!off_reason_.empty()) return;
  if (!delivered) return TurnOffLocked("the INIT reply was not delivered", /*warn=*/false);
  enabled_.store(true, std::memory_order_release);
  spdlog::info("FUSE passthrough on: cached files are read by the kernel from the cache");
  if (on_change_) on_change_(true);
}

std::string Passthrough::off_reason() const {
  std::lock_guard lock(mu_);
  return off_reason_;
}

void Passthrough::TurnOff(const std::string& why) {
  std::lock_guard lock(mu_);
  TurnOffLocked(why, /*warn=*/false);
}

void Passthrough::TurnOffLocked(const std::string& why, bool warn) {
  const bool was_on = enabled_.exchange(false, std::memory_order_acq_rel);
  if (!off_reason_.empty()) return;
  off_reason_ = why;
  if (warn) {
    spdlog::warn("FUSE passthrough off: {}; reads take the normal path", why);
  } else {
    spdlog::info("FUSE passthrough off: {}", why);
  }
  if (was_on && on_change_) on_change_(false);
}

int32_t Passthrough::BeginOpen(uint64_t ino, uint64_t fh, int backing_fd) {
  std::lock_guard lock(mu_);
  InodeIo& io = inodes_[ino];
  if (io.passthrough_opens > 0) {
    // The kernel insists on one backing file per open inode, and on passthrough for every
    // open of it, even one whose cache file is gone or newer: it shares the first one's.
    ++io.passthrough_opens;
    fh_passthrough_[fh] = true;
    PassthroughOpens().Add();
    return io.backing_id;
  }
  const bool try_passthrough =
      backing_fd >= 0 && io.normal_opens == 0 && enabled_.load(std::memory_order_acquire);
  if (try_passthrough) {
    BackingMap map{backing_fd, 0, 0};
    int id = ::ioctl(dev_fd_, kBackingOpen, &map);
    if (id > 0) {
      io.backing_id = id;
      io.passthrough_opens = 1;
      fh_passthrough_[fh] = true;
      PassthroughOpens().Add();
      return id;
    }
    const int err = errno;
    TurnOffLocked(std::string("registering a cache file with the kernel failed: ") +
                      std::strerror(err) + (err == EPERM ? " (it needs CAP_SYS_ADMIN)" : ""),
                  /*warn=*/true);
  }
  ++io.normal_opens;
  fh_passthrough_[fh] = false;
  return 0;
}

void Passthrough::EndOpen(uint64_t ino, uint64_t fh) {
  std::lock_guard lock(mu_);
  auto f = fh_passthrough_.find(fh);
  if (f == fh_passthrough_.end()) return;
  const bool passthrough = f->second;
  fh_passthrough_.erase(f);
  auto it = inodes_.find(ino);
  if (it == inodes_.end()) return;
  InodeIo& io = it->second;
  if (passthrough) {
    if (io.passthrough_opens > 0 && --io.passthrough_opens == 0) {
      uint32_t id = static_cast<uint32_t>(io.backing_id);
      if (::ioctl(dev_fd_, kBackingClose, &id) != 0) {
        spdlog::debug("closing backing id {}: {}", id, std::strerror(errno));
      }
      io.backing_id = 0;
    }
  } else if (io.normal_opens > 0) {
    --io.normal_opens;
  }
  if (io.normal_opens == 0 && io.passthrough_opens == 0) inodes_.erase(it);
}

}  // namespace ossmount::fuse
