#include "fs/write_service.h"

#include <linux/falloc.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>

#include "common/thread_group.h"
#include "common/time_util.h"
#include "fs/audit.h"
#include "meta/key_mapping.h"
#include "upload/object_copy.h"

namespace ossmount::fs {
namespace {

// Pieces a staged copy of an existing object is loaded in.

}  // namespace

WriteService::WriteService(boost::asio::any_io_executor executor,
                           std::shared_ptr<ObjectClient> client,
                           std::shared_ptr<data::MemoryBudget> budget, const FsOptions& options,
                           std::shared_ptr<ListingService> listings,
                           std::shared_ptr<OpenFiles> open_files)
    : options_(options),
      executor_(std::move(executor)),
      client_(std::move(client)),
      gate_(std::make_shared<upload::UploadGate>(std::move(budget),
                                                 options.writes.upload.max_parts_in_flight)),
      listings_(std::move(listings)),
      open_files_(std::move(open_files)) {}

void WriteService::SetJournal(std::shared_ptr<upload::UploadJournal> journal) {
  std::lock_guard lock(config_mu_);
  journal_ = std::move(journal);
}

void WriteService::SetStaging(std::shared_ptr<upload::StagingArea> staging) {
  std::lock_guard lock(config_mu_);
  staging_ = std::move(staging);
}

bool WriteService::staging() const {
  std::lock_guard lock(config_mu_);
  return staging_ != nullptr;
}

bool WriteService::appends() const {
  return options_.writes.append_interval.has_value() && client_->Appends();
}

WriterContext WriteService::Context() const {
  std::lock_guard lock(config_mu_);
  return WriterContext{executor_,
                       client_,
                       gate_,
                       journal_,
                       options_.writes.upload,
                       options_.writes.max_stream_copy,
                       part_copies_refused_};
}

std::function<void(std::optional<ObjectInfo>)> WriteService::Settler(
    std::weak_ptr<WriteHandle> handle) {
  // A failed close whose Complete went unanswered: once the upload learns whether the
  // server applied it, this mount shows what is at the key.
  // The settling (an abort, then a HEAD) often ends after the handle was released: the path
  // it had then is the one to record.
  auto h = handle.lock();
  std::string last_path = h ? h->path() : std::string();
  return [weak = weak_from_this(), handle = std::move(handle),
          last_path = std::move(last_path)](std::optional<ObjectInfo> made) {
    auto self = weak.lock();
    if (!self || !made) return;
    auto h = handle.lock();
    const std::string path = h ? h->path() : last_path;
    if (path.empty()) return;
    self->listings_->cache().RecordChange(path, meta::FileAttrFrom(*made));
  };
}

Result<std::shared_ptr<WriteHandle>> WriteService::NewHandle(InodeId ino, const std::string& path,
                                                             const Caller& caller,
                                                             const Kind& kind) {
  auto handle = std::make_shared<WriteHandle>();
  handle->ino = ino;
  handle->SetPath(path, meta::FileKey(options_.prefix, path));
  handle->opener = caller;
  handle->opener.pid = static_cast<uint32_t>(ProcessOfThread(static_cast<int>(caller.pid)));
  handle->may_write = kind.may_write;
  handle->replaces = kind.replaces;
  handle->created = kind.created;
  if (!kind.may_write) return handle;
  WriteOptions wo;
  // A name the server said was free must still be free when the file is completed: a name
  // another client took meanwhile fails the close with EEXIST instead of being replaced.
  // So must every name without --allow-overwrite.
  wo.forbid_overwrite = kind.must_be_new || !options_.writes.allow_overwrite;
  if (options_.posix_metadata) {
    // A new version carries the mode and owner of the one it replaces, or those ossfs and
    // s3fs give a new file, and the time it is written.
    meta::PosixAttrs attrs;
    attrs.mode = S_IFREG | (options_.file_mode & 07777);
    attrs.uid = caller.uid;
    attrs.gid = caller.gid;
    if (kind.keep_posix) attrs = meta::MergePosix(attrs, *kind.keep_posix);
    attrs.mtime_sec = UnixSecondsNow();
    wo.user_meta = meta::WithPosix({}, attrs);
    handle->posix_base = attrs;
  }
  const WriterContext context = Context();
  std::shared_ptr<upload::StagingArea> staging;
  {
    std::lock_guard lock(config_mu_);
    staging = staging_;
  }
  if (kind.append && appends()) {
    // A log: each append shows in the object at once, for every reader of the bucket.
    const AppendStart start = kind.append_start.value_or(AppendStart{});
    handle->SetWriter(MakeAppendingWriter(
        context, handle->key(), start, *options_.writes.append_interval,
        [weak = weak_from_this(),
         weak_handle = std::weak_ptr<WriteHandle>(handle)](const AppendResult& r) {
          auto self = weak.lock();
          auto h = weak_handle.lock();
          if (!self || !h) return;
          meta::NodeAttr attr;
          attr.size = r.next_position;
          attr.mtime_sec = UnixSecondsNow();
          attr.etag = r.etag;
          attr.crc64 = r.crc64;
          attr.appendable = true;
          self->listings_->cache().RecordChange(h->path(), attr);
        }));
    return handle;
  }
  if (kind.existing) {
    // An existing object changed in place: a staged copy, loaded before its first change.
    if (!staging) {
      handle->may_write = false;
      return handle;
    }
    auto file = staging->Create();
    if (!file.ok()) return file.status();
    handle->SetWriter(
        MakeStagedWriter(context, handle->key(), wo, *file, Settler(handle), kind.existing));
    if (kind.existing->size > 0) handle->load_from = kind.existing;
    return handle;
  }
  // A new file streams; with a staging area it also keeps a local copy while there is room,
  // so a later out-of-order write can move it to staging whatever went up already.
  std::shared_ptr<upload::StagedFile> mirror;
  if (staging) {
    if (auto file = staging->Create(); file.ok()) mirror = std::move(*file);
  }
  handle->SetWriter(MakeStreamingWriter(context, handle->key(), wo, Settler(handle), mirror));
  return handle;
}

Status WriteService::TakeOwnership(const std::shared_ptr<WriteHandle>& handle) {
  std::lock_guard lock(owners_mu_);
  auto& slot = owners_[handle->path()];
  auto current = slot.lock();
  if (current && !current->released.load(std::memory_order_acquire)) {
    return Busy(*current, "opening '" + handle->path() + "' for writing");
  }
  slot = handle;
  return Status::Ok();
}

void WriteService::DropOwnership(const WriteHandle& handle) {
  std::lock_guard lock(owners_mu_);
  auto it = owners_.find(handle.path());
  if (it != owners_.end() && it->second.lock().get() == &handle) owners_.erase(it);
}

uint64_t WriteService::Register(std::shared_ptr<WriteHandle> handle) {
  const uint64_t fh = next_fh_.fetch_add(1, std::memory_order_relaxed);
  if (records_)
    records_->Opened(fh, HandleRecord::Of(HandleRecord::Kind::kWrite, handle->ino, handle->path()));
  handles_.Insert(fh, std::move(handle));
  return fh;
}

void WriteService::RestoreLost(const std::vector<uint64_t>& fhs) {
  std::lock_guard lock(lost_mu_);
  for (uint64_t fh : fhs) {
    lost_.insert(fh);
    if (fh >= next_fh_.load()) next_fh_.store(fh + 1);
  }
  if (!lost_.empty()) any_lost_.store(true);
}

Status WriteService::CheckLost(uint64_t fh) const {
  if (!any_lost_.load(std::memory_order_relaxed)) return Status::Ok();
  std::lock_guard lock(lost_mu_);
  if (lost_.count(fh) == 0) return Status::Ok();
  return Status(ErrorCode::kInternal,
                "this file was open for writing in a daemon process that died; what it held "
                "of the file (and its upload) died with it, and nothing of it was saved");
}

std::shared_ptr<WriteHandle> WriteService::OwnerOf(const std::string& path) const {
  std::lock_guard lock(owners_mu_);
  auto it = owners_.find(path);
  if (it == owners_.end()) return nullptr;
  auto handle = it->second.lock();
  if (!handle || handle->released.load(std::memory_order_acquire)) return nullptr;
  return handle;
}

std::shared_ptr<WriteHandle> WriteService::WritingOn(InodeId ino) const {
  return handles_.FindIf([ino](const WriteHandle& h) {
    return h.ino == ino && h.may_write && !h.released.load(std::memory_order_acquire);
  });
}

bool WriteService::OwnsUnder(const std::string& dir) const {
  const std::string under = dir + "/";
  std::lock_guard lock(owners_mu_);
  for (const auto& [p, w] : owners_) {
    if (p.compare(0, under.size(), under) != 0) continue;
    auto handle = w.lock();
    if (handle && !handle->released.load(std::memory_order_acquire)) return true;
  }
  return false;
}

Status WriteService::Busy(const WriteHandle& owner, const std::string& what) {
  const bool leaving = owner.closing.load(std::memory_order_acquire) ||
                       owner.releasing.load(std::memory_order_acquire);
  return Status(ErrorCode::kBusy,
                what + ": '" + owner.path() +
                    "' is open for writing on this mount; it stays its writer's until closed",
                /*retryable=*/leaving);
}

std::vector<std::shared_ptr<WriteHandle>> WriteService::WritingIn(const std::string& dir) const {
  std::vector<std::shared_ptr<WriteHandle>> writing;
  std::lock_guard lock(owners_mu_);
  for (const auto& [path, weak] : owners_) {
    if (meta::SplitPath(path).first != dir) continue;
    auto handle = weak.lock();
    if (!handle || handle->released.load(std::memory_order_acquire)) continue;
    auto writer = handle->writer();
    if (writer && writer->active()) writing.push_back(handle);
  }
  return writing;
}

uint64_t WriteService::Size(const WriteHandle& handle) {
  auto writer = handle.writer();
  if (!writer) return 0;
  std::lock_guard lock(handle.mu);
  // A staged copy not loaded yet is the object it was opened on.
  if (handle.load_from) return std::max(writer->size(), handle.load_from->size);
  return writer->size();
}

void WriteService::WhenLoaded(const std::shared_ptr<WriteHandle>& handle,
                              std::function<void(Status)> then) {
  // The staged file takes the object's size; its bytes are fetched only where a read or the
  // upload of a changed part needs them (FileWriter::StartFrom). Done once, under the handle's
  // lock, so a second operation finds it done; after a failed start the writer holds the error.
  Status started;
  {
    std::lock_guard lock(handle->mu);
    if (handle->load_from) {
      started = handle->writer()->StartFrom(*handle->load_from);
      handle->load_from.reset();
    }
  }
  if (!started.ok()) {
    started.Prefix("staging '" + handle->path() + "' to change it in place");
    spdlog::error("{}", started.message());
    handle->writer()->Abort(started);
  }
  then(started);
}

Status WriteService::Restage(const std::shared_ptr<WriteHandle>& handle) {
  auto writer = handle->writer();
  if (writer->staged_file()) return Status::Ok();  // staged already
  std::shared_ptr<upload::StagingArea> staging;
  {
    std::lock_guard lock(config_mu_);
    staging = staging_;
  }
  if (!staging) {
    return Status(ErrorCode::kNotSupported,
                  "'" + handle->path() +
                      "' is streamed to the bucket as it is written, and no staging directory "
                      "(--staging-dir) can hold a copy to change it out of order");
  }
  // The new writer completes the name as the old one would have: a file it completed before
  // (an fsync) is its own, so a later completion replaces it plainly.
  WriteOptions wo;
  wo.forbid_overwrite = !options_.writes.allow_overwrite ||
                        (handle->created && handle->recorded_completion.load() == 0);
  if (std::shared_ptr<upload::StagedFile> copy = writer->TakeCopy()) {
    handle->SetWriter(
        MakeStagedWriter(Context(), handle->key(), wo, copy, Settler(handle), std::nullopt),
        handle->recorded_completion.load());
    spdlog::debug("'{}' moved to its staged copy ({} bytes)", handle->path(), copy->size());
    return Status::Ok();
  }
  auto file = staging->Create();
  if (!file.ok()) return file.status();
  std::optional<std::string> bytes = writer->TakeBytes();
  if (!bytes) {
    return Status(ErrorCode::kNotSupported,
                  "'" + handle->path() + "' was streamed to the bucket as it was written and " +
                      "its first parts are gone from memory, with no local copy (the staging "
                      "directory's budget, --max-staging-size, was full)");
  }
  if (!bytes->empty()) {
    Status copied = (*file)->Write(0, bytes->data(), bytes->size());
    if (!copied.ok()) return copied;
  }
  // Room posix_fallocate gave the streamed file past its bytes.
  if (writer->size() > bytes->size()) {
    Status reserved = (*file)->Truncate(writer->size());
    if (!reserved.ok()) return reserved;
  }
  handle->SetWriter(
      MakeStagedWriter(Context(), handle->key(), wo, *file, Settler(handle), std::nullopt),
      handle->recorded_completion.load());
  spdlog::debug("'{}' moved to a staged copy ({} bytes)", handle->path(), bytes->size());
  return Status::Ok();
}

void WriteService::Write(uint64_t fh, uint64_t offset, const char* data, size_t size,
                         Callback<size_t> done) {
  if (Status lost = CheckLost(fh); !lost.ok()) return done(lost);
  std::shared_ptr<WriteHandle> handle = handles_.Find(fh);
  if (!handle) {
    return done(Status(ErrorCode::kInvalidArgument,
                       "handle " + std::to_string(fh) + " is not open for writing"));
  }
  if (!handle->may_write) {
    return done(Status(ErrorCode::kNotSupported,
                       "'" + handle->path() +
                           "' exists and no staging directory (--staging-dir) can hold a copy "
                           "to change it in place; open it with O_TRUNC to rewrite it"));
  }
  Status written;
  std::shared_ptr<FileWriter> writer;
  {
    std::lock_guard lock(handle->mu);
    if (!handle->load_from) {
      writer = handle->writer();
      written = writer->Write(offset, data, size);
      if (written.code() == ErrorCode::kNotSupported) {
        // Out of order: the file moves to a staged copy, if it can, and takes the write there.
        Status restaged = Restage(handle);
        if (restaged.ok()) {
          writer = handle->writer();
          written = writer->Write(offset, data, size);
        } else {
          written = restaged;
          writer->Abort(written);  // as before staging: the upload cannot go on
        }
      }
    }
  }
  if (!writer || written.code() == ErrorCode::kBusy) {
    // The staged copy waits for the object's bytes, or a completion is reading it: the
    // write goes on after that (its bytes are copied now, before this returns).
    auto copy = std::make_shared<std::string>(data, size);
    auto retry = [self = shared_from_this(), fh, offset, copy,
                  done = std::move(done)](Status ready) mutable {
      if (!ready.ok()) return done(ready);
      self->Write(fh, offset, copy->data(), copy->size(), std::move(done));
    };
    if (!writer) return WhenLoaded(handle, std::move(retry));
    return writer->WhenIdle([retry = std::move(retry)]() mutable { retry(Status::Ok()); });
  }
  if (!written.ok()) {
    spdlog::error("{}", written.message());
    return done(written);
  }
  handle->closing.store(false, std::memory_order_release);  // written again after a close
  writer->WhenWritable([size, done = std::move(done)] { done(size); });
}

void WriteService::Read(uint64_t fh, uint64_t offset, size_t size, Callback<ReadReply> done) {
  if (Status lost = CheckLost(fh); !lost.ok()) return done(lost);
  std::shared_ptr<WriteHandle> handle = handles_.Find(fh);
  if (!handle) handle = readers_.Find(fh);
  if (!handle) {
    return done(Status(ErrorCode::kInvalidArgument,
                       "handle " + std::to_string(fh) + " is not open on a file being written"));
  }
  if (!handle->may_write) {
    return done(Status(ErrorCode::kNotSupported,
                       "reading '" + handle->path() +
                           "' through a descriptor open for writing needs a staging directory "
                           "(--staging-dir); open it again for reading"));
  }
  WhenLoaded(handle, [self = shared_from_this(), handle, offset, size,
                      done = std::move(done)](Status loaded) {
    if (!loaded.ok()) return done(loaded);
    Status staged;
    {
      std::lock_guard lock(handle->mu);
      staged = self->Restage(handle);
    }
    if (!staged.ok()) return done(staged);
    std::shared_ptr<FileWriter> writer = handle->writer();
    writer->Fetch(offset, size, [writer, offset, size, done = std::move(done)](Status fetched) {
      if (!fetched.ok()) return done(fetched);
      auto buffer = std::make_shared<std::string>(size, '\0');
      Result<size_t> got = writer->Read(offset, buffer->data(), size);
      if (!got.ok()) return done(got.status());
      buffer->resize(*got);
      done(ReadReply{buffer->data(), buffer->size(), buffer});
    });
  });
}

Result<uint64_t> WriteService::OpenReader(const std::shared_ptr<WriteHandle>& owner) {
  Status staged;
  if (owner->may_write) {
    std::lock_guard lock(owner->mu);
    staged = Restage(owner);
  }
  if (!owner->may_write || !staged.ok()) {
    return Status(ErrorCode::kBusy,
                  "opening '" + owner->path() +
                      "' for reading: it is open for writing on this mount and streamed to the "
                      "bucket, so it can be read once closed" +
                      (staged.ok() ? std::string() : " (" + staged.message() + ")"),
                  /*retryable=*/owner->closing.load() || owner->releasing.load());
  }
  const uint64_t fh = next_fh_.fetch_add(1, std::memory_order_relaxed);
  if (records_)
    records_->Opened(fh, HandleRecord::Of(HandleRecord::Kind::kWrite, owner->ino, owner->path()));
  readers_.Insert(fh, owner);
  return fh;
}

void WriteService::Flush(uint64_t fh, const Caller& caller, StatusCallback done) {
  if (Status lost = CheckLost(fh); !lost.ok()) return done(lost);
  std::shared_ptr<WriteHandle> handle = handles_.Find(fh);
  if (!handle) return done(Status::Ok());  // a read handle: nothing to do
  // A close in another process (a child that inherited the descriptor, or closed it before
  // exec) does not end the file its parent is still writing; the opener's close, an fsync
  // or the last release does.
  // (FUSE names the calling thread: a close in another thread of the opener is its own.)
  if (handle->opener.pid != 0 && caller.pid != 0 &&
      static_cast<uint32_t>(ProcessOfThread(static_cast<int>(caller.pid))) != handle->opener.pid) {
    return done(Status::Ok());
  }
  handle->closing.store(true, std::memory_order_release);
  // A close before the first write of an O_TRUNC rewrite does not replace the old object
  // with an empty one either (a shell's `> file` closes the original descriptor after dup2,
  // before writing): that waits for the release. A new file is completed, empty, at once, so
  // that a rename right after `touch` finds it complete; bytes written after a completion
  // continue the file.
  auto writer = handle->writer();
  if (!handle->created && writer && Size(*handle) == 0 && writer->error().ok()) {
    return done(Status::Ok());
  }
  FinishWrite(handle, std::move(done));
}

void WriteService::Fsync(uint64_t fh, StatusCallback done) {
  if (Status lost = CheckLost(fh); !lost.ok()) return done(lost);
  std::shared_ptr<WriteHandle> handle = handles_.Find(fh);
  if (!handle) return done(Status::Ok());
  FinishWrite(handle, std::move(done));
}

void WriteService::Fallocate(uint64_t fh, int mode, uint64_t offset, uint64_t length,
                             StatusCallback done) {
  if (Status lost = CheckLost(fh); !lost.ok()) return done(lost);
  std::shared_ptr<WriteHandle> handle = handles_.Find(fh);
  if (!handle || !handle->may_write) {
    return done(Status(ErrorCode::kNotSupported, "fallocate: objects are not preallocated"));
  }
  if (length == 0) {
    return done(Status(ErrorCode::kInvalidArgument, "fallocate: a length of 0"));
  }
  // Preallocation means nothing to an object store. What a program can observe is the size
  // that mode 0 (posix_fallocate) gives the file: the bytes not written by the completion are
  // zeros. Any other mode changes bytes in place (punching holes, zeroing, collapsing).
  if ((mode & ~FALLOC_FL_KEEP_SIZE) != 0) {
    return done(Status(ErrorCode::kNotSupported,
                       "fallocate mode " + std::to_string(mode) + " on '" + handle->path() +
                           "': only preallocation (mode 0 or FALLOC_FL_KEEP_SIZE) is supported"));
  }
  if ((mode & FALLOC_FL_KEEP_SIZE) != 0) return done(Status::Ok());
  WhenLoaded(handle, [handle, end = offset + length, done = std::move(done)](Status loaded) {
    if (!loaded.ok()) return done(loaded);
    std::lock_guard lock(handle->mu);
    done(handle->writer()->Reserve(end));
  });
}

void WriteService::Truncate(const std::shared_ptr<WriteHandle>& handle, uint64_t size,
                            StatusCallback done) {
  if (!handle->may_write) {
    return done(Status(ErrorCode::kNotSupported,
                       "truncating '" + handle->path() +
                           "' needs a staging directory (--staging-dir) to change it in place"));
  }
  WhenLoaded(handle, [self = shared_from_this(), handle, size,
                      done = std::move(done)](Status loaded) mutable {
    if (!loaded.ok()) return done(loaded);
    Status truncated;
    std::shared_ptr<FileWriter> writer;
    {
      std::lock_guard lock(handle->mu);
      writer = handle->writer();
      truncated = writer->Truncate(size);
      if (truncated.code() == ErrorCode::kNotSupported) {
        truncated = self->Restage(handle);
        if (truncated.ok()) truncated = handle->writer()->Truncate(size);
      }
    }
    if (truncated.code() == ErrorCode::kBusy) {
      // A completion is reading the staged copy: the truncation follows it.
      return writer->WhenIdle([self, handle, size, done = std::move(done)]() mutable {
        self->Truncate(handle, size, std::move(done));
      });
    }
    if (truncated.ok()) handle->closing.store(false, std::memory_order_release);
    done(truncated);
  });
}

void WriteService::Move(const std::shared_ptr<WriteHandle>& handle, const std::string& to,
                        bool forbid_overwrite, std::function<void(StatusCallback)> move_object,
                        StatusCallback done) {
  if (!handle->may_write) return move_object(std::move(done));  // it owns nothing
  // The staged copy needs the object's bytes before the object moves away from its key.
  WhenLoaded(handle, [self = shared_from_this(), handle, to, forbid_overwrite,
                      move_object = std::move(move_object),
                      done = std::move(done)](Status loaded) mutable {
    if (!loaded.ok()) return done(loaded);
    {
      std::lock_guard lock(handle->mu);
      Status staged = self->Restage(handle);
      if (!staged.ok()) {
        return done(Status(
            ErrorCode::kBusy,
            "renaming '" + handle->path() + "' while it is open for writing: " + staged.message()));
      }
    }
    // Every byte local first: the object it was opened on leaves its key.
    std::shared_ptr<FileWriter> writer = handle->writer();
    writer->Fetch(0, writer->size(),
                  [self, handle, to, forbid_overwrite, move_object = std::move(move_object),
                   done = std::move(done)](Status fetched) mutable {
                    if (!fetched.ok()) return done(fetched);
                    self->MoveFetched(handle, to, forbid_overwrite, std::move(move_object),
                                      std::move(done));
                  });
  });
}

void WriteService::MoveFetched(const std::shared_ptr<WriteHandle>& handle, const std::string& to,
                               bool forbid_overwrite,
                               std::function<void(StatusCallback)> move_object,
                               StatusCallback done) {
  move_object([self = shared_from_this(), handle, to, forbid_overwrite,
               done = std::move(done)](Status moved) {
    if (!moved.ok()) return done(moved);
    const std::string key = meta::FileKey(self->options_.prefix, to);
    {
      std::lock_guard lock(handle->mu);
      if (!handle->writer()->Rekey(key, forbid_overwrite)) {
        return done(Status(ErrorCode::kBusy,
                           "'" + handle->path() + "' is being completed; rename it after that",
                           /*retryable=*/true));
      }
    }
    std::lock_guard lock(self->owners_mu_);
    auto it = self->owners_.find(handle->path());
    if (it != self->owners_.end() && it->second.lock() == handle) self->owners_.erase(it);
    handle->SetPath(to, key);
    self->owners_[to] = handle;
    done(Status::Ok());
  });
}

void WriteService::Discard(const std::shared_ptr<WriteHandle>& handle) {
  // POSIX keeps an unlinked file working for the descriptors that have it open (a scratch
  // file removed at once): a staged copy goes on taking writes and reads, and is never
  // uploaded. A file that cannot be staged, or that has not fetched every byte of the object
  // it was opened on (about to be deleted), fails its later writes and reads instead.
  bool keeps_working = false;
  {
    std::lock_guard lock(handle->mu);
    handle->discarded = true;
    if (handle->may_write && !handle->load_from) keeps_working = Restage(handle).ok();
    // Bytes of the object not fetched yet go with it.
    if (keeps_working && !handle->writer()->holds_every_byte()) keeps_working = false;
    handle->load_from.reset();
  }
  auto writer = handle->writer();
  if (writer && !keeps_working) {
    writer->Abort(Status(ErrorCode::kCancelled, "'" + handle->path() + "' was removed"));
  }
  DropOwnership(*handle);
}

void WriteService::FinishWrite(const std::shared_ptr<WriteHandle>& handle, StatusCallback done) {
  auto [writer, completions_before] = handle->numbered_writer();
  bool discarded = false;
  {
    std::lock_guard lock(handle->mu);
    discarded = handle->discarded;
  }
  // Opened for writing and refused every write, or removed while open: nothing to save.
  if (!writer || discarded) return done(Status::Ok());
  if (!handle->replaces && !writer->changed() && writer->error().ok()) {
    // An existing object opened without O_TRUNC and not changed (yet): it stays as it was,
    // but for what chmod, chown or utime set on the descriptor (touch).
    std::optional<meta::PosixAttrs> posix;
    {
      std::lock_guard lock(handle->mu);
      if (handle->posix_unsaved) posix = handle->posix;
      handle->posix_unsaved = false;
    }
    if (posix) return StorePosix(handle->path(), *posix, std::move(done));
    return done(Status::Ok());
  }
  writer->Finish([self = shared_from_this(), handle, completions_before = completions_before,
                  done = std::move(done)](Result<upload::UploadedObject> r) {
    bool first = false;
    if (r.ok()) {
      r->completion += completions_before;
      uint64_t seen = handle->recorded_completion.load();
      while (seen < r->completion &&
             !handle->recorded_completion.compare_exchange_weak(seen, r->completion)) {
      }
      first = seen < r->completion;
    } else {
      first = !handle->failed_recorded.exchange(true);
    }
    if (first) self->RecordOutcome(handle, r);
    std::optional<meta::PosixAttrs> posix;
    if (r.ok()) {
      // A new version carries the mode the file was given only if it was set before its
      // upload began: stored again after each completion, and after one set it since.
      std::lock_guard lock(handle->mu);
      if (first || handle->posix_unsaved) posix = handle->posix;
      handle->posix_unsaved = false;
    }
    // chmod, chown or utime on the open file: stored with the version just completed.
    if (posix) return self->StorePosix(handle->path(), *posix, std::move(done));
    done(r.status());
  });
}

void WriteService::StorePosix(const std::string& path, const meta::PosixAttrs& change,
                              StatusCallback done, PosixCheck check) {
  // The object's metadata now (its other names kept), then a copy onto itself that replaces
  // it, pinned to the version read: a file changed meanwhile is not overwritten by an old one.
  const std::string key = meta::FileKey(options_.prefix, path);
  client_->Head(key, [self = shared_from_this(), path, key, change, check = std::move(check),
                      done = std::move(done)](Result<ObjectInfo> info) mutable {
    if (!info.ok()) return done(info.status());
    if (!self->options_.writes.allow_overwrite) {
      return done(Status(ErrorCode::kAccessDenied,
                         "changing the metadata of '" + path + "': the mount does not overwrite"));
    }
    const meta::PosixAttrs before = meta::PosixFromMetadata(info->user_meta);
    if (check) {
      Status allowed = check(before);
      if (!allowed.ok()) return done(allowed);
    }
    meta::PosixAttrs now = meta::MergePosix(before, change);
    if (info->symlink) return done(Status::Ok());  // a link's own mode means nothing
    WriteOptions options;
    options.user_meta = meta::WithPosix(info->user_meta, now);
    Status fits = meta::CheckUserMetadataSize(*options.user_meta, path);
    if (!fits.ok()) return done(fits);
    options.content_type = info->content_type;
    upload::CopySource source{key, info->etag, info->size};
    upload::CopyObjectOnServer(
        self->client_, self->gate_, self->journal(), self->options_.writes.upload, source, key,
        options, [self, path, info = *info, now, done = std::move(done)](Result<PutResult> r) {
          if (!r.ok()) return done(r.status());
          meta::NodeAttr attr = meta::FileAttrFrom(info);
          attr.etag = r->etag;
          if (r->crc64) attr.crc64 = r->crc64;
          attr.posix = now;
          self->listings_->cache().RecordChange(path, attr);
          done(Status::Ok());
        });
  });
}

void WriteService::StoreDirPosix(const std::string& path, const meta::PosixAttrs& change,
                                 StatusCallback done) {
  // On the directory's marker ("dir/"), as ossfs and s3fs keep it: copied onto itself when
  // there is one (an empty object, so the copy costs nothing), made when there is none.
  const std::string key = meta::DirPrefix(options_.prefix, path);
  client_->Head(key, [self = shared_from_this(), path, key, change,
                      done = std::move(done)](Result<ObjectInfo> info) mutable {
    if (!info.ok() && info.status().code() != ErrorCode::kNotFound) return done(info.status());
    meta::PosixAttrs before;
    before.mode = S_IFDIR | (self->options_.dir_mode & 07777);
    if (info.ok()) before = meta::MergePosix(before, meta::PosixFromMetadata(info->user_meta));
    const meta::PosixAttrs now = meta::MergePosix(before, change);
    WriteOptions options;
    options.user_meta = meta::WithPosix(info.ok() ? info->user_meta : UserMetadata{}, now);
    auto recorded = [self, path, now, done = std::move(done)](Result<PutResult> r) {
      if (!r.ok()) return done(r.status());
      meta::NodeAttr attr = meta::DirAttr();
      attr.posix = now;
      self->listings_->cache().RecordChange(path, attr);
      done(Status::Ok());
    };
    if (!info.ok()) {
      options.forbid_overwrite = true;  // a marker another client made meanwhile stays theirs
      return self->client_->Put(key, SharedBytes(), options, std::move(recorded));
    }
    options.content_type = info->content_type;
    upload::CopyObjectOnServer(
        self->client_, self->gate_, self->journal(), self->options_.writes.upload,
        upload::CopySource{key, info->etag, info->size}, key, options, std::move(recorded));
  });
}

void WriteService::RecordOutcome(const std::shared_ptr<WriteHandle>& handle,
                                 const Result<upload::UploadedObject>& outcome) {
  meta::MetadataCache& cache = listings_->cache();
  auto writer = handle->writer();
  const std::string path = handle->path();
  if (outcome.ok()) {
    meta::NodeAttr attr;
    attr.size = outcome->size;
    attr.mtime_sec = UnixSecondsNow();
    attr.etag = outcome->etag;
    attr.crc64 = outcome->crc64;
    attr.appendable = writer->appends();
    cache.RecordChange(path, attr);
    spdlog::debug("wrote '{}': {} bytes in {} part(s)", path, outcome->size, outcome->parts);
  } else {
    const bool completed_before = handle->recorded_completion.load() > 0;
    spdlog::error(
        "saving '{}' failed: {}{}", path, outcome.status().ToString(),
        writer->outcome_will_settle()
            ? "; the server did not answer the CompleteMultipartUpload and may still apply "
              "it: a later line says whether it did"
        : writer->outcome_unknown()
            ? "; the server did not answer the PutObject and may still apply it"
        : completed_before ? "; its last completed version stays"
        : outcome.status().code() == ErrorCode::kAlreadyExists
            ? "; another client made an object under its key meanwhile, which stays"
        : handle->created ? "; nothing was written under its key"
                          : "; the object there before is unchanged");
    // A new name that failed does not exist, unless another client took it meanwhile
    // (forbid-overwrite): then what is there is unknown here. A replaced object is still the
    // old one, which the cache still describes.
    if (outcome.status().code() == ErrorCode::kAlreadyExists) {
      cache.Invalidate(path);
    } else if (handle->created && !completed_before) {
      cache.RecordChange(path, std::nullopt);
    }
  }
  if (options_.audit) {
    AuditRecord record;
    record.path = path;
    record.caller = handle->opener;
    record.opened = handle->opened;
    record.duration = std::chrono::system_clock::now() - handle->opened;
    record.write = true;
    record.bytes_written = Size(*handle);
    record.size = outcome.ok() ? outcome->size : 0;
    record.result = outcome.ok() ? "ok" : ErrorCodeName(outcome.status().code());
    options_.audit->Record(std::move(record));
  }
}

void WriteService::Release(uint64_t fh) {
  if (records_) records_->Released(fh);
  if (any_lost_.load(std::memory_order_relaxed)) {
    std::lock_guard lock(lost_mu_);
    lost_.erase(fh);
  }
  if (readers_.Take(fh)) return;
  std::shared_ptr<WriteHandle> handle = handles_.Take(fh);
  if (!handle) return;
  // The last close: what the opener's close and fsync did not complete is completed now,
  // and its outcome logged (nobody is left to return it to).
  handle->releasing.store(true, std::memory_order_release);
  FinishWrite(handle, [self = shared_from_this(), handle](Status) {
    handle->released.store(true, std::memory_order_release);
    if (handle->may_write) {
      self->DropOwnership(*handle);
      self->open_files_->EndWrite(handle->ino);
    }
  });
}

void WriteService::EndSession() {
  readers_.TakeAll();
  // A file still open for writing when the mount ends was not closed by its writer: a save
  // cut short (the daemon stopped, a pod deleted mid-save). Its upload is aborted, never
  // completed with the bytes so far, which would look like a saved checkpoint; a version an
  // fsync completed stays. One whose close or fsync was under way finishes.
  for (auto& [fh, handle] : handles_.TakeAll()) {
    auto writer = handle->writer();
    if (writer && writer->writing() && (handle->replaces || writer->changed())) {
      writer->Abort(Status(ErrorCode::kCancelled,
                           "the mount ended while the file was still open for writing"));
    }
    handles_.Insert(fh, handle);
    Release(fh);
  }
}

}  // namespace ossmount::fs
