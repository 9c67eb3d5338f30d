// The two FileWriters (file_writer.h): streaming, over one upload::ObjectUpload, and staged,
// over a local upload::StagedFile sent whole by a fresh upload at each completion.
#include <algorithm>
#include <limits>
#include <mutex>
#include <vector>

#include <spdlog/spdlog.h>

#include "fs/file_writer.h"
#include "upload/staged_upload.h"

namespace ossmount::fs {
namespace {

// Zeros appended to a streamed file that posix_fallocate made longer than its writes.
constexpr size_t kZeroPiece = 1 << 20;

class StreamingWriter : public FileWriter, public std::enable_shared_from_this<StreamingWriter> {
 public:
  StreamingWriter(std::shared_ptr<upload::ObjectUpload> upload,
                  std::shared_ptr<upload::StagedFile> mirror, uint64_t mirror_limit)
      : upload_(std::move(upload)), mirror_(std::move(mirror)), mirror_limit_(mirror_limit) {}

  Status Write(uint64_t offset, const char* data, size_t size) override {
    std::lock_guard lock(mu_);
    if (Status sticky = upload_->error(); !sticky.ok()) return sticky;
    if (offset != next_offset_) {
      return Status(ErrorCode::kNotSupported,
                    "write to '" + upload_->key() + "' at offset " + std::to_string(offset) +
                        " where " + std::to_string(next_offset_) +
                        " was next: a file streamed to the bucket is written in order");
    }
    Status appended = upload_->Append(data, size);
    if (!appended.ok()) return appended;
    next_offset_ += size;
    if (mirror_ && next_offset_ > mirror_limit_) {
      spdlog::debug("no local copy of '{}' kept past {} bytes (--max-stream-copy)", upload_->key(),
                    mirror_limit_);
      mirror_.reset();
    }
    if (mirror_) {
      Status mirrored = mirror_->Write(offset, data, size);
      if (!mirrored.ok()) {
        // The upload goes on; only a later out-of-order write has nothing to move to.
        spdlog::debug("no local copy of '{}' kept any more: {}", upload_->key(),
                      mirrored.message());
        mirror_.reset();
      }
    }
    return Status::Ok();
  }
  void WhenWritable(std::function<void()> resume) override {
    upload_->WhenWritable(std::move(resume));
  }
  Result<size_t> Read(uint64_t, char*, size_t) override {
    return Status(ErrorCode::kNotSupported,
                  "'" + upload_->key() +
                      "' is streamed to the bucket as it is written and cannot be read back "
                      "until it is closed");
  }
  Status Truncate(uint64_t size) override {
    if (size == this->size()) return Status::Ok();
    return Status(ErrorCode::kNotSupported,
                  "truncating '" + upload_->key() + "' to " + std::to_string(size) +
                      " bytes while it is streamed (" + std::to_string(this->size()) + " written)");
  }
  Status Reserve(uint64_t size) override {
    std::lock_guard lock(mu_);
    reserved_ = std::max(reserved_, size);
    return Status::Ok();
  }
  uint64_t size() const override {
    std::lock_guard lock(mu_);
    return std::max(next_offset_, reserved_);
  }
  bool changed() const override { return size() > 0 || !upload_->error().ok(); }
  void Finish(FinishCallback done) override {
    PadToReserved([self = shared_from_this(), done = std::move(done)](Status padded) mutable {
      if (!padded.ok()) return done(padded);
      self->upload_->Finish(std::move(done));
    });
  }
  void Abort(Status why) override { upload_->Abort(std::move(why)); }
  Status error() const override { return upload_->error(); }
  bool writing() const override { return upload_->writing(); }
  bool active() const override { return upload_->active(); }
  bool outcome_unknown() const override { return upload_->outcome_unknown(); }
  bool outcome_will_settle() const override { return upload_->outcome_will_settle(); }
  std::optional<std::string> TakeBytes() override {
    std::lock_guard lock(mu_);
    std::string bytes;
    if (!upload_->Surrender(&bytes, Status(ErrorCode::kCancelled, "moved to a staged copy"))) {
      return std::nullopt;
    }
    return bytes;
  }
  std::shared_ptr<upload::StagedFile> TakeCopy() override {
    std::lock_guard lock(mu_);
    if (!mirror_ || mirror_->size() != next_offset_ || !upload_->error().ok()) return nullptr;
    // A completion on its way (an fsync from another thread) is left to finish.
    if (upload_->active() && !upload_->writing()) return nullptr;
    // Room posix_fallocate gave the file past its bytes comes along.
    if (reserved_ > next_offset_ && !mirror_->Truncate(reserved_).ok()) return nullptr;
    upload_->Withdraw(Status(ErrorCode::kCancelled, "moved to a staged copy"));
    return std::move(mirror_);
  }

