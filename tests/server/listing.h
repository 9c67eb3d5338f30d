// The ListObjects (V1 and V2) engine: which keys and common prefixes one page holds.
//
// Pure functions over an ObjectIndex (byte-ordered keys), so the pagination rules are tested
// without a network. Continuation tokens are opaque to clients: base64url of a tag byte ('k'
// the last key returned, 'p' the last common prefix returned) and the value, so a page that
// ended on a common prefix resumes after every key under it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "object_store.h"
#include "ossmount/status.h"

namespace ossmount::testserver {

struct ListQuery {
  std::string prefix;
  std::string delimiter;
  int max_keys = 1000;
  std::string start_after;         // V2; keys strictly after it
  std::string marker;              // V1; keys strictly after it (a common prefix skips its subtree)
  std::string continuation_token;  // V2, opaque; takes precedence over start_after
};

struct ListPage {
  std::vector<ObjectPtr> contents;
  std::vector<std::string> common_prefixes;
  bool truncated = false;
  std::string next_token;   // V2 NextContinuationToken when truncated
  std::string next_marker;  // V1 NextMarker when truncated (last key or prefix returned)
};

// kInvalidArgument for a continuation token this server did not issue.
Result<ListPage> ListIndex(const ObjectIndex& index, const ListQuery& query);

// One page of a generated directory (FaultSettings::synthetic_prefix): keys prefix + "f" + a
// 10-digit number from the one the token names ("syn-N"), `count` in all (0: never ending).
// A query prefix longer than `prefix` (a probe of one name) lists that key alone, if it is
// one of them.
Result<ListPage> SyntheticPage(const ListQuery& query, const std::string& prefix, uint64_t count);

// The smallest string greater than every string starting with `prefix`; "" when none
// (prefix empty or all 0xFF bytes).
std::string PrefixSuccessor(std::string prefix);

}  // namespace ossmount::testserver
