// FUSE passthrough for files the disk cache holds: the kernel reads the cache file itself,
// so a cached small file costs the daemon one OPEN (and an asynchronous RELEASE) instead of
// OPEN, READs and the copy of every byte through /dev/fuse.
//
// Kernel side (Linux 6.9+, CONFIG_FUSE_PASSTHROUGH): the daemon enables it in its INIT
// reply (flag FUSE_PASSTHROUGH, max_stack_depth), registers an open file with
// FUSE_DEV_IOC_BACKING_OPEN (needs CAP_SYS_ADMIN) and answers an OPEN with
// FOPEN_PASSTHROUGH and the backing id. libfuse 3.14 (Debian 12) predates all of it, so
// the INIT reply is amended on its way to the kernel by DeviceHooks (device_hooks.h),
// and the OPEN reply is written by hand (see ReplyOnce::OpenPassthrough).
//
// The kernel's rules, which this class keeps: every open of an inode that is open in
// passthrough mode must be passthrough with the SAME backing file (else EIO/EBUSY to the
// opener), and a passthrough open of an inode that is open in normal (page cache) mode
// fails. So per inode: while it has normal opens, new opens are normal; while it has
// passthrough opens, new opens share its backing id (even one that would have had no
// backing file, or a newer one: it reads what the first open verified). The kernel drops
// its side of an open before the daemon sees RELEASE, so these counts never miss an open
// the kernel still has.
//
// Anything that fails (no kernel support, no CAP_SYS_ADMIN, an ioctl error) turns
// passthrough off for the mount, logged once; opens then take the normal path.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

namespace ossmount::fuse {

class Passthrough {
 public:
  // `off_reason` non-empty: never enabled, and the log says why (--no-passthrough).
  // Backing ids still registered when the connection ends are freed by the kernel.
  // `on_change` (may be empty) is told when passthrough turns on (after INIT) and when it
  // turns off again; it runs under this object's lock, so it must not call back into it.
  explicit Passthrough(std::string off_reason, std::function<void(bool)> on_change = {})
      : wanted_(off_reason.empty()),
        on_change_(std::move(on_change)),
        off_reason_(std::move(off_reason)) {}

  // The session's /dev/fuse fd, for the backing-file ioctls. Before the loop starts.
  void set_device_fd(int fd) { dev_fd_ = fd; }

  // INIT negotiation, called by DeviceHooks: the kernel's offer (fuse_init_in.flags and
  // .flags2), the successful INIT reply (struct fuse_init_out, amended in place when
  // passthrough is wanted and offered), and whether that reply reached the kernel.
  void NoteInitRequest(uint32_t flags, uint32_t flags2);
  void AmendInitReply(char* out, size_t size);
  void OnInitReplyWritten(bool delivered);

  // Whether the kernel accepted passthrough (after INIT) and it still works.
  bool enabled() const { return enabled_.load(std::memory_order_acquire); }
  // Why it is off, for the log and the stats ("" while on or before INIT).
  std::string off_reason() const;
  // Turns it off for the mount (logged once, with the first reason).
  void TurnOff(const std::string& why);

  // Decides how open `fh` of inode `ino` is answered. `backing_fd` is a verified cache file
  // holding exactly the file's bytes, or -1. Returns a backing id (> 0) to answer with
  // FOPEN_PASSTHROUGH, or 0 to answer normally. Every call must be matched by one
  // EndOpen(ino, fh): at RELEASE, or at once when the reply could not be delivered.
  int32_t BeginOpen(uint64_t ino, uint64_t fh, int backing_fd);
  void EndOpen(uint64_t ino, uint64_t fh);

 private:
  struct InodeIo {
    uint32_t normal_opens = 0;
    uint32_t passthrough_opens = 0;
    int32_t backing_id = 0;
  };
  // REQUIRES: mu_ held. Records the first reason, logs it, tells on_change_ if it was on.
  void TurnOffLocked(const std::string& why, bool warn);

  const bool wanted_;
  const std::function<void(bool)> on_change_;
  int dev_fd_ = -1;  // the session's /dev/fuse fd, for the backing ioctls
  std::atomic<bool> enabled_{false};
  bool offered_ = false;  // the kernel's INIT offered passthrough
  bool amended_ = false;  // the INIT reply carries the flag

  mutable std::mutex mu_;  // guards inodes_, fh_passthrough_, off_reason_
  std::unordered_map<uint64_t, InodeIo> inodes_;
  std::unordered_map<uint64_t, bool> fh_passthrough_;  // open fh -> answered passthrough
  std::string off_reason_;
};

}  // namespace ossmount::fuse
