// ReplyOnce: the one reply every FUSE request is owed.
//
// libfuse requires exactly one fuse_reply_* per request (none for forget). A ReplyOnce
// owns a fuse_req_t from the moment an op starts until it is answered: each Reply* method
// sends the reply and gives up the request; replying twice is a bug caught by an assert
// (and ignored in release builds). If a ReplyOnce is destroyed still holding its request
// (a completion handler dropped on the floor, an io_context torn down at unmount), it
// replies EIO and logs, so the calling process never hangs on a lost request.
//
// RequestTracker knows every ReplyOnce still holding a request, so shutdown can wait for
// in-flight replies, and, when the Filesystem will not answer in time (a GET stuck behind
// retries), answer them itself with an error (AnswerAllPending) so no caller hangs. A
// reply after fuse_session_destroy would be a use-after-free, so the session is only
// destroyed once nothing is outstanding.
//
// Interrupts: after AnswerInterrupts(), an INTERRUPT from the kernel for this request (its
// caller got a signal, e.g. SIGKILL, while waiting) answers it at once with EINTR, so a reader
// waiting on a slow listing or GET is never stuck in D state; the handler's later reply is
// dropped like any second reply.
//
// Thread-safety: the request inside a ReplyOnce is taken with an atomic exchange, so the
// completing handler, an interrupt and AnswerAllPending may race: exactly one of them
// replies, the others see -EALREADY. A ReplyOnce is pinned (not copyable or movable): hold it in a
// shared_ptr to pass it to a handler. RequestTracker is thread-safe. INTERNAL to src/fuse: this
// header includes fuse_lowlevel.h.
#pragma once

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 35
#endif
#include <fuse_lowlevel.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_set>

namespace ossmount::fuse {

class ReplyOnce;

class RequestTracker {
 public:
  int64_t outstanding() const;
  // Waits until no request is outstanding or `timeout` passes; true when idle.
  bool WaitIdle(std::chrono::milliseconds timeout);
  // Replies `errno_value` to every request still unanswered; their handlers' later
  // replies become no-ops. Returns how many were answered here.
  int AnswerAllPending(int errno_value);

 private:
  friend class ReplyOnce;
  void Register(ReplyOnce* r);
  void Unregister(ReplyOnce* r);
  void Replied();

  mutable std::mutex mu_;
  std::condition_variable idle_;
  int64_t outstanding_ = 0;              // requests not yet replied; guarded by mu_
  std::unordered_set<ReplyOnce*> live_;  // guarded by mu_
};

class ReplyOnce {
 public:
  // `op` is a static string naming the operation, for the log. `tracker` must outlive
  // this object.
  ReplyOnce(fuse_req_t req, RequestTracker* tracker, const char* op);
  ReplyOnce(const ReplyOnce&) = delete;
  ReplyOnce& operator=(const ReplyOnce&) = delete;
  ~ReplyOnce();

  // Lets an interrupt of the request answer it with EINTR (see above). Call at most once,
  // right after construction, holding `self` in a shared_ptr, and only for a request from a
  // real session (libfuse's interrupt bookkeeping).
  static void AnswerInterrupts(const std::shared_ptr<ReplyOnce>& self);

  bool pending() const { return req_.load() != nullptr; }
  const char* op() const { return op_; }

  // Each returns libfuse's result: 0, or -errno when the reply could not be delivered
  // (-ENOENT: the kernel no longer waits for it, e.g. the request was interrupted), or
  // -EALREADY when the request was already answered (by AnswerAllPending at shutdown).
  int Err(int errno_value);  // errno_value > 0; 0 means success for ops without data
  int Entry(const fuse_entry_param& e);
  int Attr(const struct stat& st, double timeout);
  int Open(const fuse_file_info& fi);
  int Create(const fuse_entry_param& e, const fuse_file_info& fi);
  int Write(size_t count);
  // An OPEN answered with FOPEN_PASSTHROUGH: the kernel reads the file registered as
  // `backing_id` (fuse/passthrough.h) instead of sending READs. Only fi.fh is used.
  int OpenPassthrough(const fuse_file_info& fi, int32_t backing_id);
  int Buf(const char* data, size_t size);
  int Readlink(const char* target);
  int StatFs(const struct statvfs& st);
  int Xattr(size_t size);
  int Ioctl(int result, const void* data, size_t size);

 private:
  friend class RequestTracker;
  struct InterruptHook;
  static void OnInterrupt(fuse_req_t req, void* hook);
  // Takes the request for a reply; if an interrupt hook is set, unsets it first (waiting for
  // a running one to return) and frees it. nullptr when already taken.
  fuse_req_t Take();
  // The same for AnswerAllPending, whose lock must not be held while the hook is unset: the
  // request and the hook to finish with ReleaseHook, outside the lock.
  fuse_req_t TakeKeepingHook(InterruptHook** hook);
  static void ReleaseHook(fuse_req_t req, InterruptHook* hook);

  std::atomic<fuse_req_t> req_;
  InterruptHook* hook_ = nullptr;  // set once by AnswerInterrupts; freed by whoever takes req_
  RequestTracker* tracker_;
  const char* op_;
};

}  // namespace ossmount::fuse
