// Test harness for the filesystem's writes: the fs Harness with writes on, small parts (64 KiB,
// 16 KiB the smallest the fake accepts), and blocking wrappers around the write calls.
#pragma once

#include <fcntl.h>

#include <functional>
#include <string>

#include "fs_harness.h"
#include "support/byte_units.h"

namespace fswrite {

using namespace fstest;
using ossmount::testing::KiB;
using ossmount::testing::MiB;

// The process that opened the files, unless a test says otherwise.
inline Caller Opener() { return Caller{4242, 1000, 1000}; }

inline FsOptions WritableOptions() {
  FsOptions o = Harness::DefaultOptions();
  o.writes.enabled = true;
  o.writes.upload.part_size = 64 * KiB;
  o.writes.upload.min_part_size = 16 * KiB;
  o.writes.upload.max_parts_in_flight = 4;
  o.writes.upload.copy_object_limit = 100 * KiB;
  o.writes.upload.copy_part_size = 40 * KiB;
  return o;
}

class WriteRig : public Harness {
 public:
  explicit WriteRig(FsOptions options = WritableOptions(), bool failing = false)
      : Harness(std::move(options), failing) {
    fake->set_min_part_size(16 * KiB);
  }

  Status WaitStatus(const std::function<void(StatusCallback)>& start) {
    auto r = Wait<bool>([&](Callback<bool> cb) {
      start([cb](Status s) {
        if (s.ok()) return cb(true);
        cb(s);
      });
    });
    return r.ok() ? Status::Ok() : r.status();
  }

  // open(path, "w") unless `flags` say otherwise.
  Result<CreateReply> Create(InodeId parent, const std::string& name,
                             int flags = O_WRONLY | O_CREAT | O_TRUNC, Caller caller = Opener()) {
    return Wait<CreateReply>(
        [&](Callback<CreateReply> cb) { fs->Create(parent, name, flags, caller, std::move(cb)); });
  }
  Result<OpenReply> OpenAs(InodeId ino, int flags, Caller caller = Opener()) {
    return Wait<OpenReply>(
        [&](Callback<OpenReply> cb) { fs->Open(ino, flags, caller, std::move(cb)); });
  }
  Result<size_t> Write(InodeId ino, uint64_t fh, uint64_t offset, const std::string& data) {
    return Wait<size_t>([&](Callback<size_t> cb) {
      fs->Write(ino, fh, static_cast<off_t>(offset), data.data(), data.size(), std::move(cb));
    });
  }
  // Writes `data` from `offset` on in `piece`-byte writes; the first error, or OK.
  Status WriteAll(InodeId ino, uint64_t fh, const std::string& data, size_t piece = 128 * KiB,
                  uint64_t offset = 0) {
    for (size_t at = 0; at < data.size(); at += piece) {
      auto w = Write(ino, fh, offset + at, data.substr(at, piece));
      if (!w.ok()) return w.status();
      if (*w != std::min(piece, data.size() - at)) {
        return Status(ErrorCode::kInternal, "short write");
      }
    }
    return Status::Ok();
  }
  Status Flush(InodeId ino, uint64_t fh, Caller caller = Opener()) {
    return WaitStatus([&](StatusCallback cb) { fs->Flush(ino, fh, caller, std::move(cb)); });
  }
  Status Fsync(InodeId ino, uint64_t fh) {
    return WaitStatus([&](StatusCallback cb) { fs->Fsync(ino, fh, std::move(cb)); });
  }
  Result<AttrReply> SetAttr(InodeId ino, uint64_t fh, const SetAttrRequest& request) {
    return Wait<AttrReply>(
        [&](Callback<AttrReply> cb) { fs->SetAttr(ino, fh, request, std::move(cb)); });
  }
  Result<Entry> MakeDir(InodeId parent, const std::string& name, uint32_t mode = 0755,
                        Caller caller = Opener()) {
    return Wait<Entry>(
        [&](Callback<Entry> cb) { fs->MakeDir(parent, name, mode, caller, std::move(cb)); });
  }
  Status RemoveDir(InodeId parent, const std::string& name) {
    return WaitStatus([&](StatusCallback cb) { fs->RemoveDir(parent, name, std::move(cb)); });
  }
  Status Unlink(InodeId parent, const std::string& name) {
    return WaitStatus([&](StatusCallback cb) { fs->Unlink(parent, name, std::move(cb)); });
  }
  Status Rename(InodeId parent, const std::string& name, InodeId new_parent,
                const std::string& new_name, unsigned flags = 0) {
    return WaitStatus([&](StatusCallback cb) {
      fs->Rename(parent, name, new_parent, new_name, flags, std::move(cb));
    });
  }

  // Create + WriteAll + Flush by the opener; REQUIREs each step. Returns the inode.
  InodeId WriteFile(InodeId parent, const std::string& name, const std::string& data) {
    auto c = Create(parent, name);
    REQUIRE(c.ok());
    REQUIRE(WriteAll(c->entry.attr.ino, c->fh, data).ok());
    REQUIRE(Flush(c->entry.attr.ino, c->fh).ok());
    fs->Release(c->entry.attr.ino, c->fh);
    return c->entry.attr.ino;
  }

  uint64_t BudgetUsed() const { return fs->upload_gate()->budget()->used(); }
  // Nothing of the write path left: no bytes in the budget, no part pending, no upload open.
  bool WritesSettled() const {
    return BudgetUsed() == 0 && fs->upload_gate()->parts_pending() == 0 &&
           fake->OpenUploadCount() == 0;
  }
};

inline std::vector<std::string> Names(const Result<std::vector<DirEntry>>& entries) {
  REQUIRE(entries.ok());
  return EntryNames(*entries);
}

}  // namespace fswrite
