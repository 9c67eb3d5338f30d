// The dataset prefetcher's test rig: a DatasetPrefetcher over a scripted Fetcher (the test
// completes each fetch, with the outcome it chooses) and Lister, its io_context on a thread of
// its own, and the lists, items and senders the tests give it.
#pragma once

#include <rapidjson/document.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/format_bytes.h"
#include "prefetch/dataset_prefetcher.h"
#include "prefetch/warmup_queue.h"
#include "prefetch_status_json.h"
#include "support/eventually.h"

namespace ossmount::prefetch::rig {

using namespace std::chrono_literals;

// Records every fetch; the test completes them one by one.
class ScriptedFetcher {
 public:
  struct Call {
    PrefetchItem item;
    bool hold = false;
    FetchDone done;
  };

  Fetcher AsFetcher() {
    return [this](const PrefetchItem& item, bool hold, FetchDone done) {
      std::lock_guard lock(mu_);
      calls_.push_back(Call{item, hold, std::move(done)});
      started_.push_back(item.path);
    };
  }
  // Paths fetched so far, in start order.
  std::vector<std::string> started() const {
    std::lock_guard lock(mu_);
    return started_;
  }
  size_t pending() const {
    std::lock_guard lock(mu_);
    return calls_.size();
  }
  std::optional<std::string> oldest_pending() const {
    std::lock_guard lock(mu_);
    if (calls_.empty()) return std::nullopt;
    return calls_.front().item.path;
  }
  bool hold_of(const std::string& path) const {
    std::lock_guard lock(mu_);
    for (const auto& c : calls_) {
      if (c.item.path == path) return c.hold;
    }
    FAIL("no pending fetch of " << path);
    return false;
  }
  // Completes the pending fetch of `path`; a kFetched result gets a hold the test can watch.
  std::weak_ptr<const void> Complete(const std::string& path,
                                     FetchOutcome outcome = FetchOutcome::kFetched,
                                     uint64_t bytes = 100) {
    FetchDone done;
    bool hold_asked = false;
    {
      std::lock_guard lock(mu_);
      for (auto it = calls_.begin(); it != calls_.end(); ++it) {
        if (it->item.path == path) {
          done = std::move(it->done);
          hold_asked = it->hold;
          calls_.erase(it);
          break;
        }
      }
    }
    REQUIRE(done);
    FetchResult r;
    r.outcome = outcome;
    r.bytes = bytes;
    std::weak_ptr<const void> weak;
    if (outcome == FetchOutcome::kFetched && hold_asked) {
      auto hold = std::make_shared<std::string>(path);
      weak = hold;
      r.hold = hold;
    }
    done(std::move(r));
    return weak;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Call> calls_;
  std::vector<std::string> started_;
};

struct Rig {
  explicit Rig(DatasetPrefetchOptions o, Lister lister = nullptr)
      : guard(boost::asio::make_work_guard(io)) {
    if (!lister) {
      lister = [](const std::string&, ListBatch, std::function<void(Status)> done) {
        done(Status(ErrorCode::kNotFound, "no lister in this test"));
      };
    }
    prefetcher = std::make_shared<DatasetPrefetcher>(io, o, fetcher.AsFetcher(), lister);
    thread = std::thread([this] { io.run(); });
  }
  ~Rig() {
    prefetcher.reset();
    guard.reset();
    io.stop();
    thread.join();
  }
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard;
  ScriptedFetcher fetcher;
  std::shared_ptr<DatasetPrefetcher> prefetcher;
  std::thread thread;
};

inline std::vector<std::string> Named(const std::string& prefix, int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}

inline std::vector<std::string> Paths(int n) { return Named("f", n); }

inline std::vector<PrefetchItem> Items(int n, uint64_t size) {
  std::vector<PrefetchItem> v;
  for (int i = 0; i < n; ++i) {
    PrefetchItem item;
    item.path = "w" + std::to_string(i);
    item.key = "k/" + item.path;
    item.size = size;
    item.etag = "\"e\"";
    v.push_back(item);
  }
  return v;
}

inline const WarmupJobStatus& Job(const PrefetchStatus& st, uint64_t id) {
  for (const auto& j : st.jobs) {
    if (j.id == id) return j;
  }
  FAIL("no job " << id);
  return st.jobs.front();
}

inline HintSender Sender(int pid, std::shared_ptr<std::atomic<bool>> alive = nullptr) {
  HintSender s;
  s.pid = pid;
  if (alive) s.alive = [alive] { return alive->load(); };
  return s;
}

// A lister that produces a page only when the test asks for it (Next), as a paged LIST sends
// one request at a time; a batch that returns false stops the listing, which then reports
// kCancelled, as the filesystem's lister does.
class PagedLister {
 public:
  // `pages` pages of `per_page` files under each listed path; each file's name is padded to
  // `name_bytes` characters.
  PagedLister(int pages, int per_page, size_t name_bytes = 8)
      : pages_(pages), per_page_(per_page), name_bytes_(name_bytes) {}

