#include "meta/metadata_cache.h"

#include <algorithm>
#include <cstdint>

namespace ossmount::meta {

namespace {

// Heap bytes of a string beyond its inline buffer (libstdc++ keeps 15 bytes inline).
size_t HeapBytes(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

// Per hash-table node: the node, its bucket pointer and the allocator's header.
constexpr size_t kNodeOverhead = 48;

}  // namespace

MetadataCache::MetadataCache(TtlPolicy ttl) : ttl_(std::move(ttl)) {}

void MetadataCache::SetBudget(size_t budget_bytes, std::function<size_t()> other_bytes) {
  std::lock_guard lock(mu_);
  budget_ = budget_bytes;
  other_bytes_ = std::move(other_bytes);
}

void MetadataCache::MarkTooLarge(const std::string& dir_path) {
  const TimePoint now = ttl_.Now();
  // At least a minute, whatever the TTL: a directory of that size does not shrink soon, and
  // each try costs half the budget's worth of listing.
  const TimePoint until = ttl_.indefinite()
                              ? TimePoint::max()
                              : std::max(ttl_.PositiveExpiry(now), now + std::chrono::minutes(1));
  std::lock_guard lock(mu_);
  if (too_large_.size() >= 4096) too_large_.clear();
  too_large_[dir_path] = until;
}

bool MetadataCache::TooLarge(const std::string& dir_path) const {
  const TimePoint now = ttl_.Now();
  std::lock_guard lock(mu_);
  auto it = too_large_.find(dir_path);
  return it != too_large_.end() && TtlPolicy::Fresh(it->second, now);
}

size_t MetadataCache::EntryBytes(const std::string& path, const Entry& entry) {
  return sizeof(std::pair<const std::string, Entry>) + kNodeOverhead + HeapBytes(path) +
         HeapBytes(entry.attr.etag);
}

void MetadataCache::SetEntryLocked(const std::string& path, Entry entry) {
  auto [it, inserted] = entries_.try_emplace(path);
  if (!inserted) entry_bytes_ -= EntryBytes(it->first, it->second);
  entry.used = ++tick_;
  it->second = std::move(entry);
  entry_bytes_ += EntryBytes(it->first, it->second);
  EvictLocked();
}

std::unordered_map<std::string, MetadataCache::Entry>::iterator MetadataCache::EraseEntryLocked(
    std::unordered_map<std::string, Entry>::iterator it) {
  entry_bytes_ -= EntryBytes(it->first, it->second);
  return entries_.erase(it);
}

std::unordered_map<std::string, MetadataCache::Listing>::iterator MetadataCache::EraseListingLocked(
    std::unordered_map<std::string, Listing>::iterator it) {
  if (it->second.snapshot) {
    listed_names_ -= it->second.snapshot->size();
    listing_bytes_ -= it->second.snapshot->MemoryBytes();
  }
  if (sink_) sink_->Dropped(it->first);
  return listings_.erase(it);
}

void MetadataCache::EvictLocked() {
  if (budget_ == 0) return;
  const size_t other = other_bytes_ ? other_bytes_() : 0;
  // What the inodes leave for this cache, but never less than a quarter of the budget: the
  // kernel's inodes cannot be dropped here, and a cache squeezed to nothing would send a
  // request for every lookup.
  const size_t share = std::max(budget_ / 4, budget_ > other ? budget_ - other : 0);
  const size_t held = entry_bytes_ + listing_bytes_;
  if (held <= share) return;
  const size_t excess = held - share / 8 * 7;
  using EntryIt = std::unordered_map<std::string, Entry>::iterator;
  using ListingIt = std::unordered_map<std::string, Listing>::iterator;
  // Least recently used first, listings and entries alike. Chosen first, dropped after, so
  // that no iterator is used after its element went.
  struct Victim {
    uint64_t used;
    EntryIt entry;
    ListingIt listing;  // listings_.end() for an entry
  };
  std::vector<Victim> victims;
  victims.reserve(entries_.size() + listings_.size());
  for (auto it = listings_.begin(); it != listings_.end(); ++it) {
    victims.push_back({it->second.used, entries_.end(), it});
  }
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    victims.push_back({it->second.used, it, listings_.end()});
  }
  std::sort(victims.begin(), victims.end(),
            [](const Victim& a, const Victim& b) { return a.used < b.used; });
  std::vector<EntryIt> drop_entries;
  std::vector<ListingIt> drop_listings;
  size_t freed = 0;
  auto drop_listing = [&](ListingIt it) {
    if (std::find(drop_listings.begin(), drop_listings.end(), it) != drop_listings.end()) return;
    drop_listings.push_back(it);
    if (it->second.snapshot) freed += it->second.snapshot->MemoryBytes();
  };
  for (const Victim& v : victims) {
    if (freed >= excess) break;
    if (v.listing != listings_.end()) {
      drop_listing(v.listing);
      continue;
    }
    drop_entries.push_back(v.entry);
    freed += EntryBytes(v.entry->first, v.entry->second);
    // An entry newer than its directory's cached listing overrides it (a change, an
    // invalidation): dropping the entry alone would let the older listing answer again.
    auto parent = listings_.find(std::string(SplitPath(v.entry->first).first));
    if (parent != listings_.end() && parent->second.seq < v.entry->second.seq) {
      drop_listing(parent);
    }
  }
  for (EntryIt it : drop_entries) EraseEntryLocked(it);
  for (ListingIt it : drop_listings) EraseListingLocked(it);
  evictions_ += drop_entries.size() + drop_listings.size();
}

MetadataCache::Answer MetadataCache::Find(const std::string& path) const {
  const TimePoint now = ttl_.Now();
  auto [parent, name] = SplitPath(path);
  std::lock_guard lock(mu_);
  Answer answer;
  uint64_t best_seq = 0;
  auto e = entries_.find(path);
  if (e != entries_.end()) e->second.used = ++tick_;
  if (e != entries_.end() && TtlPolicy::Fresh(e->second.expiry, now)) {
    switch (e->second.kind) {
      case Entry::kPresent:
        answer.state = Answer::kPresent;
        break;
      case Entry::kAbsent:
        answer.state = Answer::kAbsent;
        break;
      case Entry::kInvalid:
        answer.state = Answer::kUnknown;
        break;
    }
    answer.attr = e->second.attr;
    best_seq = e->second.seq;
  }
  // Knowledge newer than the path's own entry, or null: a fresh listing (`it` into
  // listings_, or that of `dir`), a fresh entry for `p`.
  auto newer =
      [&](std::unordered_map<std::string, Listing>::const_iterator it) -> const DirSnapshot* {
    bool fresh_and_newer = it != listings_.end() && TtlPolicy::Fresh(it->second.expiry, now) &&
                           it->second.seq > best_seq;
    return fresh_and_newer ? it->second.snapshot.get() : nullptr;
  };
  auto newer_listing = [&](std::string_view dir) {
    return newer(listings_.find(std::string(dir)));
  };
  auto newer_entry = [&](std::string_view p) -> const Entry* {
    auto it = entries_.find(std::string(p));
    bool newer = it != entries_.end() && TtlPolicy::Fresh(it->second.expiry, now) &&
                 it->second.seq > best_seq;
    return newer ? &it->second : nullptr;
  };
  auto absent = [&answer] {
    answer.state = Answer::kAbsent;
    answer.attr = NodeAttr();
  };
  auto parent_listing = listings_.find(std::string(parent));
  if (parent_listing != listings_.end()) {
    ++parent_listing->second.finds;  // WorthRelisting
    parent_listing->second.used = ++tick_;
  }
  if (const DirSnapshot* listing = newer(parent_listing)) {
    if (std::optional<size_t> child = listing->Find(name)) {
      answer.state = Answer::kPresent;
      answer.attr = listing->child(*child).attr();
    } else {
      absent();
    }
    return answer;
  }
  // Nothing newer about the path itself: a fresh ancestor that is absent, or a file,
  // means there is nothing below it (a name that is both shows as the directory).
  for (std::string_view dir = parent; !dir.empty() && answer.state != Answer::kAbsent;) {
    auto [up, dir_name] = SplitPath(dir);
    if (const Entry* a = newer_entry(dir)) {
      if (a->kind == Entry::kAbsent || (a->kind == Entry::kPresent && !a->attr.is_dir())) {
        absent();
      }
    }
    if (const DirSnapshot* listing = newer_listing(up)) {
      std::optional<size_t> c = listing->Find(dir_name);
      if (!c || !listing->child(*c).is_dir()) absent();
      break;  // a listed directory: what is below it is the next listing's to say
    }
    dir = up;
  }
  return answer;
}

MetadataCache::Asked MetadataCache::Asking() {
  std::lock_guard lock(mu_);
  return Asked{++seq_};
}

MetadataCache::Asked MetadataCache::StartListing() {
  std::lock_guard lock(mu_);
  const Asked asked{++seq_};
  listings_in_flight_.insert(asked.seq);
  return asked;
}

void MetadataCache::ListingEnded(Asked asked) {
  std::lock_guard lock(mu_);
  EndListing(asked);
}

void MetadataCache::PutPresent(const std::string& path, NodeAttr attr) {
  PutPresent(path, std::move(attr), Asking());
}

void MetadataCache::PutAbsent(const std::string& path) { PutAbsent(path, Asking()); }

void MetadataCache::PutPresent(const std::string& path, NodeAttr attr, Asked asked) {
  const TimePoint now = ttl_.Now();
  std::lock_guard lock(mu_);
  auto it = entries_.find(path);
  if (it != entries_.end() && it->second.seq > asked.seq) return;  // learnt after asking
  SetEntryLocked(path,
                 Entry{Entry::kPresent, std::move(attr), ttl_.PositiveExpiry(now), asked.seq});
}

void MetadataCache::PutAbsent(const std::string& path, Asked asked) {
  const TimePoint now = ttl_.Now();
  std::lock_guard lock(mu_);
  auto it = entries_.find(path);
  if (it != entries_.end() && it->second.seq > asked.seq) return;
  SetEntryLocked(path, Entry{Entry::kAbsent, NodeAttr(), ttl_.NegativeExpiry(now), asked.seq});
}

void MetadataCache::Erase(const std::string& path) {
  std::lock_guard lock(mu_);
  if (auto it = entries_.find(path); it != entries_.end()) EraseEntryLocked(it);
}

void MetadataCache::Invalidate(const std::string& path) {
  std::lock_guard lock(mu_);
  SetEntryLocked(path, Entry{Entry::kInvalid, NodeAttr(), TimePoint::max(), ++seq_});
  // The listing stays for this process, where the entry overrides it; the next process would
  // have the listing alone.
  if (sink_) sink_->Dropped(std::string(SplitPath(path).first));
}

void MetadataCache::PutListing(const std::string& dir_path,
                               std::shared_ptr<const DirSnapshot> listing) {
  PutListing(dir_path, std::move(listing), StartListing());
}

std::shared_ptr<const DirSnapshot> MetadataCache::PutListing(
    const std::string& dir_path, std::shared_ptr<const DirSnapshot> listing, Asked asked) {
  const TimePoint now = ttl_.Now();
  std::lock_guard lock(mu_);
  // Ends the listing however it goes; the changes it needs stay until the end of this call.
  struct EndOnReturn {
    MetadataCache* cache;
    Asked asked;
    ~EndOnReturn() { cache->EndListing(asked); }
  } end_on_return{this, asked};
  if (asked.seq <= refuse_listings_asked_until_) return listing;
  Listing& slot = listings_[dir_path];
  if (slot.snapshot && slot.asked > asked.seq) return slot.snapshot;  // a later one is cached
  const std::string below = dir_path.empty() ? "" : dir_path + "/";
  for (const Change& change : changes_for_listings_) {
    if (change.seq <= asked.seq) continue;
    if (change.forgot_tree) {
      const bool covers = dir_path == change.path ||
                          dir_path.compare(0, change.path.size() + 1, change.path + "/") == 0;
      if (covers) {
        if (!slot.snapshot) listings_.erase(dir_path);
        return listing;  // its names moved: nothing in it is known any more
      }
      continue;
    }
    const auto [parent, name] = SplitPath(change.path);
    if (parent != dir_path || !listing) continue;
    listing = std::make_shared<const DirSnapshot>(listing->Patched(name, change.attr));
  }
  const size_t names = listing ? listing->size() : 0;
  const size_t bytes = listing ? listing->MemoryBytes() : 0;
  if (slot.snapshot) {
    listed_names_ -= slot.snapshot->size();
    listing_bytes_ -= slot.snapshot->MemoryBytes();
  }
  listed_names_ += names;
  listing_bytes_ += bytes;
  slot = Listing{listing, ttl_.PositiveExpiry(now), asked.seq, asked.seq};
  slot.used = ++tick_;
  lookup_demand_.erase(dir_path);
  if (sink_ && listing) sink_->Kept(dir_path, listing, slot.expiry);
  EvictLocked();
  return listing;
}

void MetadataCache::RecordChange(const std::string& path, std::optional<NodeAttr> attr) {
  const TimePoint now = ttl_.Now();
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  std::lock_guard lock(mu_);
  if (attr) {
    SetEntryLocked(path, Entry{Entry::kPresent, *attr, ttl_.PositiveExpiry(now), ++seq_});
  } else {
    SetEntryLocked(path, Entry{Entry::kAbsent, NodeAttr(), ttl_.PositiveExpiry(now), ++seq_});
  }
  KeepForListings(Change{seq_, path, attr});
  auto l = listings_.find(dir);
  if (l == listings_.end() || !l->second.snapshot) return;
  const DirSnapshot& old = *l->second.snapshot;
  auto patched = std::make_shared<const DirSnapshot>(old.Patched(name, attr));
  listed_names_ += patched->size();
  listed_names_ -= old.size();
  listing_bytes_ += patched->MemoryBytes();
  listing_bytes_ -= old.MemoryBytes();
  l->second.snapshot = std::move(patched);
  l->second.seq = ++seq_;
  if (sink_) sink_->Kept(dir, l->second.snapshot, l->second.expiry);
}

void MetadataCache::KeepListingsIn(std::shared_ptr<ListingSink> sink) {
  std::lock_guard lock(mu_);
  sink_ = std::move(sink);
}

void MetadataCache::RestoreListing(const std::string& dir_path,
                                   std::shared_ptr<const DirSnapshot> listing, TimePoint expiry) {
  const TimePoint now = ttl_.Now();
  if (!listing || !TtlPolicy::Fresh(expiry, now)) return;
  std::lock_guard lock(mu_);
  Listing& slot = listings_[dir_path];
  if (slot.snapshot) return;
  listed_names_ += listing->size();
  listing_bytes_ += listing->MemoryBytes();
  ++seq_;
  slot = Listing{std::move(listing), expiry, seq_, seq_};
  slot.used = ++tick_;
  EvictLocked();
}

void MetadataCache::ForgetTree(const std::string& path) {
  const std::string below = path + "/";
  auto under = [&](const std::string& p) {
    return p == path || p.compare(0, below.size(), below) == 0;
  };
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    it = under(it->first) ? EraseEntryLocked(it) : std::next(it);
  }
  for (auto it = listings_.begin(); it != listings_.end();) {
    it = under(it->first) ? EraseListingLocked(it) : std::next(it);
  }
  // Ancestors' answers must not speak for the tree either: its names are unknown now.
  SetEntryLocked(path, Entry{Entry::kInvalid, NodeAttr(), TimePoint::max(), ++seq_});
  KeepForListings(Change{seq_, path, std::nullopt, /*forgot_tree=*/true});
}