 private:
  // Appends the zeros between the bytes written and the reserved size, a piece at a time.
  void PadToReserved(std::function<void(Status)> done) {
    Status appended;
    bool more = false;
    {
      std::lock_guard lock(mu_);
      if (next_offset_ < reserved_) {
        static const std::string zeros(kZeroPiece, '\0');
        const size_t n =
            static_cast<size_t>(std::min<uint64_t>(kZeroPiece, reserved_ - next_offset_));
        appended = upload_->Append(zeros.data(), n);
        if (appended.ok()) next_offset_ += n;
        more = appended.ok() && next_offset_ < reserved_;
      }
    }
    if (!more) return done(appended);
    upload_->WhenWritable([self = shared_from_this(), done = std::move(done)]() mutable {
      self->PadToReserved(std::move(done));
    });
  }

  const std::shared_ptr<upload::ObjectUpload> upload_;
  mutable std::mutex mu_;                       // orders writes; guards the members below
  std::shared_ptr<upload::StagedFile> mirror_;  // every byte written, while there is room
  const uint64_t mirror_limit_;
  uint64_t next_offset_ = 0;
  uint64_t reserved_ = 0;
};

// Bytes of an object fetched per ranged GET for a staged file.
constexpr uint64_t kFetchPiece = 8ull << 20;

class StagedWriter : public FileWriter, public std::enable_shared_from_this<StagedWriter> {
 public:
  StagedWriter(const WriterContext& context, std::string key, WriteOptions write_options,
               std::shared_ptr<upload::StagedFile> file, SettledCallback on_settled,
               const std::optional<ObjectInfo>& existing)
      : context_(context),
        key_(std::move(key)),
        write_options_(write_options),
        file_(std::move(file)),
        on_settled_(std::move(on_settled)) {
    if (existing) {
      // The bucket holds this file's bytes already: saved, until a change.
      upload::UploadedObject saved;
      saved.size = existing->size;
      saved.etag = existing->etag;
      saved.crc64 = existing->crc64;
      last_ = saved;
      // Once loaded, the file holds the object's bytes: parts that no write touches are
      // copied on the server at completion, not sent again.
      // (Not an appendable object, which OSS does not copy part by part.)
      if (!existing->appendable) unchanged_ = AllUnchanged(existing->etag, existing->size);
    } else {
      changed_ = true;
    }
  }

