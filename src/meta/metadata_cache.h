// MetadataCache: what is known about paths, and for how long.
//
// Two sources of knowledge, each stamped with an expiry (TtlPolicy) and a sequence number:
//   - per-path entries from lookups (HEAD + LIST probes): present with attributes, or
//     absent (negative, under negative_ttl);
//   - directory listings (DirSnapshot, complete: every page was fetched): a fresh listing
//     answers for every name in the directory, present or absent, with no request.
// Find answers from the newest fresh source, so a listing taken after a probe overrides it
// and vice versa. An answer from the server is as new as its question: it is stamped when the
// question was asked (Asking, StartListing), so a change this mount recorded while the
// question was in flight stays newer than the answer. Stale knowledge is ignored (and replaced by
// the next Put). With nothing newer about a path or its parent's listing, its ancestors answer:
// below a name that a fresh source says is absent, or a file, nothing exists (a name that is both a
// file and a directory is listed as the directory), so a deep path under a wrong root needs no
// probe.
//
// Listings are shared, immutable snapshots: a directory handle keeps the one it read from
// even after the cache replaced it, so its offsets stay stable.
//
// Memory: listings and entries are held within a budget (SetBudget, --max-metadata-memory)
// that they share with the inode table (whose bytes `other_bytes` reports). Past it, the
// least recently used listings and entries are dropped until the cache is back under seven
// eighths of what the inodes leave it (and never below a quarter of the budget): what was
// dropped is asked of the server again when needed. A listing larger than half the budget
// is not held at all (ListingTooLarge): its directory is read page by page instead.
//
// Thread-safety: all methods are thread-safe; mu_ is a leaf lock.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "meta/dir_snapshot.h"
#include "meta/key_mapping.h"
#include "meta/ttl_policy.h"

namespace ossmount::meta {

class MetadataCache {
 public:
  explicit MetadataCache(TtlPolicy ttl);

  // Holds listings and entries within `budget_bytes` together with `other_bytes()` (the inode
  // table's; called without locks held by the caller's structures, so it must not take a lock
  // that is held while calling into this cache). 0 = no limit (the default).
  void SetBudget(size_t budget_bytes, std::function<size_t()> other_bytes);
  // The largest listing held: half the budget (SIZE_MAX without one). A directory whose
  // listing grows past it is not listed whole (MarkTooLarge).
  size_t max_listing_bytes() const { return budget_ == 0 ? SIZE_MAX : budget_ / 2; }
  // A listing of `dir_path` grew past max_listing_bytes: for the metadata TTL, the directory is
  // read page by page and its names probed one by one instead (TooLarge).
  void MarkTooLarge(const std::string& dir_path);
  bool TooLarge(const std::string& dir_path) const;

  struct Answer {
    enum State { kUnknown, kPresent, kAbsent } state = kUnknown;
    NodeAttr attr;  // when kPresent
  };

  // What is known about `path` ("" is the root, which callers handle themselves).
  Answer Find(const std::string& path) const;

  // When a question to the server was asked. A probe's answer stamped with it loses to
  // whatever this cache learnt after the question left (a RecordChange, Invalidate or a probe
  // asked later), so an answer that was already old when it arrived cannot undo a change:
  // a probe that saw no "x" does not hide the "x" that this mount's close made meanwhile.
  struct Asked {
    uint64_t seq = 0;
  };
  Asked Asking();
  // A listing about to be sent. Every one ends in exactly one PutListing(..., Asked) or
  // ListingEnded: until then, the changes RecordChange and ForgetTree make are kept for it.
  Asked StartListing();
  void ListingEnded(Asked asked);

  // The answers of probes: asked now, or at `asked`.
  void PutPresent(const std::string& path, NodeAttr attr);
  void PutAbsent(const std::string& path);
  void PutPresent(const std::string& path, NodeAttr attr, Asked asked);
  void PutAbsent(const std::string& path, Asked asked);
  // Forgets the per-path entry (the next Find falls back to the listing, or kUnknown).
  void Erase(const std::string& path);
  // Declares everything known so far about `path` outdated (e.g. a read saw the object
  // change): Find says kUnknown, even where an older listing still covers it, until a newer
  // Put. The entry never expires on its own.
  void Invalidate(const std::string& path);

