// Filesystem: the POSIX operations of a mount, as src/fuse calls them (ObjectFilesystem over a
// bucket; doubles in tests). Knows nothing of FUSE. What a session needs beyond POSIX is
// SessionHooks (fs/session_hooks.h).
//
// Contract for the asynchronous methods: the callback is called exactly once, with either a
// value or a non-OK Status whose ToErrno() is the errno to reply with. When the answer is at
// hand (cached metadata, bytes in memory or in the disk cache, an invalid argument) it runs
// on the calling thread before the method returns; when it needs the network it runs on an
// io_context thread later. So callers must not hold a lock the callback takes, and must not
// assume the call returns first.
//
// Inode lifetime follows the kernel's lookup count (as in libfuse's passthrough_hp):
// every successful Lookup, and every entry a readdirplus reply actually hands to the
// kernel (AddLookup), adds one; Forget(ino, n) subtracts n. An inode whose count reaches
// zero and that is not the root may be dropped from the table. The inodes of the entries
// ReadDir returns are valid at least until that directory handle is released; a caller
// that keeps one longer (the adapter, for readdirplus entries) takes a reference with
// AddLookup before releasing the handle. Entries nobody took a reference to are dropped at
// ReleaseDir, so the table does not grow with every name ever listed.
//
// Thread-safety: every method may be called concurrently from any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "ossmount/status.h"

namespace ossmount::fs {

using InodeId = uint64_t;
constexpr InodeId kRootInode = 1;  // FUSE_ROOT_ID

struct Attributes {
  InodeId ino = 0;
  bool is_dir = false;
  uint64_t size = 0;
  int64_t mtime_sec = 0;
  uint32_t mode = 0;  // full st_mode, including S_IFDIR / S_IFREG
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t nlink = 1;
};

struct Entry {
  Attributes attr;
  double entry_timeout = 0;  // seconds the kernel may cache the name -> inode mapping
  double attr_timeout = 0;   // seconds the kernel may cache the attributes
  // A readdirplus entry that hands the kernel no inode, only the name and type (attr.ino is
  // the directory entry's d_ino): the kernel looks the name up when it needs it. Used where
  // the mount holds no inode for the name (a directory read page by page, the inode table
  // over its share of the metadata budget).
  bool name_only = false;
};

struct AttrReply {
  Attributes attr;
  double attr_timeout = 0;
};

struct DirEntry {
  std::string name;
  Entry entry;            // full attributes (readdirplus), ino valid
  off_t next_offset = 0;  // the offset to pass to ReadDir to continue after this entry
};

// Who sent a request, from the FUSE request context; zero when unknown.
struct Caller {
  uint32_t pid = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
};

struct OpenReply {
  uint64_t fh = 0;
  bool keep_cache = false;  // FOPEN_KEEP_CACHE: page cache from earlier opens is still valid
  // FOPEN_DIRECT_IO: reads bypass the page cache and are not cut at the size the kernel holds
  // (an appendable object, which grows while it is open).
  bool direct_io = false;
  // The object is another version than the kernel was last given attributes of (it changed
  // on the server): the adapter tells the kernel to drop the attributes it holds, before
  // replying, so that the opener's fstat and reads see the new size. keep_cache is false.
  bool attributes_changed = false;
  // Only when the session wants backing files (SessionHooks::SetBackingFilesWanted): a
  // read-only local file holding exactly this file's bytes from offset 0, verified just now,
  // which the kernel may read instead of sending READs (FUSE passthrough). The handle still
  // needs its Release.
  std::shared_ptr<UniqueFd> backing_file;
};

// Bytes for one read reply. `data` points into memory kept alive by `owner` (a cached
// object or block), so the FUSE adapter can reply without copying.
struct ReadReply {
  const char* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const void> owner;
};

struct StatFs {
  uint64_t block_size = 4096;
  uint64_t blocks = 0;
  uint64_t blocks_free = 0;
  uint64_t files = 0;
  uint64_t files_free = 0;
  uint32_t name_max = 255;
};

template <typename T>
using Callback = std::function<void(Result<T>)>;
using StatusCallback = std::function<void(Status)>;

struct CreateReply {
  Entry entry;
  uint64_t fh = 0;
};

// What a setattr asks to change; unset fields stay.
struct SetAttrRequest {
  std::optional<uint64_t> size;
  std::optional<uint32_t> mode;
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  bool times = false;                // atime or mtime
  std::optional<int64_t> mtime_sec;  // the new mtime, when it is set
};

class Filesystem {
 public:
  virtual ~Filesystem() = default;

