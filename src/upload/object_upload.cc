#include "upload/object_upload.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "upload/upload_metrics.h"

namespace ossmount::upload {
namespace {

constexpr int kMaxParts = 10000;
constexpr uint64_t kFirstBufferBytes = 64 << 10;

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
      write_options_(write_options),
      started_(std::chrono::steady_clock::now()) {
  Uploads().files_in_flight.Add(1);
}

ObjectUpload::~ObjectUpload() {
  // Bytes still held here (a handle dropped without Finish or Abort) leave the budget.
  uint64_t held = current_ ? current_->size() : 0;
  for (const Part& p : unsent_) held += p.data->size();
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

void ObjectUpload::AppendLocked(const char* data, size_t size, std::vector<Part>& sealed) {
  while (size > 0) {
    if (!current_) {
      current_ = std::make_shared<std::string>();
      current_limit_ = PartSizeFor(next_part_, options_.part_size);
      // The first part grows with the file, so a small file holds only what it wrote; a
      // file past its first part is large, and its next parts take their whole size at once
      // (pages are touched, and counted in the budget, only as bytes arrive).
      current_->reserve(next_part_ == 1 ? std::min<uint64_t>(current_limit_, kFirstBufferBytes)
                                        : current_limit_);
    }
    const size_t take =
        static_cast<size_t>(std::min<uint64_t>(size, current_limit_ - current_->size()));
    if (current_->size() + take > current_->capacity()) {
      current_->reserve(std::min<uint64_t>(
          current_limit_, std::max<uint64_t>(current_->capacity() * 2, current_->size() + take)));
    }
    current_->append(data, take);
    data += take;
    size -= take;
    size_ += take;
    if (current_->size() == current_limit_) SealLocked(sealed);
  }
}

void ObjectUpload::SealLocked(std::vector<Part>& sealed) {
  if (!current_ || current_->empty()) return;
  multipart_ = true;
  sealed.push_back(Part{next_part_++, std::move(current_)});
  current_.reset();
}

Status ObjectUpload::Append(const char* data, size_t size) {
  std::vector<Part> sealed;
  Status refused;
  {
    std::lock_guard lock(mu_);
    if (state_ == State::kFailed) {
      refused = error_;
    } else if (state_ != State::kWriting) {
      refused = Status(ErrorCode::kInvalidArgument,
                       "'" + key_ +
                           "' was already completed by close or fsync; it takes no more "
                           "writes (open it again with O_TRUNC to replace it)");
    } else if (next_part_ > kMaxParts) {
      refused = Status(ErrorCode::kTooBig, "'" + key_ + "' would need more than 10,000 parts");
    } else {
      AppendLocked(data, size, sealed);
    }
  }
  if (!refused.ok()) {
    if (refused.code() == ErrorCode::kTooBig) Fail(refused);
    return refused;
  }
  gate_->AddBuffered(size);
  SendParts(std::move(sealed));

  data::MemoryBudget& budget = *gate_->budget();
  if (budget.used() > budget.limit()) {
    // The budget is full. A writer holding enough of an unfinished part sends it early, so
    // that the memory of writers waiting for room is always on its way to being freed.
    std::vector<Part> early;
    {
      std::lock_guard lock(mu_);
      const uint64_t enough =
          std::max(options_.min_part_size, std::min(current_limit_, budget.limit() / 8));
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
      for (const Part& p : parts) dropped += p.data->size();
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
  client_->InitiateMultipart(key_, [self = shared_from_this()](Result<std::string> id) {
    self->OnInitiated(std::move(id));
  });
}

void ObjectUpload::OnInitiated(Result<std::string> id) {
  if (!id.ok()) return Fail(id.status());
  std::vector<Part> parts;
  {
    std::lock_guard lock(mu_);
    initiating_ = false;
    if (state_ == State::kFailed) {
      // Failed while the upload was being started: nobody will use it.
      client_->AbortMultipart(key_, *id, [](Status) {});
      return;
    }
    upload_id_ = *id;
    parts.swap(unsent_);
    parts_out_ += static_cast<int>(parts.size());
  }
  if (journal_) {
    Status recorded = journal_->Add(key_, *id);
    if (!recorded.ok()) {
      spdlog::warn(
          "upload of '{}': {} (a crash now would leave the upload for the bucket's "
          "lifecycle rule to remove)",
          key_, recorded.message());
    }
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
  const uint64_t bytes = part.data->size();
  gate_->Submit([self = shared_from_this(), id = std::move(id), part = std::move(part), bytes] {
    std::shared_ptr<const std::string> body = part.data;
    self->client_->UploadPart(self->key_, id, part.number, std::move(body),
                              [self, number = part.number, bytes](Result<PartInfo> r) {
                                self->OnPartDone(number, bytes, std::move(r));
                              });
  });
}

void ObjectUpload::OnPartDone(int number, uint64_t bytes, Result<PartInfo> r) {
  gate_->ReleaseBuffered(bytes);
  gate_->PartEnded();
  {
    std::lock_guard lock(mu_);
    --parts_out_;
    if (r.ok()) {
      PartInfo info = std::move(*r);
      info.part_number = number;
      info.size = bytes;
      done_parts_[number] = std::move(info);
    }
  }
  if (!r.ok()) return Fail(r.status());
  Uploads().bytes_uploaded.Add(bytes);
  Uploads().parts_uploaded.Add();
  CompleteIfReady();
}

void ObjectUpload::Finish(FinishCallback done) {
  std::vector<Part> sealed;
  std::shared_ptr<std::string> whole;
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
      whole = current_ ? std::move(current_) : std::make_shared<std::string>();
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

void ObjectUpload::PutWhole(std::shared_ptr<std::string> body) {
  const uint64_t bytes = body->size();
  gate_->Submit([self = shared_from_this(), body = std::move(body), bytes] {
    self->client_->Put(self->key_, body, self->write_options_, [self, bytes](Result<PutResult> r) {
      self->gate_->ReleaseBuffered(bytes);
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
  }
  const int count = static_cast<int>(parts.size());
  client_->CompleteMultipart(key_, id, std::move(parts), write_options_,
                             [self = shared_from_this(), count](Result<PutResult> r) {
                               self->OnCompleted(std::move(r), count);
                             });
}

void ObjectUpload::OnCompleted(Result<PutResult> r, int parts) {
  if (!r.ok()) return Fail(r.status());
  std::string id;
  {
    std::lock_guard lock(mu_);
    if (state_ != State::kFinishing) return;
    state_ = State::kDone;
    result_ = UploadedObject{size_, r->etag, r->crc64, parts};
    id = upload_id_;
  }
  if (journal_ && !id.empty()) journal_->Remove(id);
  Uploads().files_completed.Add();
  Uploads().file_seconds.Observe(std::chrono::steady_clock::now() - started_);
  Settle();
}

void ObjectUpload::Abort(Status why) { Fail(std::move(why)); }

void ObjectUpload::Fail(Status why) {
  std::string id;
  uint64_t held = 0;
  {
    std::lock_guard lock(mu_);
    if (state_ == State::kDone || state_ == State::kFailed) return;
    state_ = State::kFailed;
    error_ = why;
    id = upload_id_;
    if (current_) held += current_->size();
    for (const Part& p : unsent_) held += p.data->size();
    current_.reset();
    unsent_.clear();
  }
  if (held) gate_->ReleaseBuffered(held);
  Uploads().failed_uploads.Add();
  if (!id.empty()) {
    client_->AbortMultipart(key_, id, [journal = journal_, id, key = key_](Status s) {
      if (s.ok()) {
        if (journal) journal->Remove(id);
      } else {
        spdlog::warn("could not abort the failed upload of '{}': {}", key, s.message());
      }
    });
  }
  Settle();
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
