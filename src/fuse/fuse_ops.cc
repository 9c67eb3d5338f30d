#include "fuse/fuse_ops.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuse/passthrough.h"
#include "ossmount/control_ioctl.h"

namespace ossmount::fuse {
namespace {

// Offsets 0 and 1 are '.' and '..'; Filesystem offset N travels as N + kDotEntries.
constexpr off_t kDotEntries = 2;

AdapterContext* Ctx(fuse_req_t req) { return static_cast<AdapterContext*>(fuse_req_userdata(req)); }

std::shared_ptr<ReplyOnce> Start(fuse_req_t req, const char* op) {
  return std::make_shared<ReplyOnce>(req, &Ctx(req)->tracker, op);
}

// For an operation that may wait on the network (a listing, a GET): a caller interrupted
// while it waits is answered EINTR at once (ReplyOnce::AnswerInterrupts). What the operation
// started goes on for other waiters and the caches, bounded by the request deadlines and the
// listing guard; its late reply is dropped.
std::shared_ptr<ReplyOnce> StartInterruptible(fuse_req_t req, const char* op) {
  auto reply = Start(req, op);
  ReplyOnce::AnswerInterrupts(reply);
  return reply;
}

fs::Caller CallerOf(fuse_req_t req) {
  fs::Caller caller;
  if (const fuse_ctx* c = fuse_req_ctx(req)) {
    caller.pid = static_cast<uint32_t>(c->pid);
    caller.uid = c->uid;
    caller.gid = c->gid;
  }
  return caller;
}

int ErrnoOf(const Status& st) {
  int e = st.ToErrno();
  return e > 0 ? e : EIO;
}

void LogFailure(const char* op, uint64_t ino, const Status& st) {
  // Missing names are the normal answer to many lookups: keep them out of the warnings.
  if (st.code() == ErrorCode::kNotFound) {
    spdlog::trace("fuse {} ino {}: {}", op, ino, st.ToString());
  } else {
    spdlog::warn("fuse {} ino {}: {}", op, ino, st.ToString());
  }
}

// ---- init / destroy ----------------------------------------------------------------------

void OpInit(void* userdata, fuse_conn_info* conn) {
  auto* ctx = static_cast<AdapterContext*>(userdata);
  // readdirplus hands the kernel each entry's attributes with the listing (the Filesystem
  // has them from the LIST page anyway), so the open() after os.scandir needs no LOOKUP.
  // "Auto" mode would fall back to plain readdir after the first batch unless the
  // directory had lookups; for datasets we always want plus, so auto is switched off.
  if (conn->capable & FUSE_CAP_READDIRPLUS) conn->want |= FUSE_CAP_READDIRPLUS;
  conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
  // Lookups and readdirs in one directory run concurrently (many DataLoader workers).
  if (conn->capable & FUSE_CAP_PARALLEL_DIROPS) conn->want |= FUSE_CAP_PARALLEL_DIROPS;
  // Several reads of one file may be in flight at once (readahead + the reader).
  if (conn->capable & FUSE_CAP_ASYNC_READ) conn->want |= FUSE_CAP_ASYNC_READ;
  // No splice: replies come from memory we already own (fuse_reply_buf writes them with one
  // writev and no copy), so moving pages through a pipe would only add work.
  conn->want &= ~(FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
  // O_TRUNC arrives with the open instead of as a truncate before it, so a file opened for
  // rewriting is one upload. No writeback cache: every write reaches the Filesystem before
  // write(2) returns, so close and fsync answer for all of them.
  if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
  // A link's target is kept in the kernel's page cache: one GetSymlink per link, not per walk.
  if (conn->capable & FUSE_CAP_CACHE_SYMLINKS) conn->want |= FUSE_CAP_CACHE_SYMLINKS;
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  conn->max_write = ctx->max_write;
  conn->max_background = ctx->max_background;
  conn->congestion_threshold = ctx->congestion_threshold;
  spdlog::debug("fuse init: protocol {}.{}, capable {:#x}, want {:#x}", conn->proto_major,
                conn->proto_minor, conn->capable, conn->want);
}

// ---- names and attributes ----------------------------------------------------------------

void OpLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  auto reply = StartInterruptible(req, "lookup");
  AdapterContext* ctx = Ctx(req);
  std::shared_ptr<fs::Filesystem> fs = ctx->fs;
  fs->Lookup(parent, std::string(name), [reply, fs, parent](Result<fs::Entry> r) {
    if (!r.ok()) {
      LogFailure("lookup", parent, r.status());
      reply->Err(ErrnoOf(r.status()));
      return;
    }
    fuse_entry_param e = ToEntryParam(*r);
    if (reply->Entry(e) != 0) {
      // The kernel did not take the entry (interrupted): undo the lookup count it implies.
      fs->Forget(e.ino, 1);
    }
  });
}

void OpForget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  Ctx(req)->fs->Forget(ino, nlookup);
  fuse_reply_none(req);
}

void OpForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  fs::Filesystem& fs = *Ctx(req)->fs;
  for (size_t i = 0; i < count; ++i) fs.Forget(forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

void OpGetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  auto reply = StartInterruptible(req, "getattr");
  Ctx(req)->fs->GetAttr(ino, [reply, ino](Result<fs::AttrReply> r) {
    if (!r.ok()) {
      // ESTALE: the name went or changed kind, and the kernel looks it up again.
      if (r.status().code() == ErrorCode::kPreconditionFailed) {
        spdlog::debug("fuse getattr ino {}: {}", ino, r.status().ToString());
      } else {
        LogFailure("getattr", ino, r.status());
      }
      reply->Err(ErrnoOf(r.status()));
      return;
    }
    reply->Attr(ToStat(r->attr), r->attr_timeout);
  });
}

// ---- directories -------------------------------------------------------------------------

void OpOpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto reply = StartInterruptible(req, "opendir");
  AdapterContext* ctx = Ctx(req);
  std::shared_ptr<fs::Filesystem> fs = ctx->fs;
  fuse_file_info info = *fi;  // the caller's struct dies when this op returns
  bool cache = ctx->cache_readdir;
  fs->OpenDir(ino, [reply, fs, ino, info, cache](Result<uint64_t> r) mutable {
    if (!r.ok()) {
      LogFailure("opendir", ino, r.status());
      reply->Err(ErrnoOf(r.status()));
      return;
    }
    info.fh = *r;
    info.cache_readdir = cache;
    info.keep_cache = cache;
    if (reply->Open(info) != 0) fs->ReleaseDir(ino, info.fh);
  });
}

