#include "fuse/reply_once.h"

#include <spdlog/spdlog.h>

#include <cassert>
#include <cerrno>
#include <utility>
#include <vector>

namespace ossmount::fuse {

void RequestTracker::Register(ReplyOnce* r) {
  std::lock_guard<std::mutex> lock(mu_);
  live_.insert(r);
  ++outstanding_;
}

void RequestTracker::Unregister(ReplyOnce* r) {
  std::lock_guard<std::mutex> lock(mu_);
  live_.erase(r);
}

void RequestTracker::Replied() {
  bool idle;
  {
    std::lock_guard<std::mutex> lock(mu_);
    idle = --outstanding_ == 0;
  }
  if (idle) idle_.notify_all();
}

int64_t RequestTracker::outstanding() const {
  std::lock_guard<std::mutex> lock(mu_);
  return outstanding_;
}

bool RequestTracker::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_.wait_for(lock, timeout, [this] { return outstanding_ == 0; });
}

int RequestTracker::AnswerAllPending(int errno_value) {
  struct Taken {
    fuse_req_t req;
    const char* op;
    ReplyOnce::InterruptHook* hook;
  };
  std::vector<Taken> taken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (ReplyOnce* r : live_) {
      ReplyOnce::InterruptHook* hook = nullptr;
      if (fuse_req_t req = r->TakeKeepingHook(&hook)) taken.push_back({req, r->op(), hook});
    }
  }
  // Replies go out without the lock held (a reply may run other code); so is the interrupt hook
  // unset, since a running hook replies and then takes this lock (Replied).
  for (const Taken& t : taken) {
    ReplyOnce::ReleaseHook(t.req, t.hook);
    spdlog::warn("fuse {}: still unanswered at shutdown; answering error {}", t.op, errno_value);
    fuse_reply_err(t.req, errno_value);
    Replied();
  }
  return static_cast<int>(taken.size());
}

// What libfuse hands the interrupt callback. A weak reference: a ReplyOnce being destroyed
// takes its request first, which unsets the hook under libfuse's request lock, and so waits
// for a running callback; the callback touches the ReplyOnce only through a strong reference.
struct ReplyOnce::InterruptHook {
  std::weak_ptr<ReplyOnce> reply;
};

void ReplyOnce::AnswerInterrupts(const std::shared_ptr<ReplyOnce>& self) {
  fuse_req_t req = self->req_.load();
  if (req == nullptr || self->hook_ != nullptr) return;
  self->hook_ = new InterruptHook{self};
  // Runs OnInterrupt at once if the request was interrupted already.
  fuse_req_interrupt_func(req, &ReplyOnce::OnInterrupt, self->hook_);
}

// Called by libfuse with the request's lock held (so never at the same time as the unset in
// Take), on the thread that read the INTERRUPT.
void ReplyOnce::OnInterrupt(fuse_req_t, void* data) {
  auto* hook = static_cast<InterruptHook*>(data);
  std::shared_ptr<ReplyOnce> self = hook->reply.lock();
  if (!self) return;  // being destroyed: its destructor takes the request and frees the hook
  fuse_req_t req = self->req_.exchange(nullptr);
  if (req == nullptr) return;  // a reply won the race: whoever took the request frees the hook
  spdlog::debug("fuse {}: interrupted by the caller; answering EINTR", self->op_);
  // The hook is not unset: libfuse calls it only while the request is unanswered.
  self->hook_ = nullptr;
  delete hook;
  fuse_reply_err(req, EINTR);
  self->tracker_->Replied();
}

fuse_req_t ReplyOnce::TakeKeepingHook(InterruptHook** hook) {
  fuse_req_t req = req_.exchange(nullptr);
  if (req != nullptr) {
    *hook = hook_;
    hook_ = nullptr;
  }
  return req;
}

void ReplyOnce::ReleaseHook(fuse_req_t req, InterruptHook* hook) {
  if (hook == nullptr) return;
  fuse_req_interrupt_func(req, nullptr, nullptr);  // waits for a running OnInterrupt
  delete hook;
}

fuse_req_t ReplyOnce::Take() {
  InterruptHook* hook = nullptr;
  fuse_req_t req = TakeKeepingHook(&hook);
  ReleaseHook(req, hook);
  return req;
}

ReplyOnce::ReplyOnce(fuse_req_t req, RequestTracker* tracker, const char* op)
    : req_(req), tracker_(tracker), op_(op) {
  tracker_->Register(this);
}

ReplyOnce::~ReplyOnce() {
  if (req_.load() != nullptr) {
    spdlog::error("fuse {}: request dropped without a reply; answering EIO", op_);
    Err(EIO);
  }
  tracker_->Unregister(this);
}

// Every reply path: take the request, reply (libfuse frees it), then count it done. The
// tracker is decremented after the reply so that WaitIdle() returning true means no
// thread is still inside fuse_reply_*.
#define OSSMOUNT_REPLY(call)            \
  fuse_req_t req = Take();              \
  if (req == nullptr) return -EALREADY; \
  int rc = call;                        \
  tracker_->Replied();                  \
  return rc

int ReplyOnce::Err(int errno_value) { OSSMOUNT_REPLY(fuse_reply_err(req, errno_value)); }
int ReplyOnce::Entry(const fuse_entry_param& e) { OSSMOUNT_REPLY(fuse_reply_entry(req, &e)); }
int ReplyOnce::Attr(const struct stat& st, double timeout) {
  OSSMOUNT_REPLY(fuse_reply_attr(req, &st, timeout));
}
int ReplyOnce::Open(const fuse_file_info& fi) { OSSMOUNT_REPLY(fuse_reply_open(req, &fi)); }
int ReplyOnce::Create(const fuse_entry_param& e, const fuse_file_info& fi) {
  OSSMOUNT_REPLY(fuse_reply_create(req, &e, &fi));
}
int ReplyOnce::Write(size_t count) { OSSMOUNT_REPLY(fuse_reply_write(req, count)); }
int ReplyOnce::OpenPassthrough(const fuse_file_info& fi, int32_t backing_id) {
  // struct fuse_open_out of protocol 7.40; libfuse 3.14's fuse_reply_open cannot say it.
  struct {
    uint64_t fh;
    uint32_t open_flags;
    int32_t backing_id;
  } out{fi.fh, 1u << 7 /* FOPEN_PASSTHROUGH */, backing_id};
  static_assert(sizeof(out) == 16);
  OSSMOUNT_REPLY(fuse_reply_buf(req, reinterpret_cast<const char*>(&out), sizeof(out)));
}
int ReplyOnce::Buf(const char* data, size_t size) {
  OSSMOUNT_REPLY(fuse_reply_buf(req, data, size));
}
int ReplyOnce::Readlink(const char* target) { OSSMOUNT_REPLY(fuse_reply_readlink(req, target)); }
int ReplyOnce::StatFs(const struct statvfs& st) { OSSMOUNT_REPLY(fuse_reply_statfs(req, &st)); }
int ReplyOnce::Xattr(size_t size) { OSSMOUNT_REPLY(fuse_reply_xattr(req, size)); }
int ReplyOnce::Ioctl(int result, const void* data, size_t size) {
  OSSMOUNT_REPLY(fuse_reply_ioctl(req, result, data, size));
}

#undef OSSMOUNT_REPLY

}  // namespace ossmount::fuse
