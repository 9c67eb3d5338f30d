// The hand-over of a mount from one supervisor to another (`ossmount ... --take-over`), over
// the old supervisor's Unix socket beside the mount's control socket:
//
//   new -> old   "take-over VERSION\n"
//   old -> new   the /dev/fuse descriptor (SCM_RIGHTS) with "handed RESTARTS TAKEOVERS
//                LONGEST_PAUSE_MS\n", once the files open for writing were closed (or
//                kHandOverWait passed) and the old daemon stopped
//   new -> old   "serving\n" once the new daemon serves; the old supervisor then exits 0.
//                Without it (the new one failed and closed the socket) the old one serves
//                again.
//
// Thread-safety: functions only; each call works on the descriptors it is given.
#pragma once

#include <chrono>
#include <string>

#include "common/unique_fd.h"
#include "ossmount/status.h"

namespace ossmount::daemon {

// How long an old supervisor waits for the files open for writing to be closed.
constexpr std::chrono::seconds kHandOverWait{30};

// A path beside the control socket of `absolute_mountpoint` (its name, with `suffix` in
// place of ".sock").
std::string BesideControlSocket(const std::string& absolute_mountpoint, const std::string& suffix);
// The socket of the supervisor serving `absolute_mountpoint`.
inline std::string SupervisorSocketPath(const std::string& absolute_mountpoint) {
  return BesideControlSocket(absolute_mountpoint, ".sup");
}

// Listens on `path` (replacing a stale socket), non-blocking, close-on-exec; only the
// supervisor's own user (or root) may hand over (checked at accept, AcceptPeer).
Result<UniqueFd> ListenForTakeOver(const std::string& path);
// Accepts one connection; kAccessDenied for a peer that is neither root nor our user.
Result<UniqueFd> AcceptPeer(int listener);
Result<UniqueFd> ConnectForTakeOver(const std::string& path);

// One line (without its '\n') read within `timeout`; with `fd` set to a descriptor that came
// with it. kTimeout, or kNotFound when the peer closed first.
Result<std::string> ReadLine(int sock, std::chrono::milliseconds timeout, UniqueFd* fd = nullptr);
// Writes `line` + '\n', with `fd` attached when >= 0.
Status WriteLine(int sock, const std::string& line, int fd = -1);

}  // namespace ossmount::daemon