void MetadataCache::KeepForListings(Change change) {
  if (listings_in_flight_.empty()) return;
  if (changes_for_listings_.size() >= kMaxChangesKeptForListings) {
    // The listings in flight are refused when they arrive; none needs the changes then.
    refuse_listings_asked_until_ = *listings_in_flight_.rbegin();
    changes_for_listings_.clear();
    return;
  }
  changes_for_listings_.push_back(std::move(change));
}

void MetadataCache::EndListing(Asked asked) {
  if (auto it = listings_in_flight_.find(asked.seq); it != listings_in_flight_.end()) {
    listings_in_flight_.erase(it);
  }
  if (listings_in_flight_.empty()) {
    changes_for_listings_.clear();
    return;
  }
  // Changes made before the oldest listing in flight was asked are in what it will list.
  const uint64_t oldest = *listings_in_flight_.begin();
  while (!changes_for_listings_.empty() && changes_for_listings_.front().seq < oldest) {
    changes_for_listings_.pop_front();
  }
}

std::shared_ptr<const DirSnapshot> MetadataCache::FreshListing(const std::string& dir_path) const {
  const TimePoint now = ttl_.Now();
  std::lock_guard lock(mu_);
  auto l = listings_.find(dir_path);
  if (l == listings_.end() || !TtlPolicy::Fresh(l->second.expiry, now)) return nullptr;
  l->second.used = ++tick_;
  return l->second.snapshot;
}

