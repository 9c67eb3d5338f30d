// The libfuse low-level operation table that maps FUSE requests onto fs::Filesystem.
//
// Each op copies what it needs out of the request (names, offsets, file handles), starts
// the Filesystem call (which returns at once) and returns to the libfuse loop; the reply
// is sent from the completion handler on an io_context thread, through a ReplyOnce, so
// every request is answered exactly once. Mutations are refused with EROFS.
//
// Ioctls: only the control commands on a directory (ossmount/control_ioctl.h); anything
// else, Python's isatty() on every file it opens included, is ENOTTY.
//
// Directory offsets: the adapter owns offsets 0 and 1 ('.' and '..', synthesized here);
// Filesystem::ReadDir offsets start at 0 for the first real entry and are shifted by 2 on
// the wire. Entries named '.' or '..' coming from the Filesystem are skipped.
//
// INTERNAL to src/fuse: includes fuse_lowlevel.h.
#pragma once

#include <memory>

#include "fs/filesystem.h"
#include "fs/session_hooks.h"
#include "fuse/control_requests.h"
#include "fuse/reply_once.h"

namespace ossmount::fuse {

class DeviceHooks;
class Passthrough;

// Per-session state the ops reach through fuse_req_userdata(). Outlives the session.
struct AdapterContext {
  std::shared_ptr<fs::Filesystem> fs;
  std::shared_ptr<fs::SessionHooks> hooks;
  RequestTracker tracker;
  bool cache_readdir = false;  // FOPEN_CACHE_DIR on opendir (metadata that never expires)
  unsigned max_background = 128;
  unsigned congestion_threshold = 96;
  unsigned max_write = 1u << 20;  // also sets max_pages, which bounds read request size
  // FUSE passthrough for cached files; null when the adapter runs without a kernel mount
  // (unit tests). Owned by the FuseServer.
  Passthrough* passthrough = nullptr;
  // libfuse's device I/O hooks (INIT amendments, replies through io_uring rings); null
  // without a kernel mount. Owned by the FuseServer.
  DeviceHooks* device_hooks = nullptr;
  // The session, for notifications to the kernel; null without a kernel mount (unit tests).
  fuse_session* session = nullptr;
  // Control requests by ioctl on directories; null when the mount takes none.
  std::shared_ptr<ControlRequests> control;
};

// The table; userdata passed to fuse_session_new must be an AdapterContext*.
const fuse_lowlevel_ops& AdapterOps();

// Exposed for unit tests of the attribute mapping.
struct stat ToStat(const fs::Attributes& attr);
fuse_entry_param ToEntryParam(const fs::Entry& entry);

}  // namespace ossmount::fuse