  Status Write(uint64_t offset, const char* data, size_t size) override {
    std::lock_guard lock(mu_);
    if (!error_.ok()) return error_;
    if (finishing_) return Finishing();
    const auto range = upload::ByteRanges::interval_type::right_open(offset, offset + size);
    if (unchanged_) unchanged_->ranges -= range;
    absent_ -= range;  // what the object had there is not needed any more
    Status written = file_->Write(offset, data, size);
    if (!written.ok()) return FailLocked(written);
    changed_ = true;
    return Status::Ok();
  }
  void WhenWritable(std::function<void()> resume) override { resume(); }
  void WhenIdle(std::function<void()> resume) override {
    {
      std::lock_guard lock(mu_);
      if (finishing_) {
        idle_waiters_.push_back(std::move(resume));
        return;
      }
    }
    resume();
  }
  Result<size_t> Read(uint64_t offset, char* out, size_t size) override {
    return file_->Read(offset, out, size);
  }
  Status Truncate(uint64_t size) override {
    std::lock_guard lock(mu_);
    if (!error_.ok()) return error_;
    if (finishing_) return Finishing();
    if (size == file_->size()) return Status::Ok();
    Status truncated = file_->Truncate(size);
    if (!truncated.ok()) return truncated;  // the budget: the file goes on as it was
    // What lies past the new end is gone, and zeros if the file grows again.
    const auto past_end =
        upload::ByteRanges::interval_type::right_open(size, std::numeric_limits<uint64_t>::max());
    if (unchanged_) unchanged_->ranges -= past_end;
    absent_ -= past_end;
    changed_ = true;
    return Status::Ok();
  }
  Status Reserve(uint64_t size) override {
    if (size <= file_->size()) return Status::Ok();
    return Truncate(size);
  }
  uint64_t size() const override { return file_->size(); }
  bool changed() const override {
    std::lock_guard lock(mu_);
    return changed_;
  }
  void Finish(FinishCallback done) override {
    std::shared_ptr<upload::ObjectUpload> upload;
    std::optional<upload::UnchangedBytes> copies;
    {
      std::unique_lock lock(mu_);
      if (!error_.ok()) {
        Status e = error_;
        lock.unlock();
        return done(e);
      }
      if (finishing_) {
        waiters_.push_back(std::move(done));
        return;
      }
      if (!changed_ && last_) {
        upload::UploadedObject same = *last_;
        lock.unlock();
        return done(same);
      }
      finishing_ = true;
      waiters_.push_back(std::move(done));
      upload = MakeUploadLocked();
      if (!context_.part_copies_refused || !context_.part_copies_refused->load()) {
        copies = unchanged_;
      }
    }
    Upload(std::move(upload), std::move(copies));
  }
  void Abort(Status why) override {
    std::shared_ptr<upload::ObjectUpload> upload;
    {
      std::lock_guard lock(mu_);
      if (!error_.ok()) return;
      FailLocked(why);
      upload = current_;
    }
    if (upload) upload->Abort(std::move(why));
  }
  Status error() const override {
    std::lock_guard lock(mu_);
    return error_;
  }
  bool writing() const override {
    std::lock_guard lock(mu_);
    return error_.ok() && !finishing_;
  }
  bool active() const override {
    std::lock_guard lock(mu_);
    return error_.ok() && (finishing_ || changed_ || !last_);
  }
  bool outcome_unknown() const override {
    std::lock_guard lock(mu_);
    return current_ && current_->outcome_unknown();
  }
  bool outcome_will_settle() const override {
    std::lock_guard lock(mu_);
    return current_ && current_->outcome_will_settle();
  }
  bool Rekey(const std::string& key, bool forbid_overwrite) override {
    std::lock_guard lock(mu_);
    // Bytes not fetched yet would have to come from the old key (Fetch them first).
    if (finishing_ || !absent_.empty()) return false;
    // The caller moves what the bucket holds of this file along with it (a rename), so what
    // was saved is still saved.
    key_ = key;
    write_options_.forbid_overwrite = forbid_overwrite;
    unchanged_.reset();  // the copy under the new name is another object
    return true;
  }
  std::shared_ptr<upload::StagedFile> staged_file() const override { return file_; }
  Status StartFrom(const ObjectInfo& source) override {
    std::lock_guard lock(mu_);
    if (!error_.ok()) return error_;
    Status sized = file_->Truncate(source.size);  // sparse: the bytes come when needed
    if (!sized.ok()) return FailLocked(sized);
    from_ = source;
    absent_.clear();
    if (source.size > 0) absent_ += upload::ByteRanges::interval_type::right_open(0, source.size);
    return Status::Ok();
  }
  void Fetch(uint64_t offset, uint64_t size, std::function<void(Status)> done) override {
    std::vector<std::pair<uint64_t, uint64_t>> missing;
    ObjectInfo source;
    Status failed;
    {
      std::lock_guard lock(mu_);
      failed = error_;
      if (failed.ok() && from_) {
        for (const auto& range :
             absent_& upload::ByteRanges::interval_type::right_open(offset, offset + size)) {
          missing.emplace_back(boost::icl::first(range), boost::icl::last_next(range));
        }
        source = *from_;
      }
    }
    if (!failed.ok()) return done(failed);
    if (missing.empty()) return done(Status::Ok());
    FetchRanges(
        context_.client, source, std::move(missing), kFetchPiece,
        [weak = weak_from_this()](uint64_t at, std::string_view bytes) {
          auto self = weak.lock();
          return self ? self->Fill(at, bytes) : Status(ErrorCode::kCancelled, "closed");
        },
        [weak = weak_from_this(), key = source.key, done = std::move(done)](Status fetched) {
          if (!fetched.ok()) {
            fetched.Prefix("fetching bytes of '" + key + "' that it keeps");
            if (auto self = weak.lock()) self->Abort(fetched);
          }
          done(fetched);
        });
  }
  bool holds_every_byte() const override {
    std::lock_guard lock(mu_);
    return absent_.empty();
  }

