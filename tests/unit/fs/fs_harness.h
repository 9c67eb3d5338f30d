// Test harness for the filesystem: a FakeObjectClient (optionally behind a
// FailingObjectClient), an io_context with two threads, a controllable clock, the dataset
// prefetcher attached as the daemon attaches it, and blocking wrappers around the
// asynchronous Filesystem calls (with a generous timeout against hangs).
#pragma once

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/metrics.h"
#include "fs/object_filesystem.h"
#include "fs/prefetch_link.h"
#include "support/eventually.h"
#include "support/failing_object_client.h"
#include "support/fake_object_client.h"

namespace fstest {

using namespace ossmount;
using namespace ossmount::fs;
using ossmount::testing::Eventually;
using ossmount::testing::FailingObjectClient;
using ossmount::testing::FakeObjectClient;
using ossmount::testing::Op;
using namespace std::chrono_literals;

// Deterministic pseudo-random content.
inline std::string Content(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(size, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

class Harness {
 public:
  explicit Harness(FsOptions options = DefaultOptions(), bool failing = false)
      : guard_(boost::asio::make_work_guard(io)),
        now_(std::make_shared<std::chrono::steady_clock::time_point>(
            std::chrono::steady_clock::time_point() + 1000h)) {
    fake = std::make_shared<FakeObjectClient>(io);
    std::shared_ptr<ObjectClient> client = fake;
    if (failing) {
      fail = std::make_shared<FailingObjectClient>(io, fake);
      client = fail;
    }
    auto now = now_;
    options.clock = [now]() { return *now; };
    fs = MakeObjectFilesystem(io, client, std::move(options));
    prefetcher = MakeDatasetPrefetcher(fs);
    fs->SetReadObserver(std::make_shared<PrefetchObserver>(prefetcher, fs->options()));
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this]() { io.run(); });
  }
  ~Harness() {
    prefetcher.reset();
    fs.reset();
    guard_.reset();
    for (auto& t : threads_) t.join();
  }

  static FsOptions DefaultOptions() {
    FsOptions o;
    o.metadata_ttl = std::nullopt;  // the dataset setting
    o.negative_ttl = 5s;
    return o;
  }

  void Advance(std::chrono::milliseconds d) { *now_ += d; }

  // Runs an asynchronous call and waits for its one callback.
  template <typename T, typename Start>
  Result<T> Wait(Start start) {
    auto promise = std::make_shared<std::promise<Result<T>>>();
    auto future = promise->get_future();
    start([promise](Result<T> r) { promise->set_value(std::move(r)); });
    if (future.wait_for(60s) != std::future_status::ready) {
      FAIL("filesystem call did not complete");
    }
    return future.get();
  }

  Result<Entry> Lookup(InodeId parent, const std::string& name) {
    return Wait<Entry>([&](Callback<Entry> cb) { fs->Lookup(parent, name, std::move(cb)); });
  }
  Result<AttrReply> GetAttr(InodeId ino) {
    return Wait<AttrReply>([&](Callback<AttrReply> cb) { fs->GetAttr(ino, std::move(cb)); });
  }
  Result<uint64_t> OpenDir(InodeId ino) {
    return Wait<uint64_t>([&](Callback<uint64_t> cb) { fs->OpenDir(ino, std::move(cb)); });
  }
  Result<std::vector<DirEntry>> ReadDir(InodeId ino, uint64_t fh, off_t offset) {
    return Wait<std::vector<DirEntry>>(
        [&](Callback<std::vector<DirEntry>> cb) { fs->ReadDir(ino, fh, offset, std::move(cb)); });
  }
  // Every entry from `offset` on, following next_offset like the kernel does.
  Result<std::vector<DirEntry>> ReadDirAll(InodeId ino, uint64_t fh, off_t offset = 0) {
    std::vector<DirEntry> all;
    while (true) {
      auto batch = ReadDir(ino, fh, offset);
      if (!batch.ok()) return batch.status();
      if (batch->empty()) return all;
      offset = batch->back().next_offset;
      for (auto& e : *batch) all.push_back(std::move(e));
    }
  }
  // OpenDir + ReadDirAll + ReleaseDir.
  Result<std::vector<DirEntry>> List(InodeId ino) {
    auto fh = OpenDir(ino);
    if (!fh.ok()) return fh.status();
    auto all = ReadDirAll(ino, *fh);
    fs->ReleaseDir(ino, *fh);
    return all;
  }
  // What the FUSE adapter does for readdirplus: OpenDir + ReadDirAll, a kernel reference
  // (AddLookup) to every entry handed out, then ReleaseDir. The entries keep their inode
  // numbers for later lookups; without the references they are dropped at ReleaseDir.
  Result<std::vector<DirEntry>> ListPlus(InodeId ino) {
    auto fh = OpenDir(ino);
    if (!fh.ok()) return fh.status();
    auto all = ReadDirAll(ino, *fh);
    if (all.ok()) {
      for (const auto& e : *all) fs->AddLookup(e.entry.attr.ino);
    }
    fs->ReleaseDir(ino, *fh);
    return all;
  }
  Result<OpenReply> Open(InodeId ino, int flags = O_RDONLY) {
    return Wait<OpenReply>([&](Callback<OpenReply> cb) { fs->Open(ino, flags, std::move(cb)); });
  }
  Result<std::string> Read(InodeId ino, uint64_t fh, off_t offset, size_t size) {
    auto r = Wait<ReadReply>(
        [&](Callback<ReadReply> cb) { fs->Read(ino, fh, offset, size, std::move(cb)); });
    if (!r.ok()) return r.status();
    return std::string(r->data, r->size);
  }
  // Reads to EOF in kernel-sized pieces.
  Result<std::string> ReadAll(InodeId ino, uint64_t fh, size_t piece = 128 * 1024) {
    std::string out;
    while (true) {
      auto r = Read(ino, fh, static_cast<off_t>(out.size()), piece);
      if (!r.ok()) return r.status();
      if (r->empty()) return out;
      out += *r;
    }
  }
  // Open + ReadAll + Release: a whole-file read as a reader does it.
  std::string ReadFile(InodeId ino) {
    auto open = Open(ino);
    REQUIRE(open.ok());
    auto data = ReadAll(ino, open->fh);
    REQUIRE(data.ok());
    fs->Release(ino, open->fh);
    return *data;
  }
  // Looks up each name of `path` ("d/f100") from the root, then ReadFile.
  std::string ReadPath(const std::string& path) {
    InodeId ino = kRootInode;
    size_t from = 0;
    while (true) {
      size_t slash = path.find('/', from);
      auto e = Lookup(ino, path.substr(from, slash == std::string::npos ? slash : slash - from));
      REQUIRE(e.ok());
      ino = e->attr.ino;
      if (slash == std::string::npos) return ReadFile(ino);
      from = slash + 1;
    }
  }

  boost::asio::io_context io;
  std::shared_ptr<FakeObjectClient> fake;
  std::shared_ptr<FailingObjectClient> fail;
  std::shared_ptr<ObjectFilesystem> fs;
  std::shared_ptr<prefetch::DatasetPrefetcher> prefetcher;

 private:
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::shared_ptr<std::chrono::steady_clock::time_point> now_;
  std::vector<std::thread> threads_;
};

inline const DirEntry* FindEntry(const std::vector<DirEntry>& entries, const std::string& name) {
  for (const auto& e : entries) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

inline std::vector<std::string> EntryNames(const std::vector<DirEntry>& entries) {
  std::vector<std::string> names;
  for (const auto& e : entries) names.push_back(e.name + (e.entry.attr.is_dir ? "/" : ""));
  return names;
}

// LIST requests for the directory `prefix` itself (a listing) and for names in it (probes).
inline std::pair<int, int> ListingsAndProbes(const Harness& h, const std::string& prefix) {
  int listings = 0, probes = 0;
  for (const auto& r : h.fake->requests()) {
    if (r.op != Op::kList) continue;
    if (r.key == prefix) {
      ++listings;
    } else if (r.key.rfind(prefix, 0) == 0) {
      ++probes;
    }
  }
  return {listings, probes};
}

// A listing-outcome counter family (ossmount_list_ahead_total, ossmount_lookup_listings_total:
// result listed, abandoned, failed). The counters are process-wide, so a case compares them
// with their values when this was made.
class ListingOutcomeCounts {
 public:
  explicit ListingOutcomeCounts(std::string name)
      : name_(std::move(name)),
        listed_(Value("listed")),
        abandoned_(Value("abandoned")),
        failed_(Value("failed")) {}

  uint64_t ListedSince() const { return Value("listed") - listed_; }
  uint64_t AbandonedSince() const { return Value("abandoned") - abandoned_; }
  uint64_t FailedSince() const { return Value("failed") - failed_; }

 private:
  uint64_t Value(const char* result) const {
    return metrics::Registry::Global().GetCounter(name_, "", {{"result", result}}).Value();
  }
  std::string name_;
  uint64_t listed_, abandoned_, failed_;
};

}  // namespace fstest
