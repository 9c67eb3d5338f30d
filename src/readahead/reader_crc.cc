// SequentialReader: the whole-object CRC-64 check of a reader that gets the object's parts
// from offset 0 to its end (part_crc_fold.h; docs/ARCHITECTURE.md, "Readahead").
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <deque>
#include <set>
#include <utility>

#include "common/crc64.h"
#include "common/metrics.h"
#include "readahead/reader_parts.h"
#include "readahead/sequential_reader.h"

namespace ossmount::readahead {
namespace {

// Objects read in order from start to end whose combined CRC-64 was compared, by result:
// "match", "mismatch", or "unknown" (covered, but no CRC of the object was known).
metrics::Counter& CrcChecks(const char* result) {
  return metrics::Registry::Global().GetCounter(
      "ossmount_object_crc_checks_total",
      "Large files one open file read from start to end, whose parts' combined CRC-64 was "
      "compared with the object's x-oss-hash-crc64ecma, by result (unknown: no CRC known).",
      {{"result", result}});
}

// The versions that failed, oldest first, at most kMaxSuspects of them: a process reads few
// damaged objects, and forgetting one only lets its disk-cache blocks be used again.
constexpr size_t kMaxSuspects = 1024;
struct Suspects {
  std::mutex mu;
  std::set<std::pair<std::string, std::string>> set;
  std::deque<std::pair<std::string, std::string>> order;
};
Suspects& SuspectList() {
  static Suspects* suspects = new Suspects();  // never destroyed: readers may outlive main
  return *suspects;
}

}  // namespace

bool IsSuspectVersion(const std::string& key, const std::string& etag) {
  Suspects& s = SuspectList();
  std::lock_guard lock(s.mu);
  return !s.set.empty() && s.set.count({key, etag}) > 0;
}

void MarkSuspectVersion(const std::string& key, const std::string& etag) {
  Suspects& s = SuspectList();
  std::lock_guard lock(s.mu);
  if (!s.set.insert({key, etag}).second) return;
  s.order.emplace_back(key, etag);
  if (s.order.size() > kMaxSuspects) {
    s.set.erase(s.order.front());
    s.order.pop_front();
  }
}

void SequentialReader::NoteGetLocked(const GetResult& got) {
  if (got.crc64) {
    fold_.SetExpected(*got.crc64);
  } else {
    fold_.NoteNoCrc();
  }
}

void SequentialReader::NotePartCreatedLocked(uint64_t index) {
  ++crc_coming_[index];
  if (index == 0) fold_.Arm();
}

bool SequentialReader::FoldCompletableLocked() const {
  for (uint64_t i = fold_.next(); i < fold_.parts(); ++i) {
    if (!fold_.Recorded(i) && crc_coming_.count(i) == 0) return false;
  }
  return true;
}

void SequentialReader::FoldPart(const std::shared_ptr<Part>& part) {
  FoldNews news;
  std::shared_ptr<PartBuffer> buffer;
  {
    std::lock_guard lock(mu_);
    // A part from the disk cache is worth its CRC only if the object's is known or a GET of
    // this reader may still tell it.
    const bool worth =
        fold_.Wants(part->index) && (!part->from_disk || fold_.expected() || sent_get_.load());
    if (worth && part->buffer) {
      buffer = part->buffer;
    } else {
      SettlePartLocked(part->index, {}, news);
    }
  }
  if (buffer) {
    // Outside mu_: 8 MiB take about 2 ms.
    const uint64_t crc = Crc64(0, buffer->data, part->length);
    std::lock_guard lock(mu_);
    SettlePartLocked(part->index, fold_.Add(part->index, crc), news);
  }
  DeliverFoldNews(std::move(news));
}

void SequentialReader::SettlePartLocked(uint64_t index, PartCrcFold::Outcome outcome,
                                        FoldNews& news) {
  auto it = crc_coming_.find(index);
  if (it != crc_coming_.end() && --it->second == 0) crc_coming_.erase(it);
  switch (outcome.verdict) {
    case PartCrcFold::Verdict::kOpen:
      ReleaseStuckWaitersLocked(news);
      return;
    case PartCrcFold::Verdict::kMatch:
      mismatch_ = Status();
      break;
    case PartCrcFold::Verdict::kMismatch:
      mismatch_ = Status(ErrorCode::kIntegrity,
                         "'" + key_ + "' read from start to end has CRC-64 " +
                             std::to_string(outcome.computed) + ", the object's is " +
                             std::to_string(fold_.expected().value_or(0)) +
                             ": some of its bytes were damaged on their way; its parts are "
                             "dropped, so reading it again fetches them again");
      // So that a read again fetches them again: the parts held (not those in flight or
      // waited for), and the disk cache's blocks for later readers of this version.
      for (auto part = parts_.begin(); part != parts_.end();) {
        if (part->second->state == Part::State::kReady && part->second->waiters.empty()) {
          news.dropped.push_back(std::move(part->second));
          part = parts_.erase(part);
        } else {
          ++part;
        }
      }
      for (auto& piece : pieces_) {
        if (piece && piece->state == Part::State::kReady && piece->waiters.empty()) {
          news.dropped.push_back(std::move(piece));
          piece.reset();
        }
      }
      news.suspect = true;  // marked after mu_, a leaf lock
      if (shared_.disk_cache) skip_disk_cache_.store(true);
      break;
    case PartCrcFold::Verdict::kUnknown:
    case PartCrcFold::Verdict::kAbandoned:
      break;
  }
  news.outcome = outcome;
  news.expected = fold_.expected();
  news.resolved.swap(verdict_waiters_);
  news.status = mismatch_;
}

void SequentialReader::ReleaseStuckWaitersLocked(FoldNews& news) {
  if (verdict_waiters_.empty() || (fold_.armed() && FoldCompletableLocked())) return;
  news.resolved.swap(verdict_waiters_);
  news.status = mismatch_;
}

void SequentialReader::DeliverFoldNews(FoldNews news) {
  if (news.suspect) MarkSuspectVersion(key_, etag_);
  switch (news.outcome.verdict) {
    case PartCrcFold::Verdict::kMatch: {
      static metrics::Counter& match = CrcChecks("match");
      match.Add();
      break;
    }
    case PartCrcFold::Verdict::kMismatch: {
      static metrics::Counter& mismatch = CrcChecks("mismatch");
      mismatch.Add();
      spdlog::warn(
          "CRC-64 mismatch: '{}' (etag {}) read from start to end has CRC-64 {}, the "
          "object's (x-oss-hash-crc64ecma) is {}: bytes were damaged on their way (server, "
          "proxy, network or disk cache); the read reaching its end fails with EIO, and its "
          "parts are fetched again",
          key_, etag_, news.outcome.computed, news.expected.value_or(0));
      break;
    }
    case PartCrcFold::Verdict::kUnknown: {
      static metrics::Counter& unknown = CrcChecks("unknown");
      unknown.Add();
      break;
    }
    case PartCrcFold::Verdict::kOpen:
    case PartCrcFold::Verdict::kAbandoned:
      break;
  }
  // Posted: a waiting read's reply must not run inside Close() or a caller's Read().
  for (auto& waiter : news.resolved) {
    boost::asio::post(io_, [waiter = std::move(waiter), status = news.status]() mutable {
      waiter(std::move(status));
    });
  }
}

}  // namespace ossmount::readahead