  // A complete listing, asked now or by StartListing. One asked before the cached listing was
  // is dropped. The changes this mount recorded in the directory after it was asked are
  // applied to it (a mkdir that completed while the listing was in flight is in it), and one
  // of a directory that a ForgetTree covered after it was asked is dropped. Returns the
  // listing to answer with: the one given with those changes applied, or the later one cached.
  void PutListing(const std::string& dir_path, std::shared_ptr<const DirSnapshot> listing);
  std::shared_ptr<const DirSnapshot> PutListing(const std::string& dir_path,
                                                std::shared_ptr<const DirSnapshot> listing,
                                                Asked asked);
  // At most this many changes are kept for listings in flight; past it, those listings are
  // dropped when they arrive (their callers still get them) rather than cached.
  static constexpr size_t kMaxChangesKeptForListings = 65'536;
  // This mount changed a name (it wrote, made, removed or renamed it): `path` is present with
  // `attr`, or absent when attr is nullopt, as a newer per-path entry that never expires
  // before the TTL would, and in the cached listing of its directory (replaced by a patched
  // copy that keeps its expiry), so that lookups and listings show the change at once even
  // under an indefinite TTL.
  void RecordChange(const std::string& path, std::optional<NodeAttr> attr);
  // Forgets everything cached under directory `path` (entries and listings of its
  // descendants, and its own listing): a directory rename moved them.
  void ForgetTree(const std::string& path);
  // The cached listing of dir_path if still fresh, else null.
  std::shared_ptr<const DirSnapshot> FreshListing(const std::string& dir_path) const;

  // Where the listings held are kept for the next daemon process on this mount
  // (ListingRecords). Called under this cache's lock, in its order: Kept for each listing
  // cached or patched (RecordChange), Dropped for each one no longer held (evicted, forgotten,
  // or its directory's entry invalidated). Must not call back into the cache.
  class ListingSink {
   public:
    virtual ~ListingSink() = default;
    virtual void Kept(const std::string& dir_path, std::shared_ptr<const DirSnapshot> listing,
                      TimePoint expiry) = 0;
    virtual void Dropped(const std::string& dir_path) = 0;
  };
  // Set once, before the cache is used by more than one thread.
  void KeepListingsIn(std::shared_ptr<ListingSink> sink);
  // A listing an earlier process held, expiring at `expiry`: cached as if listed now, unless
  // it expired or the directory has a listing already.
  void RestoreListing(const std::string& dir_path, std::shared_ptr<const DirSnapshot> listing,
                      TimePoint expiry);

  // Whether a lookup in `dir_path` that nothing fresh answers is better served by listing the
  // directory again than by asking the server about the one name. Under a finite TTL a
  // training epoch that outlasts it would otherwise send one request per file opened (a
  // probe before the GET, doubling the wait per file), where one listing answers a whole
  // class directory until it expires again. True when the directory has a listing that has
  // expired, under a positive TTL (never under 0: every question goes to the server), of at
  // most kRelistMaxEntries names, and names in it were looked up (Find, the asking lookup
  // included) more than kRelistFindsPerPage times per listing page since it was taken:
  // demand that, if it holds, repays the pages with probes saved. A directory that went quiet is
  // probed name by name.
  bool WorthRelisting(const std::string& dir_path) const;
  // Whether a lookup in `dir_path` that the directory's fresh listing answered should start
  // listing it again now, in the background, so that no later lookup waits for the new
  // listing: the listing is in the last quarter of its TTL and in the demand WorthRelisting
  // asks for, whatever its size (nobody waits for it). True at most once per listing (the
  // caller starts the one refresh; ClaimListingForLookups's kAgain shares the claim).
  bool ClaimRefreshAhead(const std::string& dir_path) const;
  static constexpr size_t kRelistMaxEntries = 10'000;  // 10 pages of 1,000 keys
  static constexpr uint64_t kRelistFindsPerPage = 2;

  // Listings started by lookups, in the background: the lookup that nothing fresh answers
  // probes its name as before, and the listing answers the directory's later lookups. Without
  // it, a program that opens files by path (a dataset read from a file list, COCO's
  // annotations) sends a probe before every GET, and so does any lookup in a directory too
  // large for WorthRelisting once its listing expired.
  enum class LookupListing {
    kNone,
    // The directory has no listing, and this is the kListForLookupsAfter-th name probed in it
    // since its last listing attempt: list it, fetching each next page only while
    // LookupsStillWaiting says so.
    kFirst,
    // Its listing expired, holds more than kRelistMaxEntries names (WorthRelisting would make
    // a lookup wait for 11 or more pages) and was in demand: list it again, in full.
    kAgain,
  };
  // Called by a lookup in `dir_path` about to probe a name (nothing fresh answered it), which
  // this counts. Never under a zero TTL. Not kNone at most once until the listing is cached
  // (PutListing) or BackgroundListingEnded.
  LookupListing ClaimListingForLookups(const std::string& dir_path);
  // Whether a kFirst listing that fetched `pages` pages should fetch the next: names probed in
  // the directory since its last attempt number at least kRelistFindsPerPage per page fetched
  // (probes the finished listing would have saved), so a program that asked about a few names
  // of a huge directory costs a few pages, not the whole directory.
  bool LookupsStillWaiting(const std::string& dir_path, int pages) const;
  // A listing claimed by ClaimListingForLookups or ClaimRefreshAhead ended uncached: it failed
  // (given_up_after_pages 0) or was given up after that many pages. The claim is released and
  // the demand must build again: for a directory given up on, twice as many probes as the
  // pages spent (so repeated attempts cost at most half the probes they follow).
  void BackgroundListingEnded(const std::string& dir_path, int given_up_after_pages);
  static constexpr uint64_t kListForLookupsAfter = 3;
  // At most this many directories without a listing keep a probe count; past it the counts
  // start over (a program probing names in more directories than this lists none of them).
  static constexpr size_t kMaxLookupDemandRecords = 65'536;

