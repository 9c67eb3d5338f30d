// ObjectFilesystem: the Filesystem over an ObjectClient, a POSIX view of a bucket or of a
// prefix of it, read-only unless FsOptions::writes says otherwise (docs/SEMANTICS.md), and
// the SessionHooks of its mount. Coordinates the
// inode table, the ListingService (names and listings), ObjectData (files' bytes) and the
// open handles, and tells a ReadObserver what its readers do.
//
// Ownership: create with MakeObjectFilesystem; operations in flight hold a reference.
// Thread-safety: thread-safe. Its locks are leaf locks (none is held while taking another,
// calling the client or running a callback); handles and buffers are released outside them.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fs/dir_handle.h"
#include "fs/filesystem.h"
#include "fs/fs_metrics.h"
#include "fs/fs_options.h"
#include "fs/handle_map.h"
#include "fs/handle_records.h"
#include "fs/listing_service.h"
#include "fs/object_data.h"
#include "fs/open_files.h"
#include "fs/page_cache_trust.h"
#include "fs/read_handle.h"
#include "fs/read_observer.h"
#include "fs/session_hooks.h"
#include "fs/write_handle.h"
#include "fs/write_service.h"
#include "meta/inode_table.h"
#include "meta/listing_records.h"
#include "ossmount/object_client.h"
#include "upload/staging_area.h"
#include "upload/upload_gate.h"
#include "upload/upload_journal.h"

