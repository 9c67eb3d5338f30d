// ProbeName: does a path exist, and is it a file or a directory? For names no listing
// answered.
//
// Sends, concurrently, HEAD <key> and LIST prefix=<key>/ max-keys=1 (no delimiter). Either
// proves existence; when both do, the directory wins (a file 'a' beside keys 'a/...' shows as
// the directory). Results:
//   - a value with the attributes: it exists;
//   - nullopt: HEAD said not found and the listing was empty (cacheable as negative);
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

void ProbeName(ObjectClient& client, const std::string& key, ProbeCallback done);

}  // namespace ossmount::fs