void ReadDirCommon(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, fuse_file_info* fi,
                   bool plus) {
  auto reply = StartInterruptible(req, plus ? "readdirplus" : "readdir");
  if (offset < 0) {
    reply->Err(EINVAL);
    return;
  }
  std::shared_ptr<fs::Filesystem> fs = Ctx(req)->fs;
  off_t fs_offset = offset >= kDotEntries ? offset - kDotEntries : 0;
  fs->ReadDir(ino, fi->fh, fs_offset,
              [reply, fs, req, ino, size, offset, plus](Result<std::vector<fs::DirEntry>> r) {
                if (!r.ok()) {
                  LogFailure("readdir", ino, r.status());
                  reply->Err(ErrnoOf(r.status()));
                  return;
                }
                std::vector<char> buf(size);
                size_t used = 0;
                // Adds one entry if it fits; false when the buffer is full.
                auto add = [&](const char* name, const fuse_entry_param& e, off_t next) {
                  size_t room = size - used;
                  size_t need =
                      plus ? fuse_add_direntry_plus(req, buf.data() + used, room, name, &e, next)
                           : fuse_add_direntry(req, buf.data() + used, room, name, &e.attr, next);
                  if (need > room) return false;
                  used += need;
                  return true;
                };
                fuse_entry_param dot{};
                // The kernel takes no reference for '.' and '..' in readdirplus; ino 0 in
                // the entry says "no attributes", st_ino still fills d_ino.
                dot.attr.st_mode = S_IFDIR;
                dot.attr.st_ino = ino;
                bool full = false;
                if (offset == 0) full = !add(".", dot, 1);
                if (!full && offset <= 1) full = !add("..", dot, 2);
                std::vector<fuse_ino_t> handed_out;
                if (!full) {
                  for (const fs::DirEntry& d : *r) {
                    if (d.name == "." || d.name == "..") continue;
                    fuse_entry_param e = ToEntryParam(d.entry);
                    if (!add(d.name.c_str(), e, d.next_offset + kDotEntries)) break;
                    if (plus && e.ino != 0) handed_out.push_back(e.ino);
                  }
                }
                // References are taken before the reply: once the kernel has the entries it
                // may send FORGET for them at any moment.
                for (fuse_ino_t child : handed_out) fs->AddLookup(child);
                if (reply->Buf(buf.data(), used) != 0) {
                  for (fuse_ino_t child : handed_out) fs->Forget(child, 1);
                }
              });
}

void OpReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  ReadDirCommon(req, ino, size, off, fi, false);
}

void OpReadDirPlus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  ReadDirCommon(req, ino, size, off, fi, true);
}

void OpReleaseDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  if (Ctx(req)->control) Ctx(req)->control->Forget(fi->fh);
  Ctx(req)->fs->ReleaseDir(ino, fi->fh);
  fuse_reply_err(req, 0);
}

// ---- files -------------------------------------------------------------------------------

// Tells the kernel to drop the attributes it holds for `ino`, so that its next fstat or read
// asks for them (offset -1: the attributes only, no page locks taken). The kernel handles
// the notification within this write; ENOENT means it holds no such inode.
void DropKernelAttributes(fuse_session* session, fuse_ino_t ino) {
  if (session == nullptr) return;  // no kernel (unit tests)
  const int rc = fuse_lowlevel_notify_inval_inode(session, ino, -1, 0);
  if (rc != 0 && rc != -ENOENT) {
    spdlog::warn("fuse open ino {}: dropping the kernel's attributes failed: {}", ino,
                 std::strerror(-rc));
  }
}

void OpOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto reply = StartInterruptible(req, "open");
  AdapterContext* ctx = Ctx(req);
  std::shared_ptr<fs::Filesystem> fs = ctx->fs;
  fuse_file_info info = *fi;
  const fs::Caller caller = CallerOf(req);  // for the audit log, and flush's opener check
  fs->Open(ino, fi->flags, caller, [reply, fs, ino, info, ctx](Result<fs::OpenReply> r) mutable {
    if (!r.ok()) {
      // ESTALE from an open makes the kernel look the path up again and open what it finds:
      // a file that changed while open here gets a new inode that way (fs/open_files.h).
      if (r.status().code() == ErrorCode::kPreconditionFailed) {
        spdlog::debug("fuse open ino {}: {}", ino, r.status().ToString());
      } else {
        LogFailure("open", ino, r.status());
      }
      reply->Err(ErrnoOf(r.status()));
      return;
    }
    // Before the reply: the opener must not see the size of another version.
    if (r->attributes_changed) DropKernelAttributes(ctx->session, ino);
    Passthrough* passthrough = ctx->passthrough;
    info.fh = r->fh;
    info.keep_cache = r->keep_cache;
    info.direct_io = r->direct_io;
    int32_t backing_id = 0;
    if (passthrough != nullptr) {
      backing_id =
          passthrough->BeginOpen(ino, info.fh, r->backing_file ? r->backing_file->get() : -1);
    }
    r->backing_file.reset();  // the kernel holds its own reference now
    const int sent = backing_id > 0 ? reply->OpenPassthrough(info, backing_id) : reply->Open(info);
    if (sent != 0) {  // nobody will release it
      if (passthrough != nullptr) passthrough->EndOpen(ino, info.fh);
      fs->Release(ino, info.fh);
    }
  });
}

void OpRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  auto reply = StartInterruptible(req, "read");
  Ctx(req)->fs->Read(ino, fi->fh, off, size, [reply, ino](Result<fs::ReadReply> r) {
    if (!r.ok()) {
      LogFailure("read", ino, r.status());
      reply->Err(ErrnoOf(r.status()));
      return;
    }
    // r->owner keeps r->data alive until fuse_reply_buf has written it.
    reply->Buf(r->data, r->size);
  });
}

void OpRelease(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  if (Passthrough* passthrough = Ctx(req)->passthrough) passthrough->EndOpen(ino, fi->fh);
  Ctx(req)->fs->Release(ino, fi->fh);
  fuse_reply_err(req, 0);
}

void OpStatFs(fuse_req_t req, fuse_ino_t) {
  ReplyOnce reply(req, &Ctx(req)->tracker, "statfs");
  fs::StatFs s = Ctx(req)->fs->GetStatFs();
  struct statvfs st {};
  st.f_bsize = s.block_size;
  st.f_frsize = s.block_size;
  st.f_blocks = s.blocks;
  st.f_bfree = s.blocks_free;
  st.f_bavail = s.blocks_free;
  st.f_files = s.files;
  st.f_ffree = s.files_free;
  st.f_favail = s.files_free;
  st.f_namemax = s.name_max;
  reply.StatFs(st);
}

// ---- control requests (ossmount/control_ioctl.h) -----------------------------------------

void OpIoctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void*, fuse_file_info* fi,
             unsigned flags, const void* in_buf, size_t in_bufsz, size_t out_bufsz) {
  const std::shared_ptr<ControlRequests>& control = Ctx(req)->control;
  const bool on_directory = (flags & FUSE_IOCTL_DIR) != 0;
  if (control == nullptr || !on_directory ||
      (cmd != control::kControlSend && cmd != control::kControlReceive)) {
    fuse_reply_err(req, ENOTTY);
    return;
  }
  auto reply = Start(req, "ioctl");
  if (cmd == control::kControlSend) {
    // The chunk is read where the kernel put it; only its header is copied (alignment).
    uint32_t length = 0;
    if (in_bufsz != sizeof(control::ControlChunk)) {
      reply->Err(EINVAL);
      return;
    }
    std::memcpy(&length, in_buf, sizeof length);
    if (length > control::kControlChunkData) {
      reply->Err(EINVAL);
      return;
    }
    const char* data = static_cast<const char*>(in_buf) + offsetof(control::ControlChunk, data);
    const int error = control->Send(fi->fh, std::string_view(data, length));
    if (error != 0) {
      reply->Err(error);
    } else {
      reply->Ioctl(0, nullptr, 0);
    }
    return;
  }
  if (out_bufsz != sizeof(control::ControlChunk)) {
    reply->Err(EINVAL);
    return;
  }
  ControlCaller caller;
  if (const fuse_ctx* c = fuse_req_ctx(req)) {
    caller.pid = static_cast<int>(c->pid);
    caller.uid = c->uid;
  }
  std::optional<std::string> directory = Ctx(req)->hooks->DirectoryPath(ino);
  if (!directory) {  // the kernel holds the open directory: not expected
    reply->Err(ESTALE);
    return;
  }
  caller.directory = std::move(*directory);
  control->Receive(fi->fh, control::kControlChunkData, caller,
                   [reply](int error, std::string_view piece) {
                     if (error != 0) {
                       reply->Err(error);
                       return;
                     }
                     // Only the header and the piece: the kernel copies back what it gets.
                     const uint32_t header[2] = {static_cast<uint32_t>(piece.size()), 0};
                     static_assert(sizeof header == offsetof(control::ControlChunk, data));
                     std::string out(reinterpret_cast<const char*>(header), sizeof header);
                     out.append(piece);
                     reply->Ioctl(static_cast<int>(piece.size()), out.data(), out.size());
                   });
}

// ---- extended attributes -----------------------------------------------------------------

// getxattr and listxattr answer alike: the size when asked with none (size 0), ERANGE when
// the caller's buffer is too small, else the bytes.
void ReplyXattrBytes(ReplyOnce& reply, size_t size, std::string_view bytes) {
  if (size == 0) {
    reply.Xattr(bytes.size());
  } else if (size < bytes.size()) {
    reply.Err(ERANGE);
  } else {
    reply.Buf(bytes.data(), bytes.size());
  }
}

