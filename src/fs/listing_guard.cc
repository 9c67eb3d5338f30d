#include "fs/listing_guard.h"

#include <functional>
#include <string_view>

namespace ossmount::fs {

namespace {

uint64_t HashToken(std::string_view token) { return std::hash<std::string_view>{}(token); }

}  // namespace

ListingGuard::ListingGuard(std::string prefix, int max_pages)
    : prefix_(std::move(prefix)), max_pages_(max_pages < 1 ? 1 : max_pages) {
  seen_.insert(HashToken(""));
}

Status ListingGuard::Follow(const ListPage& page) {
  ++pages_;
  if (!page.truncated) return Status::Ok();
  const std::string& token = page.next_continuation_token;
  std::string reason;
  if (token.empty()) {
    reason = "page " + std::to_string(pages_) + " is truncated but has no continuation token";
  } else if (!seen_.insert(HashToken(token)).second) {
    reason = "page " + std::to_string(pages_) +
             " repeats a continuation token seen earlier in the same listing (the server's "
             "listing loops)";
  } else if (pages_ >= max_pages_) {
    reason = "the listing goes past " + std::to_string(max_pages_) + " pages (--max-list-pages)";
  } else {
    return Status::Ok();
  }
  return Status(ErrorCode::kProtocol, "listing '" + prefix_ + "': " + reason);
}

}  // namespace ossmount::fs
