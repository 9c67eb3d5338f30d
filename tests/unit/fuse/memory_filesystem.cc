#include "unit/fuse/memory_filesystem.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>

namespace ossmount::testing {

using fs::InodeId;

MemoryFilesystem::MemoryFilesystem(boost::asio::io_context& io) : io_(io) {
  Node root;
  root.ino = fs::kRootInode;
  root.is_dir = true;
  nodes_[fs::kRootInode] = root;
}

InodeId MemoryFilesystem::Resolve(const std::string& path) const {
  InodeId cur = fs::kRootInode;
  size_t start = 0;
  while (start < path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    const Node& n = nodes_.at(cur);
    auto it = n.children.find(path.substr(start, slash - start));
    if (it == n.children.end()) return 0;
    cur = it->second;
    start = slash + 1;
  }
  return cur;
}

InodeId MemoryFilesystem::AddNode(const std::string& path, Node node) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t slash = path.rfind('/');
  std::string parent = slash == std::string::npos ? "" : path.substr(0, slash);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  InodeId p = Resolve(parent);
  node.ino = next_ino_++;
  node.path = path;
  nodes_.at(p).children[name] = node.ino;
  nodes_[node.ino] = std::move(node);
  return next_ino_ - 1;
}

std::optional<std::string> MemoryFilesystem::DirectoryPath(InodeId ino) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end() || !it->second.is_dir) return std::nullopt;
  return it->second.path;
}

InodeId MemoryFilesystem::AddDir(const std::string& path) {
  Node n;
  n.is_dir = true;
  return AddNode(path, std::move(n));
}

InodeId MemoryFilesystem::AddFile(const std::string& path, std::string content, bool slow) {
  Node n;
  n.content = std::move(content);
  n.slow = slow;
  return AddNode(path, std::move(n));
}

fs::Attributes MemoryFilesystem::AttrOf(const Node& n) const {
  fs::Attributes a;
  a.ino = n.ino;
  a.is_dir = n.is_dir;
  a.size = n.is_dir ? 0 : n.content.size();
  a.mtime_sec = 1700000000;
  a.mode = n.is_dir ? (S_IFDIR | 0555) : (S_IFREG | 0444);
  a.uid = 1234;
  a.gid = 5678;
  a.nlink = n.is_dir ? 2 : 1;
  return a;
}

int64_t MemoryFilesystem::lookup_count(InodeId ino) const {
  std::lock_guard<std::mutex> lock(mu_);
  return nodes_.at(ino).lookups;
}
uint64_t MemoryFilesystem::add_lookup_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return add_lookup_calls_;
}
bool MemoryFilesystem::lookup_count_went_negative() const {
  std::lock_guard<std::mutex> lock(mu_);
  return negative_;
}
int MemoryFilesystem::slow_reads_started() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slow_reads_;
}
bool MemoryFilesystem::WaitForSlowRead(int n, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return slow_cv_.wait_for(lock, timeout, [&] { return slow_reads_ >= n; });
}
int MemoryFilesystem::open_handles() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_handles_;
}

void MemoryFilesystem::Lookup(InodeId parent, std::string name, fs::Callback<fs::Entry> done) {
  Result<fs::Entry> result = Status(ErrorCode::kNotFound, "no such name");
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto p = nodes_.find(parent);
    if (p == nodes_.end() || !p->second.is_dir) {
      result = Status(ErrorCode::kNotFound, "no such directory");
    } else if (auto it = p->second.children.find(name); it != p->second.children.end()) {
      Node& n = nodes_.at(it->second);
      ++n.lookups;
      fs::Entry e;
      e.attr = AttrOf(n);
      e.entry_timeout = 1;
      e.attr_timeout = 1;
      result = e;
    }
  }
  boost::asio::post(io_, [done = std::move(done), result]() { done(result); });
}

void MemoryFilesystem::Forget(InodeId ino, uint64_t nlookup) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  it->second.lookups -= static_cast<int64_t>(nlookup);
  if (it->second.lookups < 0 && ino != fs::kRootInode) negative_ = true;
}

void MemoryFilesystem::AddLookup(InodeId ino) {
  std::lock_guard<std::mutex> lock(mu_);
  ++nodes_.at(ino).lookups;
  ++add_lookup_calls_;
}

void MemoryFilesystem::GetAttr(InodeId ino, fs::Callback<fs::AttrReply> done) {
  Result<fs::AttrReply> result = Status(ErrorCode::kNotFound, "stale inode");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = nodes_.find(ino); it != nodes_.end()) {
      fs::AttrReply r;
      r.attr = AttrOf(it->second);
      r.attr_timeout = 1;
      result = r;
    }
  }
  boost::asio::post(io_, [done = std::move(done), result]() { done(result); });
}

void MemoryFilesystem::OpenDir(InodeId ino, fs::Callback<uint64_t> done) {
  Result<uint64_t> result = Status(ErrorCode::kNotFound, "no such directory");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = nodes_.find(ino); it != nodes_.end() && it->second.is_dir) {
      result = next_handle_++;
      ++open_handles_;
    }
  }
  boost::asio::post(io_, [done = std::move(done), result]() { done(result); });
}

