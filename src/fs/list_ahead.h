// ListAhead: lists the directories a tree walk is about to enter before it enters them.
//
// A program that walks a tree (find, du, ls -R, os.walk, torchvision's ImageFolder) reads a
// directory, then each of its subdirectories in turn, one at a time and in listing order.
// Cold, every step waits one listing round trip (two for a class directory of 1,300
// images), so ImageNet's 1,000 class directories take over a minute at 35 ms before the
// first batch. When a walk enters a directory, the filesystem asks EnteredChildOf(parent):
// like readahead, which waits for a second sequential read, it answers true from the second
// directory of one parent entered, so a lone `ls DIR` lists nothing more. Then the
// filesystem hands Queue() the directories that follow in the parent's listing; ListAhead
// keeps up to `distance` of them listing at once, so the walk finds them cached or in
// flight. A walk that stops early costs at most `distance` listings it did not need (each
// of at most kMaxPages pages).
//
// Promises:
//   - at most `distance` listings in flight; each path is handed to the lister at most
//     once while it is queued or in flight;
//   - listings start in the order they were handed in (a walk's order);
//   - at most max_queued() paths wait; beyond that the oldest are dropped (a walk moved
//     on);
//   - `distance` 0 = off: nothing is ever listed.
//
// Thread-safety: thread-safe; mu_ is a leaf lock, never held while calling the lister.
// Create with std::make_shared: listings in flight keep it alive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ossmount::fs {

class ListAhead : public std::enable_shared_from_this<ListAhead> {
 public:
  // Lists directory `path` into the metadata cache; calls `done` once when the listing is
  // cached, failed or abandoned (possibly before returning).
  using Lister = std::function<void(const std::string& path, std::function<void()> done)>;

  // A directory listed ahead is abandoned after this many pages (10,000 names) unless a
  // reader joined it: a walk that stops early must not pull a huge directory.
  static constexpr int kMaxPages = 10;

  ListAhead(size_t distance, Lister lister);

  size_t distance() const { return distance_; }
  size_t max_queued() const { return 4 * distance_; }

  // A program entered directory `child` of `parent`: whether this looks like a walk of
  // `parent`, i.e. another directory of it was entered before (among the last
  // kRecentParents parents that had one entered). Entering the same one again is not a
  // walk. Always false when off.
  bool EnteredChildOf(const std::string& parent, const std::string& child);
  static constexpr size_t kRecentParents = 64;

  // The directories that follow the one a walk entered, nearest first, that are not listed
  // yet (at most distance() are taken).
  void Queue(const std::vector<std::string>& next);

  struct Stats {
    uint64_t started = 0;  // handed to the lister
    uint64_t dropped = 0;  // queued, then dropped for newer ones
    size_t queued = 0;
    size_t in_flight = 0;
  };
  Stats stats() const;

 private:
  // Pops what may start now; REQUIRES mu_ held.
  std::vector<std::string> TakeStartableLocked();
  void Start(std::vector<std::string> paths);
  void Finished(const std::string& path);

  const size_t distance_;
  const Lister lister_;
  mutable std::mutex mu_;
  std::deque<std::string> queued_;
  std::unordered_set<std::string> known_;  // queued or in flight
  // (parent, the child of it entered last), oldest first, at most kRecentParents.
  std::deque<std::pair<std::string, std::string>> recent_parents_;
  size_t in_flight_ = 0;
  uint64_t started_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace ossmount::fs