 private:
  // Bytes of from_ fetched for [at, at + size): written where the file still lacks them (a
  // write since the request, or a truncation, took precedence).
  Status Fill(uint64_t at, std::string_view bytes) {
    std::lock_guard lock(mu_);
    const upload::ByteRanges still =
        absent_ & upload::ByteRanges::interval_type::right_open(at, at + bytes.size());
    for (const auto& range : still) {
      const uint64_t first = boost::icl::first(range);
      const uint64_t length = boost::icl::last_next(range) - first;
      Status written = file_->Write(first, bytes.data() + (first - at), length);
      if (!written.ok()) return written;
    }
    absent_ -= still;
    return Status::Ok();
  }
  static upload::UnchangedBytes AllUnchanged(const std::string& etag, uint64_t size) {
    upload::UnchangedBytes all{etag, {}};
    if (size > 0) all.ranges += upload::ByteRanges::interval_type::right_open(0, size);
    return all;
  }
  // The upload of the next completion, made current. REQUIRES mu_.
  std::shared_ptr<upload::ObjectUpload> MakeUploadLocked() {
    WriteOptions wo = write_options_;
    if (last_) wo.forbid_overwrite = false;  // the name is this file's own now
    auto upload = upload::ObjectUpload::Make(context_.client, context_.gate, context_.journal, key_,
                                             context_.options, wo);
    if (on_settled_) upload->OnOutcomeSettled(on_settled_);
    current_ = upload;
    return upload;
  }
  Status Finishing() const {
    return Status(ErrorCode::kBusy, "'" + key_ + "' is being completed by a close or fsync");
  }
  Status FailLocked(Status why) {
    if (error_.ok()) error_ = why;
    return error_;
  }
  void Upload(std::shared_ptr<upload::ObjectUpload> upload,
              std::optional<upload::UnchangedBytes> copies) {
    const bool copying = copies.has_value();
    // Parts that go up (not copied) need the object's bytes the file has not fetched yet.
    auto fetch = [weak = weak_from_this()](uint64_t begin, uint64_t end,
                                           std::function<void(Status)> fetched) {
      auto self = weak.lock();
      if (!self) return fetched(Status(ErrorCode::kCancelled, "the file was closed"));
      self->Fetch(begin, end - begin, std::move(fetched));
    };
    upload::UploadStagedFile(
        file_, upload, std::move(copies), std::move(fetch),
        [self = shared_from_this(), copying](Result<upload::UploadedObject> r) {
          // The object the copies came from was replaced meanwhile (another client), or the
          // server copies no parts: the file has every byte, so it goes up again, whole, and
          // replaces the object as a file uploaded whole would have.
          const ErrorCode code = r.ok() ? ErrorCode::kOk : r.status().code();
          if (copying && code == ErrorCode::kNotSupported && self->context_.part_copies_refused) {
            self->context_.part_copies_refused->store(true);
          }
          if (copying &&
              (code == ErrorCode::kPreconditionFailed || code == ErrorCode::kNotSupported) &&
              self->RetryWithoutCopies(r.status())) {
            return;
          }
          self->Finished(std::move(r));
        });
  }
  bool RetryWithoutCopies(const Status& why) {
    std::shared_ptr<upload::ObjectUpload> upload;
    std::string key;
    {
      std::lock_guard lock(mu_);
      if (!error_.ok()) return false;
      unchanged_.reset();
      upload = MakeUploadLocked();
      key = key_;
    }
    spdlog::info("'{}': sending it whole, as its unchanged parts could not be copied ({})", key,
                 why.ToString());
    Upload(std::move(upload), std::nullopt);
    return true;
  }
  void Finished(Result<upload::UploadedObject> r) {
    std::vector<FinishCallback> waiters;
    std::vector<std::function<void()>> idle;
    {
      std::lock_guard lock(mu_);
      finishing_ = false;
      current_.reset();
      if (r.ok()) {
        ++completions_;
        r->completion = completions_;
        last_ = *r;
        changed_ = false;
        // The bucket holds exactly the file now: the next completion copies what stays.
        unchanged_ = AllUnchanged(r->etag, r->size);
        // Bytes not fetched yet were copied to the same offsets: the new version has them.
        if (from_ && !absent_.empty()) {
          from_->etag = r->etag;
          from_->size = r->size;
        }
      } else {
        // The bucket has what it had: the next completion sends the file again.
        if (!error_.ok()) r = error_;
      }
      waiters.swap(waiters_);
      idle.swap(idle_waiters_);
    }
    for (auto& w : waiters) w(r);
    for (auto& resume : idle) resume();
  }