void MemoryFilesystem::ReadDir(InodeId ino, uint64_t, off_t offset,
                               fs::Callback<std::vector<fs::DirEntry>> done) {
  // Returns every entry from `offset` on (the adapter must cope with more than fits).
  Result<std::vector<fs::DirEntry>> result = Status(ErrorCode::kNotFound, "no such directory");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = nodes_.find(ino); it != nodes_.end() && it->second.is_dir) {
      std::vector<fs::DirEntry> out;
      off_t i = 0;
      for (const auto& [name, child] : it->second.children) {
        if (i++ < offset) continue;
        fs::DirEntry d;
        d.name = name;
        d.entry.attr = AttrOf(nodes_.at(child));
        d.entry.entry_timeout = 1;
        d.entry.attr_timeout = 1;
        d.next_offset = i;
        out.push_back(std::move(d));
      }
      result = std::move(out);
    }
  }
  boost::asio::post(io_, [done = std::move(done), result]() { done(result); });
}

void MemoryFilesystem::ReleaseDir(InodeId, uint64_t) {
  std::lock_guard<std::mutex> lock(mu_);
  --open_handles_;
}

void MemoryFilesystem::Open(InodeId ino, int flags, const fs::Caller& /*caller*/,
                            fs::Callback<fs::OpenReply> done) {
  Result<fs::OpenReply> result = Status(ErrorCode::kNotFound, "no such file");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if ((flags & O_ACCMODE) != O_RDONLY) {
      result = Status(ErrorCode::kReadOnly, "read-only");
    } else if (auto it = nodes_.find(ino); it != nodes_.end() && !it->second.is_dir) {
      fs::OpenReply r;
      r.fh = next_handle_++;
      r.keep_cache = true;
      ++open_handles_;
      result = r;
    }
  }
  boost::asio::post(io_, [done = std::move(done), result]() { done(result); });
}

void MemoryFilesystem::Read(InodeId ino, uint64_t, off_t offset, size_t size,
                            fs::Callback<fs::ReadReply> done) {
  std::shared_ptr<const std::string> content;
  bool slow = false;
  std::chrono::milliseconds delay{0};
  {
    std::lock_guard<std::mutex> lock(mu_);
    delay = read_delay_;
    auto it = nodes_.find(ino);
    if (it != nodes_.end()) {
      content = std::make_shared<const std::string>(it->second.content);
      slow = it->second.slow;
      if (slow) ++slow_reads_;
    }
  }
  if (slow) slow_cv_.notify_all();
  if (!content) {
    boost::asio::post(
        io_, [done = std::move(done)]() { done(Status(ErrorCode::kNotFound, "stale inode")); });
    return;
  }
  auto reply = [content, offset, size]() {
    fs::ReadReply r;
    size_t off = std::min<size_t>(static_cast<size_t>(offset), content->size());
    r.data = content->data() + off;
    r.size = std::min(size, content->size() - off);
    r.owner = content;
    return r;
  };
  if (slow) {
    auto timer = std::make_unique<boost::asio::steady_timer>(io_, std::chrono::hours(1));
    timer->async_wait([done = std::move(done)](boost::system::error_code) {
      done(Status(ErrorCode::kTimeout, "slow read gave up"));
    });
    std::lock_guard<std::mutex> lock(mu_);
    slow_timers_.push_back(std::move(timer));
    return;
  }
  if (delay.count() > 0) {
    auto timer = std::make_shared<boost::asio::steady_timer>(io_, delay);
    timer->async_wait(
        [timer, done = std::move(done), reply](boost::system::error_code) { done(reply()); });
    return;
  }
  boost::asio::post(io_, [done = std::move(done), reply]() { done(reply()); });
}

void MemoryFilesystem::CountTransportBuffers(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  transport_buffers_ += bytes;
}

uint64_t MemoryFilesystem::transport_buffers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return transport_buffers_;
}

void MemoryFilesystem::SetReadDelay(std::chrono::milliseconds delay) {
  std::lock_guard<std::mutex> lock(mu_);
  read_delay_ = delay;
}

void MemoryFilesystem::CancelSlowReads() {
  std::vector<std::unique_ptr<boost::asio::steady_timer>> timers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    timers.swap(slow_timers_);
  }
  timers.clear();  // outside the lock: cancelling posts handlers, never runs them inline
}

void MemoryFilesystem::Release(InodeId, uint64_t) {
  std::lock_guard<std::mutex> lock(mu_);
  --open_handles_;
}

fs::StatFs MemoryFilesystem::GetStatFs() {
  fs::StatFs s;
  s.block_size = 4096;
  s.blocks = 1000;
  s.blocks_free = 0;
  s.files = static_cast<uint64_t>(nodes_.size());
  s.files_free = 0;
  s.name_max = 255;
  return s;
}

}  // namespace ossmount::testing
