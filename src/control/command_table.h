// CommandTable: the control commands a mount's daemon answers (`stats`, `warmup`, `hints`,
// ...), and who may run each, shared by the channels that carry requests to it: the control
// socket (control_server.h) and ioctls on a directory of the mount (control_ioctl.h).
//
// A request is one JSON object, {"command": "NAME", ...arguments}; the answer one JSON
// object, {"ok": true, ...result fields} or {"ok": false, "error": "message"}, followed by
// '\n'.
//
// A handler gets the parsed request and returns the result fields as the text of a JSON
// object (e.g. R"({"files":3})"), merged into the answer after "ok": true, or an error
// Status whose message becomes "error". Handlers run one at a time on the table's strand of
// the io_context: they must not block for long (start work, return).
//
// Who may run a command: the daemon's own user and root may run every command. A command
// registered for any user (Access::kAnyUser) may also be run by anyone else the kernel lets
// into the mount (allow_other): those are the commands that only read state or ask for
// bytes that user could read anyway. The socket is private to the daemon's user, so only
// requests through the mount come from other users.
//
// Thread-safety: Register and Answer may be called from any thread at any time.
#pragma once

#include <rapidjson/document.h>

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>

#include "ossmount/control_ioctl.h"
#include "ossmount/status.h"

namespace ossmount::control {

// The largest request accepted, newline included (hint lists of millions of paths fit).
inline constexpr std::size_t kMaxRequestBytes = kMaxControlRequestBytes;
// The most JSON values in one request: its parse then holds at most 64 MiB (16 bytes a value)
// whatever the text (a hints request of 4 million paths; clients send 1 million a piece).
inline constexpr std::size_t kMaxRequestValues = 4u << 20;

// The process a request came from, as the kernel reports it (SO_PEERCRED for the socket,
// the FUSE request for an ioctl): what a client says about itself is not trusted. pid is 0
// when the client's process is not visible from the daemon's pid namespace.
struct Peer {
  int pid = 0;
  unsigned uid = 0;
  // The directory the request came through, relative to the daemon's root ("" for the
  // root, and for the socket): paths in the request are relative to it and cannot leave it,
  // so a process that sees only a bind mount of one directory names nothing outside it.
  std::string directory;
};

enum class Access {
  kOwner,    // the daemon's user and root only
  kAnyUser,  // anyone who can open a directory of the mount
};

using Handler = std::function<Result<std::string>(const rapidjson::Document& request)>;
using PeerHandler =
    std::function<Result<std::string>(const rapidjson::Document& request, const Peer& peer)>;

class CommandTable {
 public:
  // owner_uid: the daemon's user (geteuid() in the daemon; tests choose).
  CommandTable(boost::asio::io_context& io, unsigned owner_uid);
  ~CommandTable();
  CommandTable(const CommandTable&) = delete;
  CommandTable& operator=(const CommandTable&) = delete;

  // A second registration of the same command replaces the first.
  void Register(std::string command, Handler handler, Access access = Access::kOwner);
  // The same, for a command whose answer depends on who asks.
  void RegisterWithPeer(std::string command, PeerHandler handler, Access access = Access::kOwner);

  // Runs `request` (the JSON text, a trailing newline allowed) on the table's strand and
  // calls `done` there with the answer text, newline included. `done` is called exactly
  // once, unless the io_context is destroyed first.
  void Answer(std::string request, Peer peer, std::function<void(std::string answer)> done);

  // Answer's work, on the calling thread, without the newline (tests; the socket server).
  std::string Dispatch(const std::string& request, const Peer& peer);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// The process (thread group) of thread `tid`, from /proc/TID/status: a FUSE request names the
// calling thread, while hint lists belong to processes (a sampler may send from any thread).
// `tid` itself when /proc does not say (the thread has exited, or tid 0: not visible here).
int ProcessOfThread(int tid);

// {"ok":false,"error":MESSAGE} with MESSAGE escaped.
std::string ErrorReply(const std::string& message);
// Merges a handler's result object text into {"ok":true,...}; an error when `fields` is not
// a JSON object.
Result<std::string> OkReply(const std::string& fields);

}  // namespace ossmount::control