  virtual void Lookup(InodeId parent, std::string name, Callback<Entry> done) = 0;
  virtual void Forget(InodeId ino, uint64_t nlookup) = 0;
  // One more kernel reference to ino, for an entry a readdirplus reply handed out.
  virtual void AddLookup(InodeId ino) = 0;
  virtual void GetAttr(InodeId ino, Callback<AttrReply> done) = 0;

  virtual void OpenDir(InodeId ino, Callback<uint64_t> done) = 0;
  // Entries of the directory from `offset` on ("." and ".." included, at offsets 0 and 1
  // are the adapter's choice: see src/fuse). Offsets are stable for the life of the
  // handle: the same offset always names the same position, so rewinddir and repeated
  // offsets work. An empty vector means the end.
  virtual void ReadDir(InodeId ino, uint64_t dir_handle, off_t offset,
                       Callback<std::vector<DirEntry>> done) = 0;
  virtual void ReleaseDir(InodeId ino, uint64_t dir_handle) = 0;

  // flags: the open(2) flags. Write access is EROFS unless writes are on (see Create).
  // `caller`: who opens the file.
  virtual void Open(InodeId ino, int flags, const Caller& caller, Callback<OpenReply> done) = 0;
  // Open by an unknown caller (zeros).
  void Open(InodeId ino, int flags, Callback<OpenReply> done) {
    Open(ino, flags, Caller{}, std::move(done));
  }
  // Up to `size` bytes at `offset`; fewer only at the end of the file.
  virtual void Read(InodeId ino, uint64_t fh, off_t offset, size_t size,
                    Callback<ReadReply> done) = 0;
  virtual void Release(InodeId ino, uint64_t fh) = 0;

  virtual StatFs GetStatFs() = 0;

  // --- Writes (docs/SEMANTICS.md, "Writing"). A read-only filesystem answers kReadOnly. ---