namespace ossmount::fs {

// The mode, owner and mtime `posix` sets, written over `a` (a file's; a link keeps its mode).
void ApplyPosix(const meta::PosixAttrs& posix, bool symlink, Attributes& a);

class ObjectFilesystem : public Filesystem,
                         public SessionHooks,
                         public std::enable_shared_from_this<ObjectFilesystem> {
 public:
  // Entries per ReadDir reply: roughly what fits in the kernel's readdirplus buffers.
  static constexpr size_t kReadDirBatch = 128;

  // REQUIRES: options.prefix is "" or ends in '/'. Create with std::make_shared.
  ObjectFilesystem(boost::asio::io_context& io, std::shared_ptr<ObjectClient> client,
                   FsOptions options);

  void Lookup(InodeId parent, std::string name, Callback<Entry> done) override;
  void Forget(InodeId ino, uint64_t nlookup) override;
  void AddLookup(InodeId ino) override;
  void GetAttr(InodeId ino, Callback<AttrReply> done) override;
  void OpenDir(InodeId ino, Callback<uint64_t> done) override;
  void ReadDir(InodeId ino, uint64_t dir_handle, off_t offset,
               Callback<std::vector<DirEntry>> done) override;
  void ReleaseDir(InodeId ino, uint64_t dir_handle) override;
  using Filesystem::Open;
  void Open(InodeId ino, int flags, const Caller& caller, Callback<OpenReply> done) override;
  void Read(InodeId ino, uint64_t fh, off_t offset, size_t size, Callback<ReadReply> done) override;
  void Release(InodeId ino, uint64_t fh) override;
  StatFs GetStatFs() override;

  // Writes (FsOptions::writes; object_writes.cc and namespace_changes.cc).
  void Create(InodeId parent, std::string name, int flags, const Caller& caller,
              Callback<CreateReply> done) override;
  void Write(InodeId ino, uint64_t fh, off_t offset, const char* data, size_t size,
             Callback<size_t> done) override;
  void Flush(InodeId ino, uint64_t fh, const Caller& caller, StatusCallback done) override;
  void Fsync(InodeId ino, uint64_t fh, StatusCallback done) override;
  void Fallocate(InodeId ino, uint64_t fh, int mode, off_t offset, off_t length,
                 StatusCallback done) override;
  void MakeNode(InodeId parent, std::string name, uint32_t mode, const Caller& caller,
                Callback<Entry> done) override;
  void SetAttr(InodeId ino, uint64_t fh, const SetAttrRequest& request,
               Callback<AttrReply> done) override;
  void MakeDir(InodeId parent, std::string name, uint32_t mode, const Caller& caller,
               Callback<Entry> done) override;
  void RemoveDir(InodeId parent, std::string name, StatusCallback done) override;
  void Unlink(InodeId parent, std::string name, StatusCallback done) override;
  void MakeSymlink(InodeId parent, std::string name, std::string target,
                   Callback<Entry> done) override;
  void ReadLink(InodeId ino, Callback<std::string> done) override;
  void Rename(InodeId parent, std::string name, InodeId new_parent, std::string new_name,
              unsigned flags, StatusCallback done) override;
  bool KeepsXattrs() const override;
  void GetXattr(InodeId ino, std::string name, Callback<std::string> done) override;
  void ListXattr(InodeId ino, Callback<std::vector<std::string>> done) override;
  void SetXattr(InodeId ino, std::string name, std::string value, int flags,
                StatusCallback done) override;
  void RemoveXattr(InodeId ino, std::string name, StatusCallback done) override;
  // Where uploads are recorded for crash cleanup; set once, before the first write (none =
  // no record).
  void SetUploadJournal(std::shared_ptr<upload::UploadJournal> journal) {
    writes_->SetJournal(std::move(journal));
  }
  // Where files that cannot stream are staged; set once, before the first write (none = no
  // staging: WriteService::SetStaging).
  void SetStaging(std::shared_ptr<upload::StagingArea> staging) {
    writes_->SetStaging(std::move(staging));
  }
  const std::shared_ptr<upload::UploadGate>& upload_gate() const { return writes_->gate(); }
  const std::shared_ptr<WriteService>& writes() const { return writes_; }

  // --- Outliving the daemon process (session_restore.cc). ---
  // Records from now on the nodes (RecordLog, InodeTable::RecordTo) and handles the kernel
  // holds, before each is handed to it, so that the next process on this FUSE connection can
  // restore them, and the listings held (ListingRecords), so that it need not list every
  // directory again. Once, before the mount serves (after RestoreSession).
  void RecordSession(std::unique_ptr<RecordLog> nodes, std::shared_ptr<HandleRecords> handles,
                     std::shared_ptr<meta::ListingRecords> listings);
  // What an earlier process on this connection recorded, restored.
  struct RestoredSession {
    size_t nodes = 0;
    size_t read_handles = 0;  // each reads the version it opened, as before
    size_t dir_handles = 0;   // listed again at their next read
    size_t lost_writers = 0;  // EIO from now on (WriteService::RestoreLost)
    size_t listings = 0;      // directories known without listing them again
  };
  // Brings back the nodes, handles and listings an earlier process recorded (their logs'
  // contents). Before the mount serves and before RecordSession.
  RestoredSession RestoreSession(const RecordLog::Records& nodes,
                                 const std::map<uint64_t, HandleRecord>& handles,
                                 const std::vector<meta::ListingRecords::Restored>& listings);
  // The first error writing either record (OK when none, or nothing is recorded).
  Status record_error() const;

  void SetBackingFilesWanted(bool wanted) override {
    backing_files_wanted_.store(wanted, std::memory_order_relaxed);
  }
  void CountTransportBuffers(uint64_t bytes) override { data_.CountTransportBuffers(bytes); }
  std::optional<std::string> DirectoryPath(InodeId ino) override;
  void EndSession() override;

  // Set once, before the first operation; without one nobody is told.
  void SetReadObserver(std::shared_ptr<ReadObserver> observer);
  // Whether a reader of `path` will not ask for its bytes: the kernel was given them to keep
  // (an indefinite TTL), and its page cache is trusted to hold them still (PageCacheTrust).
  bool PageCached(const std::string& path) const;

  const FsOptions& options() const { return options_; }
  const std::shared_ptr<ListingService>& listings() const { return listings_; }
  ObjectData& data() { return data_; }
  // The budget every data buffer of this filesystem is accounted in.
  const std::shared_ptr<data::MemoryBudget>& memory_budget() const { return data_.budget(); }

  using Stats = FilesystemStats;
  Stats stats() const;
  // The inode the table currently gives `path` ("" = root), for tests.
  std::optional<InodeId> InodeOf(const std::string& path) const { return inodes_.Find(path); }

 private:
  Attributes MakeAttributes(InodeId ino, const meta::NodeAttr& attr) const;
  Entry MakeEntry(InodeId ino, const meta::NodeAttr& attr) const;
  // Replies with the entries from `offset`; each entry's inode stays pinned by the handle
  // until ReleaseDir (or, if the handle was released meanwhile, until the reply is sent).
  void ServeDir(const std::shared_ptr<DirHandle>& handle,
                const std::shared_ptr<const meta::DirSnapshot>& snap, off_t offset,
                Callback<std::vector<DirEntry>>& done);
  // Replies with the entries from `offset` of a directory read page by page: names only.
  void ServeStream(const std::shared_ptr<DirHandle>& handle,
                   const std::shared_ptr<DirStream>& stream, off_t offset,
                   Callback<std::vector<DirEntry>> done);
  // A readdirplus entry for `path` that hands the kernel no inode (Entry::name_only).
  Entry NameOnlyEntry(const std::string& path, const meta::NodeAttr& attr) const;
  void OpenForReading(InodeId ino, const meta::InodeTable::Node& node, const Caller& caller,
                      Callback<OpenReply> done);
  // A handle reading version `attr` of the file at `path` (a large file's with its reader).
  std::shared_ptr<ReadHandle> NewReadHandle(InodeId ino, const std::string& path,
                                            const meta::NodeAttr& attr);
  void ReadSmall(const std::shared_ptr<ReadHandle>& handle, uint64_t offset, size_t size,
                 Callback<ReadReply> done);
  // What a release does once the handle is out of the table.
  void Released(const std::shared_ptr<ReadHandle>& handle, bool at_unmount);
  void NotifyRead(const std::string& path);

  // Open once WriteService::OwnerOf(path) allows it (Open retries it while a closed writer's
  // release is on its way, RetryWhileBusy).
  void OpenOnce(InodeId ino, int flags, const Caller& caller, Callback<OpenReply> done);

  // --- Writes (object_writes.cc, namespace_changes.cc). ---
  // OK when writes are on, else why not.
  Status CheckWrites() const;
  static Status NoSuchInode(InodeId ino);
  // The handle writing the file of `ino`, if one may write it.
  std::shared_ptr<WriteHandle> WriterOf(InodeId ino, const meta::InodeTable::Node& node) const;
  // --posix-metadata: the file's mode, owner, time and extended attributes as they are now
  // (with what was set on it while it is written).
  void CurrentPosix(InodeId ino, Callback<meta::PosixAttrs> done);
  // Sets (`value`) or removes (nullopt) one user.* attribute; flags as SetXattr's.
  void ChangeXattr(InodeId ino, std::string name, std::optional<std::string> value, int flags,
                   StatusCallback done);
  // The path of `name` in directory `parent`, checked for a write: the parent is a known
  // directory, the name valid and the object key it makes one the service accepts.
  Result<std::string> ChildPath(InodeId parent, const std::string& name) const;
  void CreateOnce(const std::string& path, int flags, const Caller& caller,
                  Callback<CreateReply> done);
  // A create or open that may write `path`: a write handle that owns it, on its inode (or a new
  // one when readers have the old inode open).
  void StartWriter(const std::string& path, const Caller& caller, const WriteService::Kind& kind,
                   Callback<CreateReply> done);
  // A create of a name the server says holds `attr`, without O_TRUNC.
  void OpenExisting(const std::string& path, const meta::NodeAttr& attr, bool append,
                    const Caller& caller, Callback<CreateReply> done);
  void OpenForWriting(InodeId ino, const meta::InodeTable::Node& node, int flags,
                      const Caller& caller, Callback<OpenReply> done);
  // What a handle that opens the existing object `attr` at `path` without O_TRUNC is: a
  // staged copy of it, an empty one written from its start, or (no staging, or no overwrite)
  // one that refuses writes.
  // `append`: opened with O_APPEND (an appendable object is then appended to).
  WriteService::Kind ChangeInPlace(const std::string& path, const meta::NodeAttr& attr,
                                   bool append) const;
  // A new write handle, which owns its path when it may write (ClaimPath).
  Result<std::shared_ptr<WriteHandle>> NewWriter(InodeId ino, const std::string& path,
                                                 const Caller& caller,
                                                 const WriteService::Kind& kind);
  // Makes `handle` the owner of its path and the writer of its inode. kBusy when another
  // handle owns the path; kPreconditionFailed when readers have the inode open (the caller
  // gives the path a new inode).
  Status ClaimPath(const std::shared_ptr<WriteHandle>& handle);
  // truncate(2) of a file nobody has open for writing: through a handle of its own.
  void TruncateClosed(InodeId ino, const std::string& path, uint64_t size, StatusCallback done);
  // `listing` of directory `dir` with the files this mount is writing in it (the server
  // lists them only once complete), which are also recorded in the cached listing.
  std::shared_ptr<const meta::DirSnapshot> WithOwnWrites(
      const std::string& dir, std::shared_ptr<const meta::DirSnapshot> listing);
  // Attributes of a file being written: its size so far.
  Attributes WritingAttributes(const WriteHandle& handle) const;
  void UnlinkOnce(const std::string& path, StatusCallback done);
  void RenameOnce(const std::string& from, const std::string& to, unsigned flags,
                  StatusCallback done);
  void RenameFile(const std::string& from, const std::string& to, const meta::NodeAttr& attr,
                  bool no_replace, StatusCallback done);
  // A rename of a file open for writing here: its handle follows it to `to`.
  void RenameOpenFile(const std::shared_ptr<WriteHandle>& owner, const std::string& from,
                      const std::string& to, bool no_replace, StatusCallback done);
  // The name of a file open for writing here was removed: nothing of it is saved any more.
  // A read of an appendable object: what the server has at [offset, offset + size), no
  // version pinned; past its end, nothing.
  void ReadGrowing(const std::shared_ptr<ReadHandle>& handle, uint64_t offset, size_t size,
                   Callback<ReadReply> done);
  // With --posix-metadata, a directory's attributes from a HEAD of its marker.
  void ResolveDirPosix(const std::string& path, meta::NodeAttr dir,
                       ListingService::ResolveCallback done);
  // Resolve, and with --posix-metadata a HEAD of a file (or of a directory's marker) whose
  // metadata is not known yet.
  // `from_server`: ResolveFromServer instead of Resolve.
  void ResolveWithPosix(const std::string& path, ListingService::ResolveCallback done,
                        bool from_server = false);
  // One attempt of SetAttr: a retryable kBusy while the file's writer is being released.
  void SetAttrOnce(InodeId ino, uint64_t fh, const SetAttrRequest& request,
                   Callback<AttrReply> done);
  // GetAttr of an appendable object: its size now, from the server (attribute timeout 0).
  void GrowingAttr(InodeId ino, const std::string& path, Callback<AttrReply> done);
  void UnlinkOpenFile(const std::shared_ptr<WriteHandle>& owner, StatusCallback done);
  // A directory onto a directory the server has: only an empty one is replaced.
  void RenameDirOntoDir(const std::string& from, const std::string& to, StatusCallback done);
  // `target_marker`: `to` is an empty directory whose marker object exists already.
  void RenameDir(const std::string& from, const std::string& to, bool target_marker,
                 StatusCallback done);

  boost::asio::io_context& io_;
  const FsOptions options_;
  const int64_t mount_time_sec_;
  meta::InodeTable inodes_;
  const std::shared_ptr<ListingService> listings_;
  ObjectData data_;
  PageCacheTrust page_cache_trust_;
  std::atomic<bool> backing_files_wanted_{false};
  std::shared_ptr<ReadObserver> observer_;
  std::atomic<uint64_t> next_fh_{1};
  std::shared_ptr<HandleRecords> handle_records_;  // set before serving; null: not recorded
  HandleMap<DirHandle> dir_handles_;
  HandleMap<ReadHandle> read_handles_;
  const std::shared_ptr<OpenFiles> open_files_;
  const std::shared_ptr<WriteService> writes_;
};

// `io` runs the filesystem's work and the client's completions. The prefix is normalised
// (a missing trailing '/' is added).
std::shared_ptr<ObjectFilesystem> MakeObjectFilesystem(boost::asio::io_context& io,
                                                       std::shared_ptr<ObjectClient> client,
                                                       FsOptions options);

}  // namespace ossmount::fs
