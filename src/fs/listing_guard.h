// ListingGuard: makes a paged listing (ListObjectsV2 followed by its continuation tokens) end,
// whatever the server answers.
//
// Follow() is called once per page received, before its continuation token is used. It fails
// the listing (ErrorCode::kProtocol, which readers see as EIO) when a truncated page has no
// token, when a token was already seen in this listing (a server whose tokens cycle, with any
// period, would otherwise be followed forever), or when the listing would go past
// `max_pages` pages. The message names the listed prefix and the reason. Tokens are
// remembered as 64-bit hashes: 8 bytes a page.
//
// Thread-safety: none; one guard per listing, used by one completion at a time.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>

#include "ossmount/object_client.h"
#include "ossmount/status.h"

namespace ossmount::fs {

class ListingGuard {
 public:
  // `prefix` names the listing in messages; `max_pages` >= 1.
  ListingGuard(std::string prefix, int max_pages);

  // Ok: follow page.next_continuation_token (when page.truncated). An error: stop here.
  Status Follow(const ListPage& page);

  int pages() const { return pages_; }

 private:
  std::string prefix_;
  int max_pages_;
  int pages_ = 0;
  std::unordered_set<uint64_t> seen_;  // hashes of the tokens followed, "" (the start) included
};

}  // namespace ossmount::fs
