// The appending FileWriter (file_writer.h, MakeAppendingWriter): a file opened with O_APPEND
// on a service with appendable objects. Writes gather in a buffer that goes to the object as
// one AppendObject when it reaches kSendAt, when `interval` has passed since its first byte,
// or at a completion (close, fsync); one append is in flight at a time, since each must
// start where the object ends. Each append is checked against the running CRC-64 of every
// byte written, and the object grows visibly to every reader as it goes.
#include <boost/asio/steady_timer.hpp>
#include <mutex>
#include <string_view>
#include <vector>

#include "common/crc64.h"
#include "fs/file_writer.h"

namespace ossmount::fs {
namespace {

// An append is sent once this much is buffered, without waiting for the interval.
constexpr size_t kSendAt = 1 << 20;
// A writer waits (WhenWritable) while this much is buffered or in flight.
constexpr size_t kMaxHeld = 8 << 20;

class AppendingWriter : public FileWriter, public std::enable_shared_from_this<AppendingWriter> {
 public:
  AppendingWriter(const WriterContext& context, std::string key, AppendStart start,
                  std::chrono::milliseconds interval, AppendedCallback on_appended)
      : client_(context.client),
        key_(std::move(key)),
        interval_(interval),
        timer_(context.executor),
        on_appended_(std::move(on_appended)),
        position_(start.position),
        crc_(start.position == 0 ? std::optional<uint64_t>(0) : start.crc64),
        must_create_(start.position == 0) {}

  Status Write(uint64_t /*offset*/, const char* data, size_t size) override {
    // Opened with O_APPEND: every write goes at the end, as the kernel means it to, even when
    // the size it holds is behind the object's (another client appended since it was told).
    std::lock_guard lock(mu_);
    if (!error_.ok()) return error_;
    buffer_.append(data, size);
    if (buffer_.size() >= kSendAt) {
      SendLocked();
    } else {
      ArmTimerLocked();
    }
    return Status::Ok();
  }
  void WhenWritable(std::function<void()> resume) override {
    {
      std::lock_guard lock(mu_);
      if (error_.ok() && buffer_.size() + in_flight_ >= kMaxHeld) {
        writable_waiters_.push_back(std::move(resume));
        return;
      }
    }
    resume();
  }
  Result<size_t> Read(uint64_t, char*, size_t) override {
    return Status(ErrorCode::kNotSupported,
                  "'" + key_ + "' is appended to as it is written: open it again to read it");
  }
  Status Truncate(uint64_t size) override {
    if (size == this->size()) return Status::Ok();
    return Status(ErrorCode::kNotSupported,
                  "truncating '" + key_ + "': an appendable object only grows");
  }
  Status Reserve(uint64_t size) override {
    if (size <= this->size()) return Status::Ok();
    return Status(ErrorCode::kNotSupported,
                  "preallocating '" + key_ + "': an appendable object only grows");
  }
  uint64_t size() const override {
    std::lock_guard lock(mu_);
    return EndLocked();
  }
  bool changed() const override {
    std::lock_guard lock(mu_);
    return must_create_ || !buffer_.empty() || in_flight_ > 0 || !error_.ok();
  }
  void Finish(FinishCallback done) override {
    std::unique_lock lock(mu_);
    if (!error_.ok()) {
      Status e = error_;
      lock.unlock();
      return done(e);
    }
    finish_waiters_.push_back(std::move(done));
    if (in_flight_ == 0) {
      if (!buffer_.empty() || must_create_) {
        SendLocked();
      } else {
        lock.unlock();
        return Answer(Status::Ok());
      }
    }
    // Otherwise the append in flight sends the rest, then answers.
  }
  void Abort(Status why) override {
    std::vector<FinishCallback> finishers;
    std::vector<std::function<void()>> writers;
    {
      std::lock_guard lock(mu_);
      if (!error_.ok()) return;
      error_ = why;
      buffer_.clear();
      if (in_flight_ == 0) finishers.swap(finish_waiters_);
      writers.swap(writable_waiters_);
    }
    timer_.cancel();
    for (auto& f : finishers) f(why);
    for (auto& w : writers) w();
  }
  Status error() const override {
    std::lock_guard lock(mu_);
    return error_;
  }
  bool writing() const override {
    std::lock_guard lock(mu_);
    return error_.ok() && (!buffer_.empty() || in_flight_ > 0 || must_create_);
  }
  bool active() const override { return writing(); }
  bool appends() const override { return true; }