  // Creates `name` in `parent` and opens it for writing (open(2) `flags`).
  virtual void Create(InodeId parent, std::string name, int flags, const Caller& caller,
                      Callback<CreateReply> done) {
    (void)parent, (void)name, (void)flags, (void)caller;
    done(ReadOnly());
  }
  // Writes `size` bytes at `offset` through a handle open for writing. `data` is copied
  // before the call returns; `done` may run later (backpressure) with the bytes taken.
  virtual void Write(InodeId ino, uint64_t fh, off_t offset, const char* data, size_t size,
                     Callback<size_t> done) {
    (void)ino, (void)fh, (void)offset, (void)data, (void)size;
    done(ReadOnly());
  }
  // A close(2) of a descriptor of the handle: for a file being written by `caller`'s
  // process, completes it and answers with the upload's result.
  virtual void Flush(InodeId ino, uint64_t fh, const Caller& caller, StatusCallback done) {
    (void)ino, (void)fh, (void)caller;
    done(Status::Ok());
  }
  // fsync(2): completes a file being written and answers with the upload's result.
  virtual void Fsync(InodeId ino, uint64_t fh, StatusCallback done) {
    (void)ino, (void)fh;
    done(Status::Ok());
  }
  // fallocate(2) through a handle open for writing: `mode` 0 (posix_fallocate) makes the file
  // at least offset + length bytes long, the bytes not written being zeros;
  // FALLOC_FL_KEEP_SIZE changes nothing; other modes are kNotSupported.
  virtual void Fallocate(InodeId ino, uint64_t fh, int mode, off_t offset, off_t length,
                         StatusCallback done) {
    (void)ino, (void)fh, (void)mode, (void)offset, (void)length;
    done(Status(ErrorCode::kNotSupported, "fallocate is not supported"));
  }
  // mknod(2): a regular file (S_IFREG) is created empty, like an O_CREAT|O_EXCL open and close;
  // devices, FIFOs and sockets are kNotPermitted (objects cannot be them).
  virtual void MakeNode(InodeId parent, std::string name, uint32_t mode, const Caller& caller,
                        Callback<Entry> done) {
    (void)parent, (void)name, (void)mode, (void)caller;
    done(ReadOnly());
  }
  // `fh` is the handle when the caller gave one (ftruncate), else 0.
  virtual void SetAttr(InodeId ino, uint64_t fh, const SetAttrRequest& request,
                       Callback<AttrReply> done) {
    (void)ino, (void)fh, (void)request;
    done(ReadOnly());
  }
  // symlink(2): a link `name` in `parent` pointing at `target`.
  virtual void MakeSymlink(InodeId parent, std::string name, std::string target,
                           Callback<Entry> done) {
    (void)parent, (void)name, (void)target;
    done(ReadOnly());
  }
  // readlink(2): the target of link `ino`; kInvalidArgument when it is not a link.
  virtual void ReadLink(InodeId ino, Callback<std::string> done) {
    (void)ino;
    done(Status(ErrorCode::kInvalidArgument, "not a symbolic link"));
  }
  // Extended attributes. A filesystem that keeps none answers false here, and the adapter
  // then tells the kernel so once (no getxattr round trip per file after that).
  virtual bool KeepsXattrs() const { return false; }
  // The value of `name`; kNoAttribute when the file has none by that name.
  virtual void GetXattr(InodeId ino, std::string name, Callback<std::string> done) {
    (void)ino, (void)name;
    done(Status(ErrorCode::kNoAttribute, "no extended attributes"));
  }
  // The names the file has, in order.
  virtual void ListXattr(InodeId ino, Callback<std::vector<std::string>> done) {
    (void)ino;
    done(std::vector<std::string>{});
  }
  // flags: XATTR_CREATE (kAlreadyExists when `name` is set), XATTR_REPLACE (kNoAttribute when
  // it is not), or 0.
  virtual void SetXattr(InodeId ino, std::string name, std::string value, int flags,
                        StatusCallback done) {
    (void)ino, (void)name, (void)value, (void)flags;
    done(Status(ErrorCode::kNotSupported, "extended attributes are not kept"));
  }
  virtual void RemoveXattr(InodeId ino, std::string name, StatusCallback done) {
    (void)ino, (void)name;
    done(Status(ErrorCode::kNotSupported, "extended attributes are not kept"));
  }
  // mkdir(2): `mode` the permission bits asked for (after the umask), `caller` who asks.
  virtual void MakeDir(InodeId parent, std::string name, uint32_t mode, const Caller& caller,
                       Callback<Entry> done) {
    (void)parent, (void)name, (void)mode, (void)caller;
    done(ReadOnly());
  }
  virtual void RemoveDir(InodeId parent, std::string name, StatusCallback done) {
    (void)parent, (void)name;
    done(ReadOnly());
  }
  virtual void Unlink(InodeId parent, std::string name, StatusCallback done) {
    (void)parent, (void)name;
    done(ReadOnly());
  }
  // flags: RENAME_NOREPLACE (fails with EEXIST when new_name exists) or 0.
  virtual void Rename(InodeId parent, std::string name, InodeId new_parent, std::string new_name,
                      unsigned flags, StatusCallback done) {
    (void)parent, (void)name, (void)new_parent, (void)new_name, (void)flags;
    done(ReadOnly());
  }

 protected:
  static Status ReadOnly() {
    return Status(ErrorCode::kReadOnly, "the mount is read-only (mount with --allow-writes)");
  }
};

}  // namespace ossmount::fs