  Lister AsLister() {
    return [this](const std::string& path, ListBatch batch, std::function<void(Status)> done) {
      std::lock_guard lock(mu_);
      listed_.push_back(path);
      active_.push_back(Listing{path, std::move(batch), std::move(done), 0});
    };
  }
  // Delivers the next page of the oldest listing in progress; returns what its batch
  // returned. REQUIRES a listing in progress.
  bool Next() {
    Listing l;
    {
      std::lock_guard lock(mu_);
      REQUIRE_FALSE(active_.empty());
      l = std::move(active_.front());
      active_.pop_front();
      ++pages_sent_;
    }
    std::vector<PrefetchItem> items;
    for (int i = 0; i < per_page_; ++i) {
      PrefetchItem item;
      std::string name = std::to_string(l.page * per_page_ + i);
      name.insert(0, name_bytes_ > name.size() ? name_bytes_ - name.size() : 0, '0');
      item.path = l.path + "/" + name + ".JPEG";
      item.key = "imagenet/" + item.path;
      item.size = 10;
      item.etag = "\"0123456789abcdef0123456789abcdef\"";
      items.push_back(std::move(item));
    }
    const bool more = l.batch(std::move(items));
    if (!more) {
      l.done(Status(ErrorCode::kCancelled, "warm-up listing cancelled"));
    } else if (++l.page == pages_) {
      l.done(Status::Ok());
    } else {
      std::lock_guard lock(mu_);
      active_.push_front(std::move(l));  // its next page comes when asked
    }
    return more;
  }
  size_t active() const {
    std::lock_guard lock(mu_);
    return active_.size();
  }
  std::vector<std::string> listed() const {
    std::lock_guard lock(mu_);
    return listed_;
  }
  int pages_sent() const {
    std::lock_guard lock(mu_);
    return pages_sent_;
  }

 private:
  struct Listing {
    std::string path;
    ListBatch batch;
    std::function<void(Status)> done;
    int page = 0;
  };
  const int pages_;
  const int per_page_;
  const size_t name_bytes_;
  mutable std::mutex mu_;
  std::deque<Listing> active_;
  std::vector<std::string> listed_;
  int pages_sent_ = 0;
};

// Completes the fetches, oldest first, as they start, until none is left.
inline void CompleteAll(Rig& rig) {
  while (auto next = rig.fetcher.oldest_pending()) rig.fetcher.Complete(*next);
}

inline HintSender OtherUser(int pid, unsigned uid = 1000) {
  HintSender s;
  s.pid = pid;
  s.by.uid = uid;
  s.by.owner = false;
  return s;
}

inline Requester OtherRequester(unsigned uid = 1000) { return Requester{uid, false}; }

inline std::vector<std::string> ImageNetPaths(int n) {
  std::vector<std::string> v;
  char buf[64];
  for (int i = 0; i < n; ++i) {
    const unsigned cls = 1440764 + static_cast<unsigned>(i / 1300) * 7;
    std::snprintf(buf, sizeof buf, "train/n%08u/n%08u_%05d.JPEG", cls, cls, 10000 + i % 1300);
    v.emplace_back(buf);
  }
  return v;
}

inline uint64_t PathBytes(const std::vector<std::string>& v) {
  uint64_t n = 0;
  for (const auto& p : v) n += p.size();
  return n;
}

// The "warmup-status" JSON of the prefetcher's status.
inline std::string StatusJson(const DatasetPrefetcher& prefetcher) {
  return daemon::PrefetchStatusJson(prefetcher.Status(), prefetcher.options());
}

}  // namespace ossmount::prefetch::rig
