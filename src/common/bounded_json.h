// ParseBoundedJson: JSON from an untrusted source (a control request from any user of the
// mount, a config or credentials file, a metadata server's reply) into a rapidjson::Document,
// bounded in size and nesting so that no input can take the process down.
//
// RapidJSON's default parser recurses once per nesting level: a million '[' overflow the
// stack. This one uses its iterative parser (the parse state lives on the heap) and counts
// the nesting as it goes, refusing the first array or object that would open deeper than
// max_depth before it is built; text over max_bytes is refused before any parsing.
// Destroying the Document is safe at any depth: with its default MemoryPoolAllocator
// (kNeedFree false) a value's destructor visits no child, and the pool is freed chunk by
// chunk.
//
// Errors are kInvalidArgument, with messages written to follow what was parsed
// (Status::Prefix("the control request"), "config file /etc/ossmount/config.json: ..."):
//   "70000000 bytes, over the 67108864-byte limit"
//   "nested deeper than 32 levels at offset 32"
//   "more than 4194304 values at offset 8388609"
//   "not valid JSON at offset 5: Missing a comma or ']' after an array element."
// Positions are "line L, column C (offset N)" when the text has more than one line. No
// message quotes the text (it may hold secrets). A NUL byte ends JSON text for RapidJSON,
// so text with anything after one is refused too.
//
// Thread-safety: a pure function.
#pragma once

#include <rapidjson/document.h>

#include <cstddef>
#include <string_view>

#include "ossmount/status.h"

namespace ossmount {

// Every format ossmount reads is a few levels deep (a hints request is 2, a connector
// config.json 3): 32 leaves room for any of them to grow and costs nothing to check.
inline constexpr std::size_t kDefaultMaxJsonDepth = 32;

struct JsonLimits {
  std::size_t max_bytes = 0;  // required: the largest text accepted
  // Arrays and objects nested in one another: `{"a":[1]}` is 2 levels, a scalar 0.
  std::size_t max_depth = kDefaultMaxJsonDepth;
  // Values of any kind (scalars, arrays, objects, member names not counted); 0 = bounded only
  // by max_bytes. Each costs 16 bytes in the Document, so text of many tiny values ("[0,0,...]")
  // would otherwise cost 8 times its size.
  std::size_t max_values = 0;
};

// Parses `text` into *doc (replacing its value). `extra_flags` may hold
// rapidjson::kParseCommentsFlag and/or kParseTrailingCommasFlag; any other flag is a bug
// (kInternal). On error *doc is null. doc->HasParseError() does not reflect this parse: use
// the returned Status.
Status ParseBoundedJson(std::string_view text, const JsonLimits& limits, rapidjson::Document* doc,
                        unsigned extra_flags = 0);

}  // namespace ossmount
