// MemoryFilesystem: an in-memory fs::Filesystem (and fs::SessionHooks) double for the FUSE
// adapter tests.
//
// A fixed tree built before mounting. Completions are posted to the given io_context (never
// run inline), as the Filesystem contract requires. Reads of a file marked slow never
// complete on their own: they wait on a timer an hour long, so a test can stop the mount
// with a reader blocked, and the handler is only destroyed with the io_context (which
// exercises ReplyOnce's EIO fallback).
//
// Thread-safety: all methods may be called from any thread (one mutex).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fs/filesystem.h"
#include "fs/session_hooks.h"

namespace ossmount::testing {

class MemoryFilesystem : public fs::Filesystem, public fs::SessionHooks {
 public:
  explicit MemoryFilesystem(boost::asio::io_context& io);

  // Building the tree (before mounting). Paths are relative, '/'-separated; parents must
  // exist. Returns the inode.
  fs::InodeId AddDir(const std::string& path);
  fs::InodeId AddFile(const std::string& path, std::string content, bool slow = false);

  // Every read that is not slow completes after `delay` instead of at once (from a timer,
  // so many reads wait at the same time).
  void SetReadDelay(std::chrono::milliseconds delay);
  // What the adapter counted as transport buffers (CountTransportBuffers), in all.
  uint64_t transport_buffers() const;

  // Observations for the tests.
  int64_t lookup_count(fs::InodeId ino) const;
  uint64_t add_lookup_calls() const;
  bool lookup_count_went_negative() const;
  int slow_reads_started() const;
  bool WaitForSlowRead(int n, std::chrono::milliseconds timeout);
  int open_handles() const;
  // Destroys the pending slow reads' timers (cancelling them) now. Call before the
  // io_context goes away: the FUSE server co-owns this double and may outlive the io_context,
  // and a timer destroyed after its io_context is a use-after-free (found by ASan).
  void CancelSlowReads();

  void Lookup(fs::InodeId parent, std::string name, fs::Callback<fs::Entry> done) override;
  void Forget(fs::InodeId ino, uint64_t nlookup) override;
  void AddLookup(fs::InodeId ino) override;
  void GetAttr(fs::InodeId ino, fs::Callback<fs::AttrReply> done) override;
  void OpenDir(fs::InodeId ino, fs::Callback<uint64_t> done) override;
  void ReadDir(fs::InodeId ino, uint64_t dir_handle, off_t offset,
               fs::Callback<std::vector<fs::DirEntry>> done) override;
  void ReleaseDir(fs::InodeId ino, uint64_t dir_handle) override;
  using fs::Filesystem::Open;
  void Open(fs::InodeId ino, int flags, const fs::Caller& caller,
            fs::Callback<fs::OpenReply> done) override;
  void Read(fs::InodeId ino, uint64_t fh, off_t offset, size_t size,
            fs::Callback<fs::ReadReply> done) override;
  void Release(fs::InodeId ino, uint64_t fh) override;
  fs::StatFs GetStatFs() override;

  void SetBackingFilesWanted(bool) override {}
  void CountTransportBuffers(uint64_t bytes) override;
  std::optional<std::string> DirectoryPath(fs::InodeId ino) override;
  void EndSession() override {}

 private:
  struct Node {
    fs::InodeId ino = 0;
    std::string path;  // relative to the root
    bool is_dir = false;
    std::string content;
    bool slow = false;
    std::map<std::string, fs::InodeId> children;  // sorted: stable offsets
    int64_t lookups = 0;
  };
  fs::Attributes AttrOf(const Node& n) const;
  fs::InodeId Resolve(const std::string& path) const;  // 0 if missing; caller holds mu_
  fs::InodeId AddNode(const std::string& path, Node node);

  boost::asio::io_context& io_;
  mutable std::mutex mu_;
  std::condition_variable slow_cv_;
  std::map<fs::InodeId, Node> nodes_;
  fs::InodeId next_ino_ = fs::kRootInode + 1;
  uint64_t next_handle_ = 1;
  int open_handles_ = 0;
  uint64_t add_lookup_calls_ = 0;
  bool negative_ = false;
  int slow_reads_ = 0;
  std::chrono::milliseconds read_delay_{0};
  uint64_t transport_buffers_ = 0;
  // Pending slow reads. CancelSlowReads() (or destroying the double) cancels them; their
  // handlers then wait in the (stopped) io_context and are destroyed with it.
  std::vector<std::unique_ptr<boost::asio::steady_timer>> slow_timers_;
};

}  // namespace ossmount::testing
