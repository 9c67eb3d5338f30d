// WriteService: the files this mount has open for writing (the writer's component, beside
// ListingService and ObjectData). It owns the write handles and which path each one owns,
// makes each handle's FileWriter (streaming, or staged when a staging area is set), moves a
// streaming file to staging when the program asks for more than in-order writes, runs the
// completions that close, fsync and the last release ask for, and records their outcomes in
// the metadata cache, the log and the audit log. ObjectFilesystem decides what an open or a
// create means (the inode, what the server holds) and asks this service for the handle.
//
// Ownership: create with std::make_shared; work in flight holds a reference.
// Thread-safety: thread-safe. owners_mu_ is a leaf lock (a handle's name_mu_ may be taken
// under it); a handle's mu orders its writes and is never held while calling a writer's
// completion or a callback.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "fs/filesystem.h"
#include "fs/fs_options.h"
#include "fs/handle_map.h"
#include "fs/handle_records.h"
#include "fs/listing_service.h"
#include "fs/open_files.h"
#include "fs/write_handle.h"
#include "upload/staging_area.h"
#include "upload/upload_gate.h"
#include "upload/upload_journal.h"

namespace ossmount::fs {

class WriteService : public std::enable_shared_from_this<WriteService> {
 public:
  WriteService(boost::asio::any_io_executor executor, std::shared_ptr<ObjectClient> client,
               std::shared_ptr<data::MemoryBudget> budget, const FsOptions& options,
               std::shared_ptr<ListingService> listings, std::shared_ptr<OpenFiles> open_files);

  // Set once, before the first write. Null: no crash record / no staging (out-of-order writes
  // then fail with ENOTSUP, and existing objects open for writing refuse writes).
  void SetJournal(std::shared_ptr<upload::UploadJournal> journal);
  void SetStaging(std::shared_ptr<upload::StagingArea> staging);
  bool staging() const;
  // Whether O_APPEND files become appendable objects here.
  bool appends() const;
  const std::shared_ptr<upload::UploadGate>& gate() const { return gate_; }
  // Where multipart uploads and copies are recorded for crash cleanup (null: nowhere).
  std::shared_ptr<upload::UploadJournal> journal() const {
    std::lock_guard lock(config_mu_);
    return journal_;
  }

  // What a new handle is.
  struct Kind {
    bool may_write = true;  // else opened as it is, refusing writes
    bool replaces = true;   // WriteHandle::replaces
    bool created = false;   // WriteHandle::created
    // The server said the name was free: it is completed with forbid-overwrite.
    bool must_be_new = false;
    // An existing object the file starts as (opened for writing without O_TRUNC): it is
    // staged, loaded from the object before its first change.
    std::optional<ObjectInfo> existing;
    // Opened with O_APPEND: a new file, or an appendable object's end (append_start), is
    // appended to as it is written, where the service and --append-interval allow.
    bool append = false;
    std::optional<AppendStart> append_start;
    // --posix-metadata: the mode and owner of the object the file replaces or changes, which
    // the new version keeps.
    std::optional<meta::PosixAttrs> keep_posix;
  };
  // A handle for `path` (inode `ino`), its writer made; not registered yet. Null writer for a
  // handle that may not write, or for an existing object when no staging area is set (its
  // writes are refused then). kNoSpace when the staging area cannot hold one more file.
  Result<std::shared_ptr<WriteHandle>> NewHandle(InodeId ino, const std::string& path,
                                                 const Caller& caller, const Kind& kind);
  // Makes `handle` (one that may write) the owner of its path; kBusy when another owns it.
  Status TakeOwnership(const std::shared_ptr<WriteHandle>& handle);
  void DropOwnership(const WriteHandle& handle);
  // Registers `handle` and returns its number. For one that owns its path, its inode's
  // writer entry in OpenFiles ends with the handle.
  uint64_t Register(std::shared_ptr<WriteHandle> handle);

  std::shared_ptr<WriteHandle> Find(uint64_t fh) const { return handles_.Find(fh); }
  // The handle that owns `path`: open for writing and not yet released (fsync or not).
  std::shared_ptr<WriteHandle> OwnerOf(const std::string& path) const;
  // A handle open for writing on inode `ino` (one whose name was unlinked included), null
  // when none is: what an fstat of the open file answers with.
  std::shared_ptr<WriteHandle> WritingOn(InodeId ino) const;
  // Whether a handle owns a path under directory `dir`.
  bool OwnsUnder(const std::string& dir) const;
  // Why an operation on a path `owner` owns cannot go on: kBusy, retryable (RetryWhileBusy)
  // when the owner was closed and its release is on its way.
  static Status Busy(const WriteHandle& owner, const std::string& what);
  // The handles writing files in directory `dir` that the server does not list yet.
  std::vector<std::shared_ptr<WriteHandle>> WritingIn(const std::string& dir) const;

  // Bytes the handle's file holds (or reserved), 0 for one that may not write.
  static uint64_t Size(const WriteHandle& handle);

  // --posix-metadata: stores `change` (merged with what the object has) in the closed file's
  // user metadata, by a copy of the object onto itself pinned to the version read. `check`,
  // when given, sees what the object has first and may refuse the change with its status.
  using PosixCheck = std::function<Status(const meta::PosixAttrs& before)>;
  void StorePosix(const std::string& path, const meta::PosixAttrs& change, StatusCallback done,
                  PosixCheck check = {});
  // The same for directory `path`, on its marker object (made when it has none).
  void StoreDirPosix(const std::string& path, const meta::PosixAttrs& change, StatusCallback done);

