// DirStream: one open directory too large to hold whole (MetadataCache::max_listing_bytes),
// read page by page as readdir asks for it, as Mountpoint for S3 reads every directory.
//
// Each Read asks for the entries from an offset; the stream fetches listing pages until it
// has them, one page in flight at a time, and keeps only the last few thousand entries, so
// its memory does not grow with the directory. Offsets stay stable: reading on from the last
// offset returned continues the listing; an offset before what is kept (rewinddir, a seek
// back) starts the listing again and skips to it. Nothing is fetched unless a Read asks, so a
// reader that stops (or is killed) stops the listing.
//
// A name that is both a file ("a") and a directory ("a/...") shows as the directory, as in a
// whole listing: a file is held back until the listing has passed where "a/" would sort.
// Names that are not valid POSIX names are skipped. Pages go through a ListingGuard.
//
// Thread-safety: thread-safe; mu_ is a leaf lock, not held while calling the client or a
// callback.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "fs/listing_guard.h"
#include "meta/key_mapping.h"
#include "ossmount/object_client.h"

namespace ossmount::fs {

class DirStream : public std::enable_shared_from_this<DirStream> {
 public:
  using ReadCallback = std::function<void(Result<std::vector<meta::DirChild>>)>;

  // `list_prefix`: the directory's listing prefix (meta::DirPrefix). Create with make_shared.
  DirStream(std::shared_ptr<ObjectClient> client, std::string list_prefix, int max_pages);

  // At most `max` entries from `offset` on; none past the end of the directory.
  void Read(uint64_t offset, size_t max, ReadCallback done);

  // Entries kept at most (the window the last offsets are served from).
  static constexpr size_t kKeep = 4096;

 private:
  struct Waiting {
    uint64_t offset;
    size_t max;
    ReadCallback done;
  };
  // An answer to hand out once mu_ is released.
  using Delivery = std::pair<ReadCallback, Result<std::vector<meta::DirChild>>>;
  // Answers `w` from the window, or with the end once the listing is complete: false when
  // `w` needs more of the listing. REQUIRES mu_.
  bool ServeLocked(Waiting& w, std::vector<Delivery>& out);
  // Starts over from the first page. REQUIRES mu_.
  void RestartLocked();
  void FetchNext();
  void OnPage(uint64_t generation, Result<ListPage> page);
  // Adds a page's entries to the window. REQUIRES mu_.
  void AddPageLocked(const ListPage& page);

  const std::shared_ptr<ObjectClient> client_;
  const std::string prefix_;
  const int max_pages_;

  std::mutex mu_;                      // guards the members below
  std::deque<meta::DirChild> window_;  // the entries at offsets [base_, base_ + size)
  uint64_t base_ = 0;
  std::string token_;      // of the next page
  bool complete_ = false;  // the last page is in
  bool fetching_ = false;
  uint64_t generation_ = 0;  // restarts; a page of an earlier one is dropped
  ListingGuard guard_;
  // Files that a directory of the same name may still hide, in listing order.
  std::vector<meta::DirChild> held_back_;
  std::vector<Waiting> waiting_;
};

}  // namespace ossmount::fs