  const WriterContext context_;
  mutable std::mutex mu_;  // guards the members below
  std::string key_;
  WriteOptions write_options_;
  const std::shared_ptr<upload::StagedFile> file_;
  const SettledCallback on_settled_;
  Status error_;
  bool changed_ = false;
  bool finishing_ = false;
  uint64_t completions_ = 0;
  std::optional<upload::UploadedObject> last_;
  // Where the file still holds the bytes of the object at key_ with this etag (the one it
  // was loaded from, or its last completion); none for a new file.
  std::optional<upload::UnchangedBytes> unchanged_;
  // StartFrom: the object whose bytes the ranges in absent_ are, not fetched into the file
  // yet (a subset of unchanged_'s: a write or truncation removes them from both).
  std::optional<ObjectInfo> from_;
  upload::ByteRanges absent_;
  std::shared_ptr<upload::ObjectUpload> current_;
  std::vector<FinishCallback> waiters_;
  std::vector<std::function<void()>> idle_waiters_;
};

// Ranges of one object fetched for a staged file: kFetchInFlight ranged GETs of a piece each
// at once (one connection carries far less than the link), each handed on as it arrives.
constexpr int kFetchInFlight = 8;

struct RangeFetcher : std::enable_shared_from_this<RangeFetcher> {
  std::shared_ptr<ObjectClient> client;
  ObjectInfo source;
  uint64_t piece = 0;
  FetchedSink sink;
  std::function<void(Status)> done;

  std::mutex mu;                                      // guards the members below
  std::vector<std::pair<uint64_t, uint64_t>> pieces;  // [offset, length), in order
  size_t next = 0;
  int in_flight = 0;
  Status error;
  bool answered = false;

  void Start(const std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
    for (const auto& [begin, end] : ranges) {
      for (uint64_t at = begin; at < end; at += piece) {
        pieces.emplace_back(at, std::min(piece, end - at));
      }
    }
    if (pieces.empty()) return done(Status::Ok());
    std::vector<std::pair<uint64_t, uint64_t>> first;
    {
      std::lock_guard lock(mu);
      while (in_flight < kFetchInFlight && next < pieces.size()) {
        first.push_back(pieces[next++]);
        ++in_flight;
      }
    }
    for (const auto& [offset, length] : first) Fetch(offset, length);
  }

  void Fetch(uint64_t offset, uint64_t length) {
    auto buffer = std::make_shared<std::vector<char>>(length);
    GetRequest request;
    request.key = source.key;
    request.offset = offset;
    request.length = length;
    request.if_match = source.etag;
    client->Get(request, GetTarget::Fixed(buffer->data(), buffer->size()),
                [self = shared_from_this(), offset, length, buffer](Result<GetResult> r) {
                  Status s = r.status();
                  if (s.ok()) {
                    s = CheckPinnedGet(*r, self->source.key, length, self->source.size,
                                       self->source.etag);
                  }
                  if (s.ok()) s = self->sink(offset, std::string_view(buffer->data(), length));
                  self->Fetched(s);
                });
  }

  void Fetched(Status s) {
    std::optional<std::pair<uint64_t, uint64_t>> more;
    bool finish = false;
    {
      std::lock_guard lock(mu);
      --in_flight;
      if (!s.ok() && error.ok()) error = s;
      if (error.ok() && next < pieces.size()) {
        more = pieces[next++];
        ++in_flight;
      } else if (in_flight == 0 && !answered) {
        answered = true;
        finish = true;
      }
    }
    if (more) return Fetch(more->first, more->second);
    if (finish) done(error);
  }
};

}  // namespace

std::shared_ptr<FileWriter> MakeStreamingWriter(const WriterContext& context, std::string key,
                                                WriteOptions write_options,
                                                SettledCallback on_settled,
                                                std::shared_ptr<upload::StagedFile> mirror) {
  auto upload = upload::ObjectUpload::Make(context.client, context.gate, context.journal,
                                           std::move(key), context.options, write_options);
  if (on_settled) upload->OnOutcomeSettled(std::move(on_settled));
  return std::make_shared<StreamingWriter>(std::move(upload), std::move(mirror),
                                           context.max_stream_copy);
}

std::shared_ptr<FileWriter> MakeStagedWriter(const WriterContext& context, std::string key,
                                             WriteOptions write_options,
                                             std::shared_ptr<upload::StagedFile> file,
                                             SettledCallback on_settled,
                                             std::optional<ObjectInfo> existing) {
  return std::make_shared<StagedWriter>(context, std::move(key), write_options, std::move(file),
                                        std::move(on_settled), existing);
}

void FetchRanges(std::shared_ptr<ObjectClient> client, ObjectInfo source,
                 std::vector<std::pair<uint64_t, uint64_t>> ranges, uint64_t piece,
                 FetchedSink sink, std::function<void(Status)> done) {
  auto fetcher = std::make_shared<RangeFetcher>();
  fetcher->client = std::move(client);
  fetcher->source = std::move(source);
  fetcher->piece = piece;
  fetcher->sink = std::move(sink);
  fetcher->done = std::move(done);
  fetcher->Start(ranges);
}

}  // namespace ossmount::fs
