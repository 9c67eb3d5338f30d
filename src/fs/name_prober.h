// ProbeName: does a path exist, and is it a file or a directory? For names no listing
// answered.
//
// One request answers both questions: LIST prefix=<key> delimiter='/' max-keys=100. In key
// order the object <key> itself comes first, and everything under <key>/ rolls up into the
// common prefix <key>/ (markers included), after the few siblings that sort between them
// (<key> followed by a byte below '/', such as "a-b" or "a.txt" for "a"). Only when the page
// is cut short before reaching <key>/ does a second LIST prefix=<key>/ max-keys=1 decide
// whether the directory exists. No HEAD: the listing carries size, etag and mtime.
// When both exist, the directory wins (a file 'a' beside keys 'a/...' shows as the
// directory). Results:
//   - a value with the attributes: it exists;
//   - nullopt: no such file or directory (cacheable as negative);
//   - an error: a request failed and the answer is unknown (cache nothing).
//
// Thread-safety: a free function; `done` runs once, on the client's completion thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "meta/key_mapping.h"
#include "ossmount/object_client.h"

namespace ossmount::fs {

using ProbeResult = Result<std::optional<meta::NodeAttr>>;
using ProbeCallback = std::function<void(ProbeResult)>;

// Entries per probe page: enough to step over the siblings that sort before "<key>/".
constexpr int kProbePageSize = 100;

void ProbeName(std::shared_ptr<ObjectClient> client, const std::string& key, ProbeCallback done);

}  // namespace ossmount::fs