bool MetadataCache::WorthRelisting(const std::string& dir_path) const {
  if (!ttl_.revalidates()) return false;
  const TimePoint now = ttl_.Now();
  std::lock_guard lock(mu_);
  auto l = listings_.find(dir_path);
  if (l == listings_.end() || TtlPolicy::Fresh(l->second.expiry, now)) return false;
  return InDemand(l->second, kRelistMaxEntries);
}

bool MetadataCache::ClaimRefreshAhead(const std::string& dir_path) const {
  if (!ttl_.revalidates()) return false;
  const TimePoint now = ttl_.Now();
  std::lock_guard lock(mu_);
  auto l = listings_.find(dir_path);
  if (l == listings_.end() || l->second.refresh_claimed) return false;
  const TimePoint expiry = l->second.expiry;
  if (!TtlPolicy::Fresh(expiry, now) || expiry - now > ttl_.Positive() / 4) return false;
  if (!InDemand(l->second, SIZE_MAX)) return false;
  l->second.refresh_claimed = true;
  return true;
}

MetadataCache::LookupListing MetadataCache::ClaimListingForLookups(const std::string& dir_path) {
  if (!ttl_.indefinite() && !ttl_.revalidates()) return LookupListing::kNone;
  const TimePoint now = ttl_.Now();
  std::lock_guard lock(mu_);
  if (auto l = listings_.find(dir_path); l != listings_.end()) {
    // Small directories are WorthRelisting's (the lookup waits for them); a fresh listing
    // answers (a probe then comes from an invalidation, which listing again would not help).
    Listing& listing = l->second;
    if (TtlPolicy::Fresh(listing.expiry, now) || listing.refresh_claimed ||
        listing.snapshot->size() <= kRelistMaxEntries || !InDemand(listing, SIZE_MAX)) {
      return LookupListing::kNone;
    }
    listing.refresh_claimed = true;
    return LookupListing::kAgain;
  }
  if (lookup_demand_.size() >= kMaxLookupDemandRecords && !lookup_demand_.count(dir_path)) {
    lookup_demand_.clear();
  }
  LookupDemand& demand = lookup_demand_[dir_path];
  ++demand.probes;
  if (demand.claimed || demand.probes < demand.needed) return LookupListing::kNone;
  demand.claimed = true;
  return LookupListing::kFirst;
}

