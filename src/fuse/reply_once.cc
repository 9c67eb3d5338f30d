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
  std::vector<std::pair<fuse_req_t, const char*>> taken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (ReplyOnce* r : live_) {
      if (fuse_req_t req = r->Take()) taken.emplace_back(req, r->op());
    }
  }
  // Replies go out without the lock held (DESIGN.md §2).
  for (auto& [req, op] : taken) {
    spdlog::warn("fuse {}: still unanswered at shutdown; answering error {}", op, errno_value);
    fuse_reply_err(req, errno_value);
    Replied();
  }
  return static_cast<int>(taken.size());
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
int ReplyOnce::StatFs(const struct statvfs& st) { OSSMOUNT_REPLY(fuse_reply_statfs(req, &st)); }
int ReplyOnce::Xattr(size_t size) { OSSMOUNT_REPLY(fuse_reply_xattr(req, size)); }
int ReplyOnce::Ioctl(int result, const void* data, size_t size) {
  OSSMOUNT_REPLY(fuse_reply_ioctl(req, result, data, size));
}

#undef OSSMOUNT_REPLY

}  // namespace ossmount::fuse
