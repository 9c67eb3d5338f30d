#include "fs/listing_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "fs/fs_metrics.h"
#include "fs/name_prober.h"

namespace ossmount::fs {
namespace {

// Gives `done` what the cache knows about a path; false (and `done` untouched) when it
// knows nothing.
bool AnswerFromCache(const meta::MetadataCache::Answer& answer,
                     ListingService::ResolveCallback& done) {
  switch (answer.state) {
    case meta::MetadataCache::Answer::kPresent:
      done(std::optional(answer.attr));
      return true;
    case meta::MetadataCache::Answer::kAbsent:
      done(std::optional<meta::NodeAttr>());
      return true;
    case meta::MetadataCache::Answer::kUnknown:
      break;
  }
  return false;
}

}  // namespace

ListingService::ListingService(std::shared_ptr<ObjectClient> client, const FsOptions& options)
    : client_(std::move(client)),
      prefix_(options.prefix),
      max_list_pages_(options.max_list_pages),
      list_for_lookups_(options.list_for_lookups),
      cache_(meta::TtlPolicy(options.metadata_ttl, options.negative_ttl, options.clock)) {
  // Under a zero TTL a listing is stale when it lands: listing ahead would only add requests.
  const meta::TtlPolicy& ttl = cache_.ttl();
  const size_t list_ahead = ttl.indefinite() || ttl.revalidates() ? options.list_ahead : 0;
  if (list_ahead > 0) {
    // Raw `this`: the lister runs from ReadDir (whose filesystem holds this service) or from
    // a listing's completion, which holds a reference.
    list_ahead_ = std::make_shared<ListAhead>(
        list_ahead, [this](const std::string& path, std::function<void()> done) {
          // Listed since it was queued: fresh_will_do answers from the cache, with no request.
          FetchListing(
              path,
              [done = std::move(done)](const Result<std::shared_ptr<const meta::DirSnapshot>>&) {
                done();
              },
              FetchMode{.fresh_will_do = true,
                        .wants = [](int pages) { return pages < ListAhead::kMaxPages; },
                        .counted_in = &ListAheadOutcomes()});
        });
  }
  RegisterListAheadGauges(list_ahead, list_ahead_);
}

void ListingService::Resolve(const std::string& path, ResolveCallback done) {
  meta::MetadataCache::Answer answer = cache_.Find(path);
  if (answer.state != meta::MetadataCache::Answer::kUnknown) {
    if (cache_.ttl().revalidates()) {
      const std::string parent(meta::SplitPath(path).first);
      if (cache_.ClaimRefreshAhead(parent)) RefreshListingAhead(parent);
    }
    AnswerFromCache(answer, done);
    return;
  }
  const std::string parent(meta::SplitPath(path).first);
  if (!cache_.WorthRelisting(parent)) return ProbePath(path, std::move(done));
  // One listing answers this name and its siblings until it expires again, unless it grew
  // too large to be worth waiting for.
  GetListing(
      parent,
      [self = shared_from_this(), path,
       done = std::move(done)](Result<std::shared_ptr<const meta::DirSnapshot>> r) mutable {
        if (r.ok() && AnswerFromCache(self->cache_.Find(path), done)) return;
        // The listing failed, or something newer said "unknown" (an invalidation meanwhile).
        self->ProbePath(path, std::move(done));
      },
      [](int pages) { return pages < kRelistMaxPages; });
}

void ListingService::ProbePath(const std::string& path, ResolveCallback done) {
  if (!probes_.Join(path, [done = std::move(done)](const ProbeResult& r) { done(r); })) return;
  ListForLookups(std::string(meta::SplitPath(path).first));
  const meta::MetadataCache::Asked asked = cache_.Asking();
  ProbeName(client_, meta::FileKey(prefix_, path),
            [self = shared_from_this(), path, asked](ProbeResult r) {
              if (r.ok()) {
                if (r->has_value()) {
                  self->cache_.PutPresent(path, **r, asked);
                } else {
                  self->cache_.PutAbsent(path, asked);
                }
              }
              self->probes_.Complete(path, r);
            });
}

void ListingService::GetListing(
    const std::string& path, ListingCallback done,
    SingleFlight<std::shared_ptr<const meta::DirSnapshot>>::Wants wants) {
  if (auto fresh = cache_.FreshListing(path)) {
    return done(std::move(fresh));
  }
  FetchListing(path, std::move(done), FetchMode{.fresh_will_do = true, .wants = std::move(wants)});
}

void ListingService::RefreshListingAhead(const std::string& path) {
  // A new listing: the cached one is fresh, only about to expire. If it fails, a later
  // lookup may claim another once the demand is there again.
  FetchListing(
      path,
      [self = shared_from_this(), path](const Result<std::shared_ptr<const meta::DirSnapshot>>& r) {
        if (!r.ok()) self->cache_.BackgroundListingEnded(path, 0);
      },
      FetchMode{});
}

void ListingService::FetchListing(const std::string& path, ListingCallback done, FetchMode mode) {
  if (cache_.TooLarge(path)) {
    return done(Status(ErrorCode::kTooBig, "'" + path +
                                               "' is too large to list whole: it is read page "
                                               "by page"));
  }
  if (!listings_.Join(
          path,
          [done = std::move(done)](const Result<std::shared_ptr<const meta::DirSnapshot>>& r) {
            done(r);
          },
          std::move(mode.wants))) {
    return;
  }
  // A flight completes after caching its listing, so one that ended before this Join is
  // seen here; one that ends after it was joined.
  if (mode.fresh_will_do) {
    if (auto fresh = cache_.FreshListing(path)) {
      listings_.Complete(path, fresh);
      return;
    }
  }
  // Set when the listing was given up because no caller wanted it any more: its callers
  // were answered there already.
  auto abandoned = std::make_shared<bool>(false);
  KeepListing keep_going = [self = shared_from_this(), path, abandoned](int pages) {
    // A caller that joined and still waits (a reader) gets the whole directory.
    if (!self->listings_.CompleteIfUnwanted(
            path, pages, Status(ErrorCode::kCancelled, "listing of '" + path + "' abandoned"))) {
      return true;
    }
    spdlog::debug("abandoned the listing of '{}' after {} pages: nobody waits for it", path, pages);
    *abandoned = true;
    return false;
  };
  const meta::MetadataCache::Asked asked = cache_.StartListing();
  ListDirectory(
      client_, meta::DirPrefix(prefix_, path),
      [self = shared_from_this(), path, abandoned, asked,
       counted_in = mode.counted_in](Result<std::shared_ptr<const meta::DirSnapshot>> r) {
        if (r.ok() && !*abandoned) {
          r = self->cache_.PutListing(path, std::move(*r), asked);
        } else {
          self->cache_.ListingEnded(asked);
          if (r.status().code() == ErrorCode::kTooBig) {
            spdlog::info("{}", r.status().message());
            self->cache_.MarkTooLarge(path);
          }
        }
        if (!*abandoned) {
          if (r.ok() && self->observer_) self->observer_->OnListed(path, **r);
          self->listings_.Complete(path, r);
        }
        // Last, so that whoever sees the count sees what the listing's callers did.
        if (counted_in) counted_in->Count(*abandoned, r.status());
      },
      std::move(keep_going), max_list_pages_, cache_.max_listing_bytes());
}

void ListingService::ListForLookups(const std::string& dir) {
  if (!list_for_lookups_ || cache_.TooLarge(dir)) return;
  const meta::MetadataCache::LookupListing claim = cache_.ClaimListingForLookups(dir);
  if (claim == meta::MetadataCache::LookupListing::kNone) return;
  FetchMode mode{.counted_in = &LookupListingOutcomes()};
  // Pages fetched when last asked whether to go on: how far an abandoned listing got.
  auto pages_fetched = std::make_shared<int>(0);
  if (claim == meta::MetadataCache::LookupListing::kFirst) {
    mode.wants = [self = shared_from_this(), dir, pages_fetched](int pages) {
      *pages_fetched = pages;
      return self->cache_.LookupsStillWaiting(dir, pages);
    };
  }
  FetchListing(
      dir,
      [self = shared_from_this(), dir,
       pages_fetched](const Result<std::shared_ptr<const meta::DirSnapshot>>& r) {
        if (r.ok()) return;  // cached: it answers from now on
        const bool given_up = r.status().code() == ErrorCode::kCancelled;
        self->cache_.BackgroundListingEnded(dir, given_up ? std::max(*pages_fetched, 1) : 0);
      },
      std::move(mode));
}

void ListingService::ListAheadOf(const std::string& path) {
  if (!list_ahead_ || path.empty()) return;
  const auto [parent, name] = meta::SplitPath(path);
  auto listing = cache_.FreshListing(std::string(parent));
  if (!listing) return;
  const std::optional<size_t> entered = listing->Find(name);
  if (!entered) return;
  if (!list_ahead_->EnteredChildOf(std::string(parent), std::string(name))) return;
  // The next list_ahead directories by position; those already listed need nothing.
  std::vector<std::string> next;
  size_t directories = 0;
  for (size_t i = *entered + 1; i < listing->size() && directories < list_ahead_->distance(); ++i) {
    const meta::DirSnapshot::Child child = listing->child(i);
    if (!child.is_dir()) continue;
    ++directories;
    std::string sibling = meta::JoinPath(parent, child.name);
    if (!cache_.FreshListing(sibling) && !cache_.TooLarge(sibling))
      next.push_back(std::move(sibling));
  }
  if (!next.empty()) list_ahead_->Queue(next);
}

void ListingService::ListForWarmup(const std::string& path, prefetch::ListBatch batch,
                                   std::function<void(Status)> done) {
  if (path.empty()) {
    return ListRecursive(std::make_shared<RecursiveListing>(prefix_, max_list_pages_,
                                                            std::move(batch), std::move(done)));
  }
  Resolve(path, [self = shared_from_this(), path, batch = std::move(batch),
                 done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) mutable {
    if (!r.ok()) return done(r.status());
    if (!r->has_value()) return done(Status(ErrorCode::kNotFound, "no such file or directory"));
    const meta::NodeAttr& attr = **r;
    if (!attr.is_dir()) {
      prefetch::PrefetchItem item;
      item.path = path;
      item.key = meta::FileKey(self->prefix_, path);
      item.size = attr.size;
      item.etag = attr.etag;
      batch({std::move(item)});
      return done(Status::Ok());
    }
    self->ListRecursive(std::make_shared<RecursiveListing>(meta::DirPrefix(self->prefix_, path),
                                                           self->max_list_pages_, std::move(batch),
                                                           std::move(done)));
  });
}

void ListingService::ListRecursive(std::shared_ptr<RecursiveListing> listing, std::string token) {
  ListRequest request;
  request.prefix = listing->prefix;
  request.delimiter = "";  // everything below, one flat listing
  request.continuation_token = std::move(token);
  request.max_keys = 1000;
  client_->List(request, [self = shared_from_this(), listing](Result<ListPage> page) mutable {
    if (!page.ok()) return listing->done(page.status());
    if (Status follow = listing->guard.Follow(*page); !follow.ok()) {
      spdlog::error("{}: the warm-up listing fails", follow.message());
      return listing->done(std::move(follow));
    }
    std::vector<prefetch::PrefetchItem> items;
    items.reserve(page->objects.size());
    const size_t strip = self->prefix_.size();
    for (ObjectInfo& o : page->objects) {
      if (o.key.empty() || o.key.back() == '/' || o.key.size() <= strip) continue;  // markers
      prefetch::PrefetchItem item;
      item.path = o.key.substr(strip);
      item.key = std::move(o.key);
      item.size = o.size;
      item.etag = std::move(o.etag);
      items.push_back(std::move(item));
    }
    // Asked at every page, files or not: where a cancelled warm-up stops.
    if (!listing->batch(std::move(items))) {
      return listing->done(
          Status(ErrorCode::kCancelled, "warm-up listing of '" + listing->prefix + "' cancelled"));
    }
    if (!page->truncated) return listing->done(Status::Ok());
    self->ListRecursive(listing, page->next_continuation_token);
  });
}

}  // namespace ossmount::fs