 private:
  uint64_t EndLocked() const { return position_ + in_flight_ + buffer_.size(); }

  // Sends what is buffered `interval_` from now, unless a send is due already.
  void ArmTimerLocked() {
    if (timer_armed_) return;
    timer_armed_ = true;
    timer_.expires_after(interval_);
    timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
      if (ec) return;
      if (auto self = weak.lock()) self->OnTimer();
    });
  }

  void OnTimer() {
    std::lock_guard lock(mu_);
    timer_armed_ = false;
    if (error_.ok() && in_flight_ == 0 && !buffer_.empty()) SendLocked();
  }

  // Sends the buffer as one append, unless one is in flight (its answer sends what follows).
  void SendLocked() {
    if (in_flight_ > 0 || !error_.ok()) return;
    SharedBytes body = SharedBytes::FromString(std::move(buffer_));
    buffer_.clear();
    in_flight_ = body.size();
    must_create_ = false;
    AppendRequest request;
    request.key = key_;
    request.position = position_;
    request.crc_before = crc_;
    request.body = body;
    client_->Append(request, [self = shared_from_this(), body](Result<AppendResult> r) {
      self->Appended(std::move(r), body.view());
    });
  }

  void Appended(Result<AppendResult> r, std::string_view body) {
    std::vector<std::function<void()>> writers;
    std::optional<AppendResult> appended;
    bool answer_finish = false;
    Status failed;
    {
      std::lock_guard lock(mu_);
      in_flight_ = 0;
      if (!r.ok()) {
        // Bytes appended before stay: an appendable object is visible as it grows.
        if (error_.ok()) error_ = r.status();
        buffer_.clear();
        failed = error_;
        answer_finish = true;
      } else {
        crc_ = crc_ ? std::optional<uint64_t>(
                          Crc64Combine(*crc_, Crc64(0, body.data(), body.size()), body.size()))
                    : r->crc64;
        position_ = r->next_position;
        etag_ = r->etag;
        appended = *r;
        if (!finish_waiters_.empty() || buffer_.size() >= kSendAt) {
          if (!buffer_.empty()) {
            SendLocked();
          } else {
            answer_finish = true;
          }
        } else if (!buffer_.empty()) {
          ArmTimerLocked();  // bytes that came while this one was in flight
        }
      }
      if (buffer_.size() + in_flight_ < kMaxHeld || !error_.ok()) {
        writers.swap(writable_waiters_);
      }
    }
    if (appended && on_appended_) on_appended_(*appended);
    if (answer_finish) Answer(failed);
    for (auto& w : writers) w();
  }

  void Answer(Status s) {
    std::vector<FinishCallback> finishers;
    upload::UploadedObject made;
    {
      std::lock_guard lock(mu_);
      // Aborted while its last append was on its way: the abort is the answer.
      if (s.ok() && !error_.ok()) s = error_;
      finishers.swap(finish_waiters_);
      made.size = position_;
      made.etag = etag_;
      made.crc64 = crc_;
      made.completion = ++completions_;
    }
    for (auto& f : finishers) {
      if (s.ok()) {
        f(made);
      } else {
        f(s);
      }
    }
  }

  const std::shared_ptr<ObjectClient> client_;
  const std::string key_;
  const std::chrono::milliseconds interval_;
  boost::asio::steady_timer timer_;
  const AppendedCallback on_appended_;
  mutable std::mutex mu_;        // guards the members below
  uint64_t position_;            // the object's length, as its last append left it
  std::optional<uint64_t> crc_;  // of the object's first position_ bytes, when known
  bool must_create_;             // a new file: its first completion makes the object
  std::string etag_;
  std::string buffer_;      // written, not yet sent
  uint64_t in_flight_ = 0;  // bytes of the append on its way
  bool timer_armed_ = false;
  uint64_t completions_ = 0;
  Status error_;
  std::vector<FinishCallback> finish_waiters_;
  std::vector<std::function<void()>> writable_waiters_;
};

}  // namespace

std::shared_ptr<FileWriter> MakeAppendingWriter(const WriterContext& context, std::string key,
                                                AppendStart start,
                                                std::chrono::milliseconds interval,
                                                AppendedCallback on_appended) {
  return std::make_shared<AppendingWriter>(context, std::move(key), start, interval,
                                           std::move(on_appended));
}

}  // namespace ossmount::fs
