// The control commands of dataset prefetch, registered by the mount session:
//   "warmup"        {"paths":["train", ...], "concurrency":N?} -> {"job":ID}
//   "warmup-status" {}                                          -> PrefetchStatusJson
//   "warmup-cancel" {}                                          -> {"cancelled":N}
//   "hints"         {"paths":["train/n01/x.JPEG", ...],
//                    "sender":NAME?, "append":BOOL?}            -> {"files":N}
//                   (the sender's list: one per client process, see HintTracker;
//                   NAME tells apart senders whose pid the daemon cannot see; "append"
//                   extends the sender's list, for lists over the request limit, sent in
//                   pieces in order)
// Paths are relative to the daemon's root ("" or "." is the root); absolute paths, empty
// components and ".." are refused with an error naming the path. Every user of the mount may
// send all but "warmup-cancel", which stops everyone's warm-ups (control::Access).
// A hint list is checked against the control memory (--control-memory) before "hints"
// answers: one that does not fit is refused with an error naming the limit, and nothing of
// it is kept. A user whose uid is neither `owner_uid` nor 0 gets the smaller share and
// counts of other users (DatasetPrefetcher::ReserveHints, StartWarmupFor).
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>

#include "control/command_table.h"
#include "prefetch/dataset_prefetcher.h"

namespace ossmount::daemon {

void RegisterPrefetchCommands(control::CommandTable& commands, boost::asio::io_context& io,
                              std::shared_ptr<prefetch::DatasetPrefetcher> prefetcher,
                              unsigned owner_uid);

// Who sent a hint list: the client's pid, and whether that process still runs. For a client
// the daemon cannot see (pid 0), the request's "sender" string (at most kMaxSenderName
// bytes) names it instead; a visible client's claim is ignored.
inline constexpr size_t kMaxSenderName = 256;
prefetch::HintSender HintSenderOf(const control::Peer& peer, const rapidjson::Document& request);

// A request path made relative and checked ("./a//b/" -> "a/b"); an error names it.
Result<std::string> NormalizeRequestPath(const std::string& path);

}  // namespace ossmount::daemon
