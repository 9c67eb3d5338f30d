// DeviceHooks: libfuse's custom I/O hooks on the session's /dev/fuse traffic, where
// libfuse 3.14 (Debian 12) falls short of what the kernel here offers.
//
// - INIT: the reply is amended on its way to the kernel. FUSE_PARALLEL_DIROPS, which libfuse
//   3.14 accepts in `want` but never passes on (fixed in 3.16): without it the kernel holds a
//   mutex per directory across every LOOKUP and READDIR, so the lookups of one directory
//   would reach the server one at a time. And the flags of FUSE passthrough (Passthrough)
//   and FUSE over io_uring (UringTransport), each when the kernel's INIT offered it.
// - After the INIT reply was delivered: passthrough is turned on and the rings are started.
// - Every reply: one to a request that came through a ring is committed there; the rest
//   (requests read from /dev/fuse, notifications) are written to /dev/fuse.
//
// - A connection taken over from a process that died (InitReplay::resume): the INIT that process
//   recorded is handed to libfuse as the first request read, its reply is kept from the kernel
//   (which had the first one), and the kernel is then told to resend every request the dead
//   process had read and not answered (FUSE_NOTIFY_RESEND). The first process records its INIT
//   request in InitReplay::record before libfuse sees it.
//
// INIT is the first request on a connection and the only one before its reply, so the
// negotiation state needs no lock: it is written by the thread that reads INIT and read by
// the one that writes its reply, ordered by init_seen_.
//
// Thread-safety: the hooks run on libfuse's worker threads and on any thread that replies.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "ossmount/status.h"

struct fuse_session;

namespace ossmount::fuse {

class Passthrough;
class UringTransport;

// Where the INIT of a connection is kept for the next process, and whether this one resumes.
struct InitReplay {
  std::string record;   // the file holding the INIT request ("" = none)
  bool resume = false;  // replay `record` instead of reading an INIT (requires `record`)
};

class DeviceHooks {
 public:
  // Either may be null. Both must outlive the session.
  DeviceHooks(Passthrough* passthrough, UringTransport* uring, InitReplay replay = {})
      : passthrough_(passthrough), uring_(uring), replay_(std::move(replay)) {}

  // Resuming: reads the recorded INIT (kNotFound when there is none). OK otherwise.
  Status LoadInit();

  // Routes the session's device I/O through the hooks. After fuse_session_mount, before the
  // loop; the session's userdata must be an AdapterContext whose `device_hooks` is this
  // object. False when libfuse refuses the hooks (then none of the above happens).
  bool Install(fuse_session* se);

  // The hooks' work (public for tests, which feed them protocol bytes).
  // Resuming, the first read gets the recorded INIT: its size, or 0 when it was handed out.
  size_t TakeReplayedInit(char* buf, size_t size);
  void OnRequestRead(const char* buf, size_t size);
  // True when the reply was taken by a ring (then it must not be written to /dev/fuse).
  bool OnReplyWrite(::iovec* iov, int count);
  void OnReplyWritten(bool delivered);
  // The kernel has taken the INIT reply: the connection serves.
  bool init_delivered() const { return init_delivered_.load(std::memory_order_acquire); }
  // Resuming: requests the kernel was asked to resend (true once FUSE_NOTIFY_RESEND was
  // accepted).
  bool resend_sent() const { return resend_sent_.load(std::memory_order_acquire); }

 private:
  Passthrough* const passthrough_;
  UringTransport* const uring_;
  fuse_session* session_ = nullptr;
  int dev_fd_ = -1;
  std::atomic<bool> init_seen_{false};
  uint64_t init_unique_ = 0;              // written before init_seen_ is set
  bool parallel_dirops_offered_ = false;  // likewise
  std::atomic<bool> init_replied_{false};
  std::atomic<bool> init_delivered_{false};
  const InitReplay replay_;
  std::string saved_init_;  // resuming: the recorded INIT
  std::atomic<bool> init_replayed_{false};
  std::atomic<bool> resend_sent_{false};
  // Marks the INIT reply delivered and starts what it turned on.
  void InitDelivered();
  void RecordInit(const char* buf, size_t size);
  void SendResend();
};

}  // namespace ossmount::fuse
