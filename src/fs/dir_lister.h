// ListDirectory: every page of one directory's delimiter listing, as a DirSnapshot.
//
// Sends ListObjectsV2 (prefix = the directory's key prefix, delimiter '/', max-keys 1000)
// and follows continuation tokens to the last page; pages are requested one after another
// (the token of each comes from the previous). Hidden keys are counted and logged once per
// listing (spdlog info, with up to 3 examples). Any page failing fails the whole listing:
// a partial directory is never returned. A listing whose continuation tokens repeat, or that
// goes past `max_pages`, fails with kProtocol (EIO) and an error log line (ListingGuard).
//
// `keep_going`, if given, is asked before each page after the first, with the number of
// pages fetched so far; false ends the listing there with kCancelled (nothing is returned).
// A listing whose names would take more than `max_bytes` (MetadataCache::max_listing_bytes)
// ends with kTooBig, so that no directory is held whole beyond the metadata budget.
//
// Thread-safety: a free function; `done` runs once, on the client's completion thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "fs/listing_guard.h"
#include "meta/metadata_cache.h"
#include "ossmount/object_client.h"

namespace ossmount::fs {

using ListingCallback = std::function<void(Result<std::shared_ptr<const meta::DirSnapshot>>)>;

using KeepListing = std::function<bool(int pages_fetched)>;

void ListDirectory(std::shared_ptr<ObjectClient> client, std::string list_prefix,
                   ListingCallback done, KeepListing keep_going, int max_pages,
                   size_t max_bytes = SIZE_MAX);

}  // namespace ossmount::fs