// Without kept attributes, ENOSYS (not ENOTSUP): the kernel then stops sending GETXATTR for
// the life of the mount and answers EOPNOTSUPP itself, which is what callers would have seen
// anyway; `ls -l` and SELinux probes no longer cost a round trip per file.
void OpGetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  if (!Ctx(req)->fs->KeepsXattrs()) {
    fuse_reply_err(req, ENOSYS);
    return;
  }
  auto reply = Start(req, "getxattr");
  Ctx(req)->fs->GetXattr(ino, name, [reply, ino, size](Result<std::string> r) {
    if (!r.ok()) {
      if (r.status().code() != ErrorCode::kNoAttribute) LogFailure("getxattr", ino, r.status());
      reply->Err(ErrnoOf(r.status()));
    } else {
      ReplyXattrBytes(*reply, size, *r);
    }
  });
}

// The names, each ending in a NUL, as listxattr(2) returns them.
void OpListXattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  auto reply = Start(req, "listxattr");
  Ctx(req)->fs->ListXattr(ino, [reply, ino, size](Result<std::vector<std::string>> r) {
    if (!r.ok()) {
      LogFailure("listxattr", ino, r.status());
      reply->Err(ErrnoOf(r.status()));
      return;
    }
    std::string list;
    for (const std::string& name : *r) list.append(name).push_back('\0');
    ReplyXattrBytes(*reply, size, list);
  });
}

// ---- writes (EROFS unless the mount has writes on) -----------------------------------------
// Not interruptible: a write's bytes are taken once it is answered, and a close or fsync
// waiting for its upload must return the upload's result, not EINTR.

// Answers a request whose Filesystem call reports only a status.
fs::StatusCallback AnswerStatus(std::shared_ptr<ReplyOnce> reply, const char* op, uint64_t ino) {
  return [reply = std::move(reply), op, ino](Status s) {
    if (!s.ok()) LogFailure(op, ino, s);
    reply->Err(s.ok() ? 0 : ErrnoOf(s));
  };
}

void AnswerEntry(const std::shared_ptr<ReplyOnce>& reply, fs::Filesystem& fs, const char* op,
                 uint64_t parent, const Result<fs::Entry>& r) {
  if (!r.ok()) {
    LogFailure(op, parent, r.status());
    reply->Err(ErrnoOf(r.status()));
    return;
  }
  fuse_entry_param e = ToEntryParam(*r);
  if (reply->Entry(e) != 0) fs.Forget(e.ino, 1);
}

void OpSetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* fi) {
  auto reply = Start(req, "setattr");
  fs::SetAttrRequest request;
  if (to_set & FUSE_SET_ATTR_SIZE) request.size = static_cast<uint64_t>(attr->st_size);
  if (to_set & FUSE_SET_ATTR_MODE) request.mode = attr->st_mode;
  if (to_set & FUSE_SET_ATTR_UID) request.uid = attr->st_uid;
  if (to_set & FUSE_SET_ATTR_GID) request.gid = attr->st_gid;
  request.times = (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
                             FUSE_SET_ATTR_MTIME_NOW)) != 0;
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
    request.mtime_sec = static_cast<int64_t>(time(nullptr));
  } else if (to_set & FUSE_SET_ATTR_MTIME) {
    request.mtime_sec = static_cast<int64_t>(attr->st_mtime);
  }
  Ctx(req)->fs->SetAttr(ino, fi ? fi->fh : 0, request, [reply, ino](Result<fs::AttrReply> r) {
    if (!r.ok()) {
      LogFailure("setattr", ino, r.status());
      reply->Err(ErrnoOf(r.status()));
      return;
    }
    reply->Attr(ToStat(r->attr), r->attr_timeout);
  });
}
void OpMknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t) {
  auto reply = Start(req, "mknod");
  std::shared_ptr<fs::Filesystem> fs = Ctx(req)->fs;
  fs->MakeNode(parent, name, mode, CallerOf(req), [reply, fs, parent](Result<fs::Entry> r) {
    AnswerEntry(reply, *fs, "mknod", parent, r);
  });
}
void OpMkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  auto reply = Start(req, "mkdir");
  std::shared_ptr<fs::Filesystem> fs = Ctx(req)->fs;
  fs->MakeDir(parent, name, mode, CallerOf(req), [reply, fs, parent](Result<fs::Entry> r) {
    AnswerEntry(reply, *fs, "mkdir", parent, r);
  });
}
void OpUnlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  auto reply = Start(req, "unlink");
  Ctx(req)->fs->Unlink(parent, name, AnswerStatus(reply, "unlink", parent));
}
void OpRmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  auto reply = Start(req, "rmdir");
  Ctx(req)->fs->RemoveDir(parent, name, AnswerStatus(reply, "rmdir", parent));
}
void OpSymlink(fuse_req_t req, const char* target, fuse_ino_t parent, const char* name) {
  auto reply = Start(req, "symlink");
  std::shared_ptr<fs::Filesystem> fs = Ctx(req)->fs;
  fs->MakeSymlink(parent, name, target, [reply, fs, parent](Result<fs::Entry> r) {
    AnswerEntry(reply, *fs, "symlink", parent, r);
  });
}
void OpReadlink(fuse_req_t req, fuse_ino_t ino) {
  auto reply = Start(req, "readlink");
  Ctx(req)->fs->ReadLink(ino, [reply, ino](Result<std::string> r) {
    if (!r.ok()) {
      LogFailure("readlink", ino, r.status());
      reply->Err(ErrnoOf(r.status()));
      return;
    }
    reply->Readlink(r->c_str());
  });
}
void OpRename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t new_parent,
              const char* new_name, unsigned int flags) {
  auto reply = Start(req, "rename");
  Ctx(req)->fs->Rename(parent, name, new_parent, new_name, flags,
                       AnswerStatus(reply, "rename", parent));
}
// Objects cannot be hard links. EPERM is what link(2) answers for a file system that does not
// support them.
void OpLink(fuse_req_t req, fuse_ino_t, fuse_ino_t parent, const char* name) {
  spdlog::debug("fuse link '{}' in ino {}: hard links are not supported (EPERM)", name, parent);
  fuse_reply_err(req, EPERM);
}
void OpWrite(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
             fuse_file_info* fi) {
  auto reply = Start(req, "write");
  // The Filesystem copies `buf` before returning: the transport reuses it after this call.
  Ctx(req)->fs->Write(ino, fi->fh, off, buf, size, [reply, ino](Result<size_t> r) {
    if (!r.ok()) {
      LogFailure("write", ino, r.status());
      reply->Err(ErrnoOf(r.status()));
      return;
    }
    reply->Write(*r);
  });
}
void OpCreate(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t, fuse_file_info* fi) {
  auto reply = Start(req, "create");
  std::shared_ptr<fs::Filesystem> fs = Ctx(req)->fs;
  fuse_file_info info = *fi;
  fs->Create(parent, name, fi->flags, CallerOf(req),
             [reply, fs, parent, info](Result<fs::CreateReply> r) mutable {
               if (!r.ok()) {
                 LogFailure("create", parent, r.status());
                 reply->Err(ErrnoOf(r.status()));
                 return;
               }
               fuse_entry_param e = ToEntryParam(r->entry);
               info.fh = r->fh;
               info.keep_cache = 0;
               if (reply->Create(e, info) != 0) {  // nobody will release it or forget it
                 fs->Release(e.ino, info.fh);
                 fs->Forget(e.ino, 1);
               }
             });
}
void OpFlush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto reply = Start(req, "flush");
  Ctx(req)->fs->Flush(ino, fi->fh, CallerOf(req), AnswerStatus(reply, "flush", ino));
}
void OpFsync(fuse_req_t req, fuse_ino_t ino, int, fuse_file_info* fi) {
  auto reply = Start(req, "fsync");
  Ctx(req)->fs->Fsync(ino, fi->fh, AnswerStatus(reply, "fsync", ino));
}
// posix_fallocate gives a file being written its size (fs::Filesystem::Fallocate); without
// the operation glibc would emulate it by writing a byte into every 4 KiB block, out of order.
void OpFallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
                 fuse_file_info* fi) {
  auto reply = Start(req, "fallocate");
  Ctx(req)->fs->Fallocate(ino, fi->fh, mode, offset, length, AnswerStatus(reply, "fallocate", ino));
}
// Not supported on a writable mount (a read-only one answers EROFS in the kernel first):
// objects carry no extended attributes. ENOTSUP lets cp -p and cp -a fall back to chmod
// instead of stopping.
void OpSetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size,
                int flags) {
  auto reply = Start(req, "setxattr");
  Ctx(req)->fs->SetXattr(ino, name, std::string(value, size), flags,
                         AnswerStatus(std::move(reply), "setxattr", ino));
}

void OpRemoveXattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  auto reply = Start(req, "removexattr");
  Ctx(req)->fs->RemoveXattr(ino, name, AnswerStatus(std::move(reply), "removexattr", ino));
}

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops ops{};
  ops.init = OpInit;
  ops.lookup = OpLookup;
  ops.forget = OpForget;
  ops.forget_multi = OpForgetMulti;
  ops.getattr = OpGetAttr;
  ops.opendir = OpOpenDir;
  ops.readdir = OpReadDir;
  ops.readdirplus = OpReadDirPlus;
  ops.releasedir = OpReleaseDir;
  ops.open = OpOpen;
  ops.read = OpRead;
  ops.release = OpRelease;
  ops.statfs = OpStatFs;
  ops.getxattr = OpGetXattr;
  ops.listxattr = OpListXattr;
  ops.setattr = OpSetAttr;
  ops.mknod = OpMknod;
  ops.mkdir = OpMkdir;
  ops.unlink = OpUnlink;
  ops.rmdir = OpRmdir;
  ops.symlink = OpSymlink;
  ops.readlink = OpReadlink;
  ops.rename = OpRename;
  ops.link = OpLink;
  ops.write = OpWrite;
  ops.create = OpCreate;
  ops.flush = OpFlush;
  ops.fsync = OpFsync;
  ops.fallocate = OpFallocate;
  ops.setxattr = OpSetXattr;
  ops.removexattr = OpRemoveXattr;
  ops.ioctl = OpIoctl;
  // Not implemented on purpose: flush/fsync (nothing to write back; ENOSYS makes the kernel
  // stop sending them), access (default_permissions lets the kernel decide).
  return ops;
}

}  // namespace

struct stat ToStat(const fs::Attributes& attr) {
  struct stat st {};
  st.st_ino = attr.ino;
  st.st_mode = attr.mode;
  st.st_nlink = attr.nlink;
  st.st_uid = attr.uid;
  st.st_gid = attr.gid;
  st.st_size = static_cast<off_t>(attr.size);
  st.st_blksize = 4096;
  st.st_blocks = static_cast<blkcnt_t>((attr.size + 511) / 512);
  st.st_mtim.tv_sec = attr.mtime_sec;
  st.st_ctim.tv_sec = attr.mtime_sec;
  st.st_atim.tv_sec = attr.mtime_sec;
  return st;
}

fuse_entry_param ToEntryParam(const fs::Entry& entry) {
  fuse_entry_param e{};
  // Nodeid 0 in a readdirplus entry: the kernel makes no dentry for it (and takes no
  // reference), while st_ino still fills the entry's d_ino.
  e.ino = entry.name_only ? 0 : entry.attr.ino;
  e.generation = 0;
  e.attr = ToStat(entry.attr);
  e.attr_timeout = entry.attr_timeout;
  e.entry_timeout = entry.entry_timeout;
  return e;
}

const fuse_lowlevel_ops& AdapterOps() {
  static const fuse_lowlevel_ops ops = MakeOps();
  return ops;
}

}  // namespace ossmount::fuse
