#include "upload/object_upload.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "common/crc64.h"
#include "upload/upload_metrics.h"

namespace ossmount::upload {
namespace {

constexpr int kMaxParts = 10000;

}  // namespace

std::shared_ptr<ObjectUpload> ObjectUpload::Make(std::shared_ptr<ObjectClient> client,
                                                 std::shared_ptr<UploadGate> gate,
                                                 std::shared_ptr<UploadJournal> journal,
                                                 std::string key, const UploadOptions& options,
                                                 WriteOptions write_options) {
  return std::shared_ptr<ObjectUpload>(new ObjectUpload(std::move(client), std::move(gate),
                                                        std::move(journal), std::move(key), options,
                                                        write_options));
}

ObjectUpload::ObjectUpload(std::shared_ptr<ObjectClient> client, std::shared_ptr<UploadGate> gate,
                           std::shared_ptr<UploadJournal> journal, std::string key,
                           const UploadOptions& options, WriteOptions write_options)
    : client_(std::move(client)),
      gate_(std::move(gate)),
      journal_(std::move(journal)),
      key_(std::move(key)),
      options_(options),
      user_meta_(write_options.user_meta),
      started_(std::chrono::steady_clock::now()) {
  forbid_overwrite_ = write_options.forbid_overwrite;
  Uploads().files_in_flight.Add(1);
}

ObjectUpload::~ObjectUpload() {
  // Bytes still held here (a handle dropped without Finish or Abort) leave the budget.
  uint64_t held = current_ ? current_->size() : 0;
  for (const Part& p : unsent_) held += p.data ? p.data->size() : 0;
  if (last_body_) held += last_body_->size();
  if (held) gate_->ReleaseBuffered(held);
  if (!upload_id_.empty() && state_ != State::kDone && state_ != State::kFailed) {
    client_->AbortMultipart(key_, upload_id_, [journal = journal_, id = upload_id_](Status s) {
      if (s.ok() && journal) journal->Remove(id);
    });
  }
  Uploads().files_in_flight.Add(-1);
}

uint64_t ObjectUpload::size() const {
  std::lock_guard lock(mu_);
  return size_;
}

Status ObjectUpload::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

uint64_t ObjectUpload::kept_bytes() const {
  std::lock_guard lock(mu_);
  return last_body_ ? last_body_->size() : 0;
}

bool ObjectUpload::active() const {
  std::lock_guard lock(mu_);
  return state_ == State::kWriting || state_ == State::kFinishing;
}

bool ObjectUpload::writing() const {
  std::lock_guard lock(mu_);
  return state_ == State::kWriting;
}

void ObjectUpload::ContinueLocked(std::vector<Part>& copies) {
  constexpr uint64_t kMaxCopyPart = 5ull << 30;
  const UploadedObject done = *result_;
  state_ = State::kWriting;
  result_.reset();
  completing_ = false;
  done_parts_.clear();
  upload_id_.clear();
  next_part_ = 1;
  if (done.parts == 0) {
    // A single-PUT object: its bytes are still here; they become the part being filled.
    multipart_ = false;
    current_ = std::move(last_body_);
    current_limit_ = PartSizeFor(1, options_.part_size);
    if (current_ && current_->size() >= current_limit_) SealLocked(copies);
    return;
  }
  // A multipart object: a new upload whose first parts are copies of it on the server.
  multipart_ = true;
  for (uint64_t offset = 0; offset < done.size; offset += kMaxCopyPart) {
    Part copy;
    copy.number = next_part_++;
    copy.copy_offset = offset;
    copy.copy_length = std::min(kMaxCopyPart, done.size - offset);
    copy.copy_etag = done.etag;
    copies.push_back(std::move(copy));
  }
}

Status ObjectUpload::AppendLocked(const char* data, size_t size, std::vector<Part>& sealed) {
  while (size > 0) {
    if (!current_) {
      if (next_part_ > kMaxParts) {
        return Status(ErrorCode::kTooBig, "'" + key_ + "' would need more than 10,000 parts");
      }
      current_limit_ = PartSizeFor(next_part_, options_.part_size);
      // The first part grows with the file, so a small file holds only what it wrote; a
      // file past its first part is large, and its next parts are mapped whole at once
      // (pages are touched, and counted in the budget, only as bytes arrive).
      current_ = std::make_shared<PartBuffer>(current_limit_, /*grows=*/next_part_ == 1);
    }
    const size_t take =
        static_cast<size_t>(std::min<uint64_t>(size, current_limit_ - current_->size()));
    current_->Append(data, take);
    data += take;
    size -= take;
    size_ += take;
    if (current_->size() == current_limit_) SealLocked(sealed);
  }
  return Status::Ok();
}

void ObjectUpload::SealLocked(std::vector<Part>& sealed) {
  if (!current_ || current_->empty()) return;
  multipart_ = true;
  Part part;
  part.number = next_part_++;
  part.data = std::move(current_);
  sealed.push_back(std::move(part));
  current_.reset();
}

ObjectUpload::PartBounds ObjectUpload::NextPart() const {
  std::lock_guard lock(mu_);
  PartBounds bounds;
  if (current_ && current_->size() < current_limit_) {
    bounds.start = size_ - current_->size();
    bounds.end = bounds.start + current_limit_;
  } else {
    bounds.start = size_;
    bounds.end = size_ + PartSizeFor(next_part_, options_.part_size);
  }
  return bounds;
}

Status ObjectUpload::AppendCopy(uint64_t source_offset, uint64_t length,
                                const std::string& source_etag) {
  std::vector<Part> sealed;
  {
    std::lock_guard lock(mu_);
    if (state_ == State::kFailed) return error_;
    if (state_ != State::kWriting || (current_ && !current_->empty()) || length == 0 ||
        length > max_copy_part()) {
      return Status(ErrorCode::kInvalidArgument,
                    "'" + key_ + "': a part copy must start a part and fit one copy request");
    }
    if (next_part_ > kMaxParts) {
      return Status(ErrorCode::kTooBig, "'" + key_ + "' would need more than 10,000 parts");
    }
    current_.reset();
    multipart_ = true;
    Part copy;
    copy.number = next_part_++;
    copy.copy_offset = source_offset;
    copy.copy_length = length;
    copy.copy_etag = source_etag;
    size_ += length;
    sealed.push_back(std::move(copy));
  }
  SendParts(std::move(sealed));
  return Status::Ok();
}

Status ObjectUpload::Append(const char* data, size_t size) {
  std::vector<Part> sealed;
  Status refused;
  uint64_t appended = 0;
  {
    std::lock_guard lock(mu_);
    if (state_ == State::kDone) ContinueLocked(sealed);
    if (state_ == State::kFailed) {
      refused = error_;
    } else if (state_ != State::kWriting) {
      refused = Status(ErrorCode::kInvalidArgument,
                       "'" + key_ +
                           "' is being completed by a close or fsync; write after it "
                           "returns");
    } else {
      const uint64_t before = size_;
      refused = AppendLocked(data, size, sealed);
      appended = size_ - before;
    }
  }
  if (appended) gate_->AddBuffered(appended);
  if (!refused.ok()) {
    SendParts(std::move(sealed));
    if (refused.code() == ErrorCode::kTooBig) Fail(refused);
    return refused;
  }
  SendParts(std::move(sealed));

  data::MemoryBudget& budget = *gate_->budget();
  if (budget.used() > budget.limit()) {
    // The budget is full. A writer holding enough of an unfinished part sends it early, so
    // that the memory of writers waiting for room is always on its way to being freed.
    std::vector<Part> early;
    {
      std::lock_guard lock(mu_);
      const uint64_t enough =
          std::max(options_.min_part_size, std::min(current_limit_, budget.limit() / 64));
      if (state_ == State::kWriting && current_ && current_->size() >= enough) SealLocked(early);
    }
    SendParts(std::move(early));
  }
  return Status::Ok();
}

void ObjectUpload::WhenWritable(std::function<void()> resume) {
  gate_->WaitForRoom(std::move(resume));
}

void ObjectUpload::SendParts(std::vector<Part> parts) {
  if (parts.empty()) return;
  bool initiate = false;
  uint64_t dropped = 0;
  {
    std::lock_guard lock(mu_);
    if (state_ == State::kFailed) {
      for (const Part& p : parts) dropped += p.data ? p.data->size() : 0;
      parts.clear();
    } else if (upload_id_.empty()) {
      for (Part& p : parts) unsent_.push_back(std::move(p));
      initiate = !initiating_;
      initiating_ = true;
      parts.clear();
    } else {
      parts_out_ += static_cast<int>(parts.size());
    }
  }
  if (dropped) gate_->ReleaseBuffered(dropped);
  if (initiate) {
    StartMultipart();
    return;
  }
  for (Part& p : parts) SendPart(std::move(p));
}

void ObjectUpload::StartMultipart() {
  // Through the gate, as a part: parts sealed before the upload id arrives are then on their
  // way in the gate's eyes, so writers wait for them instead of buffering the whole file.
  gate_->Submit([self = shared_from_this()] {
    WriteOptions with_meta;
    with_meta.user_meta = self->user_meta_;
    self->client_->InitiateMultipartWith(self->key_, with_meta, [self](Result<std::string> id) {
      self->OnInitiated(std::move(id));
      self->gate_->PartEnded();
    });
  });
}

void ObjectUpload::OnInitiated(Result<std::string> id) {
  if (!id.ok()) return Fail(id.status());
  // Recorded before the first part is sent. An upload that cannot be recorded is refused: a
  // crash would leave it behind where no remount looks.
  const Status recorded = journal_ ? journal_->Add(key_, *id) : Status::Ok();
  std::vector<Part> parts;
  {
    std::unique_lock lock(mu_);
    initiating_ = false;
    if (state_ == State::kFailed) {
      lock.unlock();
      // Failed while the upload was being started: nobody will use it.
      // Holding the upload, which counts as in flight until the abort is answered.
      client_->AbortMultipart(
          key_, *id, [self = shared_from_this(), id = *id, recorded = recorded.ok()](Status s) {
            if (s.ok() && recorded && self->journal_) self->journal_->Remove(id);
          });
      return;
    }
    upload_id_ = *id;
    if (recorded.ok()) {
      parts.swap(unsent_);
      parts_out_ += static_cast<int>(parts.size());
    }
  }
  if (!recorded.ok()) {
    return Fail(Status(ErrorCode::kNoSpace,
                       "cannot record the upload of '" + key_ + "' in the upload journal (" +
                           recorded.message() +
                           "); the save is refused, since a crash would leave its multipart "
                           "upload where no remount aborts it: free room there or set "
                           "--upload-journal"));
  }
  for (Part& p : parts) SendPart(std::move(p));
  CompleteIfReady();
}

void ObjectUpload::SendPart(Part part) {
  std::string id;
  {
    std::lock_guard lock(mu_);
    id = upload_id_;
  }
  const uint64_t bytes = part.bytes();
  gate_->Submit([self = shared_from_this(), id = std::move(id), part = std::move(part), bytes] {
    auto done = [self, number = part.number, bytes, copy = !part.data](Result<PartInfo> r) {
      self->OnPartDone(number, copy ? 0 : bytes, std::move(r));
    };
    if (!part.data) {
      self->client_->UploadPartCopy(self->key_, id, part.number, self->key_, part.copy_etag,
                                    part.copy_offset, part.copy_length, std::move(done));
      return;
    }
    self->client_->UploadPart(self->key_, id, part.number, PartBuffer::Share(part.data),
                              std::move(done));
  });
}

void ObjectUpload::OnPartDone(int number, uint64_t bytes, Result<PartInfo> r) {
  if (bytes) gate_->ReleaseBuffered(bytes);
  gate_->PartEnded();
  {
    std::lock_guard lock(mu_);
    --parts_out_;
    if (r.ok()) {
      PartInfo info = std::move(*r);
      info.part_number = number;
      if (bytes) info.size = bytes;  // a copy's size is the client's answer
      done_parts_[number] = std::move(info);
    }
  }
  if (!r.ok()) {
    if (r.status().service().code == "NoSuchUpload") {
      // Not a missing file: the server forgot the upload (aborted by another process, or lost
      // in a restart), and with it every part sent so far.
      return Fail(Status(ErrorCode::kServerError,
                         "the server no longer knows the multipart upload of '" + key_ +
                             "' (aborted elsewhere, or lost when the server restarted): the "
                             "parts sent so far are gone"));
    }
    return Fail(r.status());
  }
  Uploads().bytes_uploaded.Add(bytes);
  Uploads().parts_uploaded.Add();
  CompleteIfReady();
}

void ObjectUpload::Finish(FinishCallback done) {
  std::vector<Part> sealed;
  std::shared_ptr<PartBuffer> whole;
  {
    std::unique_lock lock(mu_);
    switch (state_) {
      case State::kDone: {
        UploadedObject object = *result_;
        lock.unlock();
        return done(object);
      }
      case State::kFailed: {
        Status error = error_;
        lock.unlock();
        return done(error);
      }
      case State::kFinishing:
        finish_waiters_.push_back(std::move(done));
        return;
      case State::kWriting:
        break;
    }
    state_ = State::kFinishing;
    finish_waiters_.push_back(std::move(done));
    if (!multipart_) {
      whole = current_ ? std::move(current_)
                       : std::make_shared<PartBuffer>(PartSizeFor(1, options_.part_size),
                                                      /*grows=*/true);
      current_.reset();
      completing_ = true;
    } else {
      SealLocked(sealed);
    }
  }
  if (whole) return PutWhole(std::move(whole));
  SendParts(std::move(sealed));
  CompleteIfReady();
}

void ObjectUpload::PutWhole(std::shared_ptr<PartBuffer> body) {
  const uint64_t bytes = body->size();
  gate_->Submit([self = shared_from_this(), body = std::move(body), bytes] {
    self->client_->Put(self->key_, PartBuffer::Share(body), self->CompletionOptions(),
                       [self, body, bytes](Result<PutResult> r) {
                         if (r.ok()) {
                           // Kept (still counted) in case bytes follow the completion.
                           std::lock_guard lock(self->mu_);
                           self->last_body_ = body;
                         } else {
                           self->gate_->ReleaseBuffered(bytes);
                         }
                         self->gate_->PartEnded();
                         if (r.ok()) {
                           Uploads().bytes_uploaded.Add(bytes);
                           Uploads().parts_uploaded.Add();
                         }
                         self->OnCompleted(std::move(r), 0);
                       });
  });
}

void ObjectUpload::CompleteIfReady() {
  std::string id;
  std::vector<PartInfo> parts;
  {
    std::lock_guard lock(mu_);
    if (state_ != State::kFinishing || completing_ || initiating_ || upload_id_.empty() ||
        parts_out_ > 0 || !unsent_.empty()) {
      return;
    }
    completing_ = true;
    id = upload_id_;
    parts.reserve(done_parts_.size());
    for (auto& [number, info] : done_parts_) parts.push_back(info);
    // The CRC-64 the completed object will have, to recognise it at the key later.
    completed_crc_ = uint64_t{0};
    for (const PartInfo& part : parts) {
      if (!part.crc64) {
        completed_crc_.reset();
        break;
      }
      *completed_crc_ = Crc64Combine(*completed_crc_, *part.crc64, part.size);
    }
  }
  const int count = static_cast<int>(parts.size());
  client_->CompleteMultipart(key_, id, std::move(parts), CompletionOptions(),
                             [self = shared_from_this(), count](Result<PutResult> r) {
                               self->OnCompleted(std::move(r), count);
                             });
}

void ObjectUpload::OnCompleted(Result<PutResult> r, int parts) {
  if (!r.ok()) {
    const ErrorCode code = r.status().code();
    if (code == ErrorCode::kTimeout || code == ErrorCode::kNetwork) {
      std::lock_guard lock(mu_);
      outcome_unknown_ = true;
    }
    return Fail(r.status());
  }
  std::string id;
  {
    std::lock_guard lock(mu_);
    if (state_ != State::kFinishing) return;
    state_ = State::kDone;
    result_ = UploadedObject{size_, r->etag, r->crc64, parts, ++completions_};
    // The name is this upload's now: a later completion (bytes written after an fsync)
    // replaces its own object.
    forbid_overwrite_ = false;
    id = upload_id_;
  }
  if (journal_ && !id.empty()) journal_->Remove(id);
  Uploads().files_completed.Add();
  Uploads().file_seconds.Observe(std::chrono::steady_clock::now() - started_);
  Settle();
}

void ObjectUpload::Abort(Status why) { Fail(std::move(why)); }

void ObjectUpload::Withdraw(Status why) { Fail(std::move(why), /*counted=*/false); }

bool ObjectUpload::Surrender(std::string* bytes, Status why) {
  uint64_t held = 0;
  {
    std::lock_guard lock(mu_);
    if (state_ == State::kDone && result_ && result_->parts == 0 && last_body_) {
      // A completed single-PUT object: its bytes are all still here.
    } else if (state_ != State::kWriting || multipart_ || initiating_ || !upload_id_.empty()) {
      return false;
    }
    const std::shared_ptr<PartBuffer>& source = state_ == State::kDone ? last_body_ : current_;
    bytes->assign(source ? source->view() : std::string_view());
    if (current_) held += current_->size();
    if (last_body_) held += last_body_->size();
    current_.reset();
    last_body_.reset();
    state_ = State::kFailed;
    error_ = std::move(why);
  }
  if (held) gate_->ReleaseBuffered(held);
  Settle();
  return true;
}

WriteOptions ObjectUpload::CompletionOptions() const {
  std::lock_guard lock(mu_);
  WriteOptions options;
  options.forbid_overwrite = forbid_overwrite_;
  options.user_meta = user_meta_;
  return options;
}

bool ObjectUpload::outcome_unknown() const {
  std::lock_guard lock(mu_);
  return outcome_unknown_;
}

bool ObjectUpload::outcome_will_settle() const {
  std::lock_guard lock(mu_);
  return outcome_unknown_ && !upload_id_.empty();
}

void ObjectUpload::OnOutcomeSettled(std::function<void(std::optional<ObjectInfo>)> settled) {
  std::lock_guard lock(mu_);
  outcome_settled_ = std::move(settled);
}

void ObjectUpload::Fail(Status why, bool counted) {
  std::string id;
  uint64_t held = 0;
  {
    std::lock_guard lock(mu_);
    if (state_ == State::kDone || state_ == State::kFailed) return;
    state_ = State::kFailed;
    error_ = why;
    id = upload_id_;
    if (current_) held += current_->size();
    for (const Part& p : unsent_) held += p.data ? p.data->size() : 0;
    if (last_body_) held += last_body_->size();
    current_.reset();
    unsent_.clear();
    last_body_.reset();
  }
  if (held) gate_->ReleaseBuffered(held);
  if (counted) Uploads().failed_uploads.Add();
  if (!id.empty()) {
    // The callback holds the upload: it counts as in flight (files_in_flight, which the
    // daemon waits for at exit) until the abort is answered.
    client_->AbortMultipart(key_, id,
                            [self = shared_from_this(), id](Status s) { self->OnAborted(id, s); });
  }
  Settle();
}

void ObjectUpload::OnAborted(const std::string& id, const Status& s) {
  bool unknown = false;
  {
    std::lock_guard lock(mu_);
    unknown = outcome_unknown_;
  }
  if (s.ok() && journal_) journal_->Remove(id);
  if (!s.ok()) {
    spdlog::warn("could not abort the failed upload of '{}': {}{}", key_, s.message(),
                 unknown ? "; whether the server applies the CompleteMultipartUpload it did not "
                           "answer stays unknown until the next mount with this upload journal "
                           "aborts it"
                         : "");
    return;
  }
  if (!unknown) return;
  // Aborted (or found gone): the unanswered Complete can no longer apply. What is at the key
  // says whether it did.
  client_->Head(key_, [self = shared_from_this()](Result<ObjectInfo> found) {
    self->SettleUnknownOutcome(found);
  });
}

void ObjectUpload::SettleUnknownOutcome(const Result<ObjectInfo>& found) {
  std::function<void(std::optional<ObjectInfo>)> settled;
  uint64_t size = 0;
  std::optional<uint64_t> crc;
  {
    std::lock_guard lock(mu_);
    settled = outcome_settled_;
    size = size_;
    crc = completed_crc_;
  }
  if (!found.ok() && found.status().code() != ErrorCode::kNotFound) {
    spdlog::warn(
        "'{}': the upload is aborted, but what its unanswered CompleteMultipartUpload "
        "left is unknown: {}",
        key_, found.status().message());
    return;
  }
  const bool ours = found.ok() && found->size == size && crc && found->crc64 == crc;
  if (found.ok() && !ours && (!crc || !found->crc64)) {
    spdlog::warn(
        "'{}': the upload is aborted; the object there has no CRC-64 to tell whether "
        "the CompleteMultipartUpload the server did not answer made it",
        key_);
    return;
  }
  if (ours) {
    spdlog::warn(
        "'{}': the server applied the CompleteMultipartUpload it did not answer: the "
        "object holds exactly the {} bytes written, although its close failed",
        key_, size);
  } else {
    spdlog::info(
        "'{}': the upload is aborted and the CompleteMultipartUpload the server did not "
        "answer was not applied: nothing was written under its key",
        key_);
  }
  if (settled) settled(ours ? std::optional<ObjectInfo>(*found) : std::nullopt);
}

void ObjectUpload::Settle() {
  std::vector<FinishCallback> waiters;
  Result<UploadedObject> answer = Status(ErrorCode::kInternal, "unsettled upload");
  {
    std::lock_guard lock(mu_);
    if (state_ == State::kDone) {
      answer = *result_;
    } else if (state_ == State::kFailed) {
      answer = error_;
    } else {
      return;
    }
    waiters.swap(finish_waiters_);
  }
  for (auto& w : waiters) w(answer);
}

}  // namespace ossmount::upload