bool MetadataCache::LookupsStillWaiting(const std::string& dir_path, int pages) const {
  std::lock_guard lock(mu_);
  auto d = lookup_demand_.find(dir_path);
  return d != lookup_demand_.end() &&
         d->second.probes >= kRelistFindsPerPage * static_cast<uint64_t>(std::max(pages, 1));
}

void MetadataCache::BackgroundListingEnded(const std::string& dir_path, int given_up_after_pages) {
  std::lock_guard lock(mu_);
  if (auto l = listings_.find(dir_path); l != listings_.end()) {
    // A kAgain listing or a refresh ahead: the cached one stays; demand builds again.
    l->second.refresh_claimed = false;
    l->second.finds = 0;
    return;
  }
  auto d = lookup_demand_.find(dir_path);
  if (d == lookup_demand_.end()) return;
  LookupDemand& demand = d->second;
  demand.claimed = false;
  demand.probes = 0;
  if (given_up_after_pages > 0) {
    demand.needed =
        std::max<uint64_t>(demand.needed, 2 * static_cast<uint64_t>(given_up_after_pages));
  }
}

bool MetadataCache::InDemand(const Listing& listing, size_t max_entries) {
  const size_t entries = listing.snapshot->size();
  if (entries > max_entries) return false;
  const uint64_t pages = std::max<uint64_t>(1, (entries + 999) / 1000);
  return listing.finds > kRelistFindsPerPage * pages;
}

size_t MetadataCache::entry_count() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

size_t MetadataCache::listing_count() const {
  std::lock_guard lock(mu_);
  return listings_.size();
}

size_t MetadataCache::listed_names() const {
  std::lock_guard lock(mu_);
  return listed_names_;
}

size_t MetadataCache::listing_bytes() const {
  std::lock_guard lock(mu_);
  return listing_bytes_;
}

size_t MetadataCache::entry_bytes() const {
  std::lock_guard lock(mu_);
  return entry_bytes_;
}

uint64_t MetadataCache::evictions() const {
  std::lock_guard lock(mu_);
  return evictions_;
}

size_t MetadataCache::changes_kept_for_listings() const {
  std::lock_guard lock(mu_);
  return changes_for_listings_.size();
}

}  // namespace ossmount::meta