  void Write(uint64_t fh, uint64_t offset, const char* data, size_t size, Callback<size_t> done);
  // Reads through handle `fh` (a writer's, or a reader's from OpenReader): the staged bytes
  // (a streaming file moves to staging first, when it can). kNotSupported when the file cannot
  // be read back.
  void Read(uint64_t fh, uint64_t offset, size_t size, Callback<ReadReply> done);
  // A handle that reads the file `owner` is writing, as it is at each read (its bytes move to
  // staging now, when it streams). kBusy when it cannot be read back. Released with Release.
  Result<uint64_t> OpenReader(const std::shared_ptr<WriteHandle>& owner);
  void Flush(uint64_t fh, const Caller& caller, StatusCallback done);
  void Fsync(uint64_t fh, StatusCallback done);
  void Fallocate(uint64_t fh, int mode, uint64_t offset, uint64_t length, StatusCallback done);
  // Sets the size of `handle`'s file (a streaming file moves to staging when it must).
  void Truncate(const std::shared_ptr<WriteHandle>& handle, uint64_t size, StatusCallback done);
  // The open file at `handle` gets the path `to` (a rename): it is staged (every byte fetched)
  // first, then `move_object` moves what the bucket holds of it, then its next completion goes to
  // `to`, where its first completion replaces no object when `forbid_overwrite`. kBusy when
  // it cannot be staged.
  void Move(const std::shared_ptr<WriteHandle>& handle, const std::string& to,
            bool forbid_overwrite, std::function<void(StatusCallback)> move_object,
            StatusCallback done);
  // The open file's name was removed (an unlink): nothing of it is saved any more, and the
  // path is free.
  void Discard(const std::shared_ptr<WriteHandle>& handle);
  // The kernel's release of `fh`: completes what is left, then the handle no longer answers
  // for its path. A reader's handle just ends.
  void Release(uint64_t fh);
  // Records the handles this service gives (HandleRecord::kWrite) from now on, before each is
  // handed to the kernel. Set once, before the first open.
  void RecordHandles(std::shared_ptr<HandleRecords> records) { records_ = std::move(records); }
  // Handles an earlier daemon process gave on this connection: their files' bytes and uploads
  // died with it, so each answers every write, read, flush, fsync and fallocate with EIO
  // until released. Before the first open; numbers given later are higher.
  void RestoreLost(const std::vector<uint64_t>& fhs);
  // Whether `fh` is a number this service gives (its handles are apart from the read ones).
  static bool Numbers(uint64_t fh) { return fh >= kFirstHandle; }
  // The mount ends: files still being written are not saved (their uploads are aborted); a
  // version an fsync completed stays.
  void EndSession();
  size_t handle_count() const { return handles_.size() + readers_.size(); }

 private:
  // Runs `then` once the handle's staged copy stands for the existing object it was opened
  // on (FileWriter::StartFrom: its size now, its bytes when needed); at once when it needs
  // nothing.
  void WhenLoaded(const std::shared_ptr<WriteHandle>& handle, std::function<void(Status)> then);
  // Move, once every byte of the file is local.
  void MoveFetched(const std::shared_ptr<WriteHandle>& handle, const std::string& to,
                   bool forbid_overwrite, std::function<void(StatusCallback)> move_object,
                   StatusCallback done);
  // Moves a streaming file to a staged copy, when all its bytes are still in memory. kNotSupported
  // (saying why) when they are not, or no staging area is set.
  Status Restage(const std::shared_ptr<WriteHandle>& handle);
  // Completes the handle's file (if anything is to complete) and records the outcome.
  void FinishWrite(const std::shared_ptr<WriteHandle>& handle, StatusCallback done);
  void RecordOutcome(const std::shared_ptr<WriteHandle>& handle,
                     const Result<upload::UploadedObject>& outcome);
  WriterContext Context() const;
  // EIO for a handle restored by RestoreLost, else OK.
  Status CheckLost(uint64_t fh) const;
  std::function<void(std::optional<ObjectInfo>)> Settler(std::weak_ptr<WriteHandle> handle);

  const FsOptions options_;
  const boost::asio::any_io_executor executor_;
  const std::shared_ptr<ObjectClient> client_;
  const std::shared_ptr<upload::UploadGate> gate_;
  const std::shared_ptr<ListingService> listings_;
  const std::shared_ptr<OpenFiles> open_files_;
  static constexpr uint64_t kFirstHandle = 1ull << 48;
  std::atomic<uint64_t> next_fh_{kFirstHandle};
  HandleMap<WriteHandle> handles_;
  HandleMap<WriteHandle> readers_;          // each reader's handle: the writer's handle it reads
  std::shared_ptr<HandleRecords> records_;  // set before the first open; null: not recorded
  mutable std::mutex lost_mu_;              // guards lost_
  std::unordered_set<uint64_t> lost_;
  std::atomic<bool> any_lost_{false};

  mutable std::mutex config_mu_;  // guards journal_ and staging_ (set once, read often)
  std::shared_ptr<upload::UploadJournal> journal_;
  std::shared_ptr<upload::StagingArea> staging_;
  // WriterContext::part_copies_refused, for every writer of this mount.
  const std::shared_ptr<std::atomic<bool>> part_copies_refused_ =
      std::make_shared<std::atomic<bool>>(false);

  // owners_mu_ guards owners_: the handle that owns each path.
  mutable std::mutex owners_mu_;
  std::unordered_map<std::string, std::weak_ptr<WriteHandle>> owners_;
};

}  // namespace ossmount::fs
