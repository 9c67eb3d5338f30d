#include "meta/metadata_cache.h"

#include <algorithm>
#include <cstdint>

namespace ossmount::meta {

MetadataCache::MetadataCache(TtlPolicy ttl) : ttl_(std::move(ttl)) {}

MetadataCache::Answer MetadataCache::Find(const std::string& path) const {
  const TimePoint now = ttl_.Now();
  auto [parent, name] = SplitPath(path);
  std::lock_guard lock(mu_);
  Answer answer;
  uint64_t best_seq = 0;
  auto e = entries_.find(path);
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
  if (parent_listing != listings_.end()) ++parent_listing->second.finds;  // WorthRelisting
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
  Entry& entry = entries_[path];
  if (entry.seq > asked.seq) return;  // learnt after the question was asked
  entry = Entry{Entry::kPresent, std::move(attr), ttl_.PositiveExpiry(now), asked.seq};
}

void MetadataCache::PutAbsent(const std::string& path, Asked asked) {
  const TimePoint now = ttl_.Now();
  std::lock_guard lock(mu_);
  Entry& entry = entries_[path];
  if (entry.seq > asked.seq) return;
  entry = Entry{Entry::kAbsent, NodeAttr(), ttl_.NegativeExpiry(now), asked.seq};
}

void MetadataCache::Erase(const std::string& path) {
  std::lock_guard lock(mu_);
  entries_.erase(path);
}

void MetadataCache::Invalidate(const std::string& path) {
  std::lock_guard lock(mu_);
  entries_[path] = Entry{Entry::kInvalid, NodeAttr(), TimePoint::max(), ++seq_};
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
  lookup_demand_.erase(dir_path);
  return listing;
}

void MetadataCache::RecordChange(const std::string& path, std::optional<NodeAttr> attr) {
  const TimePoint now = ttl_.Now();
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  std::lock_guard lock(mu_);
  if (attr) {
    entries_[path] = Entry{Entry::kPresent, *attr, ttl_.PositiveExpiry(now), ++seq_};
  } else {
    entries_[path] = Entry{Entry::kAbsent, NodeAttr(), ttl_.PositiveExpiry(now), ++seq_};
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
}

void MetadataCache::ForgetTree(const std::string& path) {
  const std::string below = path + "/";
  auto under = [&](const std::string& p) {
    return p == path || p.compare(0, below.size(), below) == 0;
  };
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    it = under(it->first) ? entries_.erase(it) : std::next(it);
  }
  for (auto it = listings_.begin(); it != listings_.end();) {
    if (!under(it->first)) {
      ++it;
      continue;
    }
    if (it->second.snapshot) {
      listed_names_ -= it->second.snapshot->size();
      listing_bytes_ -= it->second.snapshot->MemoryBytes();
    }
    it = listings_.erase(it);
  }
  // Ancestors' answers must not speak for the tree either: its names are unknown now.
  entries_[path] = Entry{Entry::kInvalid, NodeAttr(), TimePoint::max(), ++seq_};
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

size_t MetadataCache::changes_kept_for_listings() const {
  std::lock_guard lock(mu_);
  return changes_for_listings_.size();
}

}  // namespace ossmount::meta