  const TtlPolicy& ttl() const { return ttl_; }
  size_t entry_count() const;
  size_t listing_count() const;
  // Names in the cached listings, and the bytes those listings hold (DirSnapshot::
  // MemoryBytes): what a walk leaves behind. Listings stay until replaced, expired or not.
  size_t listed_names() const;
  size_t listing_bytes() const;
  // Bytes the per-path entries hold (estimated), and listings and entries dropped for the
  // budget since the start.
  size_t entry_bytes() const;
  uint64_t evictions() const;
  // Changes kept for the listings in flight (none once they all ended).
  size_t changes_kept_for_listings() const;

 private:
  struct Entry {
    enum Kind { kPresent, kAbsent, kInvalid } kind = kAbsent;
    NodeAttr attr;
    TimePoint expiry;
    uint64_t seq = 0;
    mutable uint64_t used = 0;  // tick of the last Find that read it (eviction order)
  };
  struct Listing {
    std::shared_ptr<const DirSnapshot> snapshot;
    TimePoint expiry;
    uint64_t seq = 0;    // RecordChange's patches make it newer
    uint64_t asked = 0;  // when the listing was asked
    // Find calls for names in this directory since the listing was taken, whatever answered
    // them: the demand WorthRelisting weighs. Counted under mu_.
    mutable uint64_t finds = 0;
    // ClaimRefreshAhead said yes, or ClaimListingForLookups kAgain. Under mu_.
    mutable bool refresh_claimed = false;
    mutable uint64_t used = 0;  // tick of the last use (eviction order)
  };
  // Probes in a directory with no listing (ClaimListingForLookups).
  struct LookupDemand {
    uint64_t probes = 0;
    uint64_t needed = kListForLookupsAfter;  // probes that start the next listing
    bool claimed = false;
  };
  // A change kept for the listings in flight: RecordChange's, or a ForgetTree of `path`.
  struct Change {
    uint64_t seq = 0;
    std::string path;
    std::optional<NodeAttr> attr;
    bool forgot_tree = false;
  };
  // Keeps a change for the listings in flight, if any. REQUIRES mu_ held.
  void KeepForListings(Change change);
  // Ends a listing in flight and drops the changes no listing still in flight needs.
  // REQUIRES mu_ held.
  void EndListing(Asked asked);
  // The demand test of WorthRelisting and ClaimRefreshAhead, for a listing of at most
  // max_entries names. REQUIRES mu_ held.
  static bool InDemand(const Listing& listing, size_t max_entries);
  // Sets, replaces or drops an entry, keeping entry_bytes_. REQUIRES mu_ held.
  void SetEntryLocked(const std::string& path, Entry entry);
  std::unordered_map<std::string, Entry>::iterator EraseEntryLocked(
      std::unordered_map<std::string, Entry>::iterator it);
  // Drops a listing, keeping the counts. REQUIRES mu_ held.
  std::unordered_map<std::string, Listing>::iterator EraseListingLocked(
      std::unordered_map<std::string, Listing>::iterator it);
  // Drops the least recently used listings and entries while over the budget. REQUIRES mu_.
  void EvictLocked();
  static size_t EntryBytes(const std::string& path, const Entry& entry);

  const TtlPolicy ttl_;
  // mu_ guards all members below.
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  std::unordered_map<std::string, Listing> listings_;
  // Directories with no listing that names were probed in; erased when a listing is cached.
  std::unordered_map<std::string, LookupDemand> lookup_demand_;
  uint64_t seq_ = 0;
  // When the listings in flight were asked, and the changes made since the oldest of them.
  std::multiset<uint64_t> listings_in_flight_;
  std::deque<Change> changes_for_listings_;
  // Listings asked at or before this are not cached (too many changes were made meanwhile).
  uint64_t refuse_listings_asked_until_ = 0;
  size_t listed_names_ = 0;
  size_t listing_bytes_ = 0;
  size_t entry_bytes_ = 0;
  uint64_t evictions_ = 0;
  mutable uint64_t tick_ = 0;
  size_t budget_ = 0;
  std::function<size_t()> other_bytes_;
  std::shared_ptr<ListingSink> sink_;
  // Directories too large to list whole (MarkTooLarge), until when.
  std::unordered_map<std::string, TimePoint> too_large_;
};

}  // namespace ossmount::meta
