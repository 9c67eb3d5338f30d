// The control socket: how `ossmount stats`, `ossmount warmup` and friends talk to a running
// mount's daemon.
//
// Protocol: a Unix stream socket, mode 0600 (root: /run/ossmount/, others:
// $XDG_RUNTIME_DIR/ossmount/ or /tmp/ossmount-<uid>/, directory 0700). A client sends one
// JSON object terminated by '\n', {"command": "NAME", ...arguments}; the server answers one
// JSON object terminated by '\n', {"ok": true, ...result fields} or
// {"ok": false, "error": "message"}, then closes the connection. Requests over 64 MiB are
// refused (hint lists of millions of paths must fit).
//
// A handler gets the parsed request and returns the result fields as the text of a JSON
// object (e.g. R"({"files":3})"), merged into the reply after "ok": true, or an error
// Status whose message becomes "error". Handlers run on an io_context thread: they must
// not block for long (start work, return).
//
// Thread-safety: Register() may be called from any thread at any time; the server's own
// work runs on the io_context it was started on.
#pragma once

#include <rapidjson/document.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "ossmount/status.h"

namespace ossmount::control {

// The largest request accepted, newline included.
inline constexpr std::size_t kMaxRequestBytes = 64u << 20;

using Handler = std::function<Result<std::string>(const rapidjson::Document& request)>;

// The process at the other end of a connection, as the kernel reports it (SO_PEERCRED):
// what a client says about itself is not trusted. pid is 0 when the client's process is not
// visible from the daemon's pid namespace.
struct Peer {
  int pid = 0;
  unsigned uid = 0;
};
using PeerHandler =
    std::function<Result<std::string>(const rapidjson::Document& request, const Peer& peer)>;

class ControlServer {
 public:
  // Binds the socket (replacing a stale one left by a dead daemon), starts accepting on `io`.
  // Fails when the directory cannot be made safely (not ours, not 0700), when the path is
  // not a socket, or when another live daemon already answers on it.
  static Result<std::unique_ptr<ControlServer>> Start(boost::asio::io_context& io,
                                                      std::string socket_path);
  // Thread-safe; may be called before or after Start's connections arrive. A second
  // registration of the same command replaces the first.
  void Register(std::string command, Handler handler);
  // The same, for a command whose answer depends on who asks.
  void RegisterWithPeer(std::string command, PeerHandler handler);
  const std::string& path() const;
  ~ControlServer();  // stops accepting and unlinks the socket

  struct State;  // shared with in-flight connections (defined in control_server.cc)

 private:
  explicit ControlServer(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

// The socket of the mount on `absolute_mountpoint` (the same function is used by the
// daemon and by subcommands such as `ossmount stats MOUNTPOINT`, so both agree).
// The file name is a readable form of the mount point plus a hash of it, so distinct mount
// points never share a socket and the path fits in sockaddr_un (108 bytes).
std::string SocketPathForMountpoint(const std::string& absolute_mountpoint);

// The socket directory for the current user (see the protocol note above).
std::string SocketDirectory();

// Client side: connects, sends `request_json` + '\n', returns the reply text (without the
// newline). Errors name the situation plainly ("no ossmount daemon answers on socket ...").
Result<std::string> Call(const std::string& socket_path, const std::string& request_json,
                         std::chrono::milliseconds timeout);

// Helpers for handlers and clients.
// {"ok":false,"error":MESSAGE} with MESSAGE escaped.
std::string ErrorReply(const std::string& message);
// Merges a handler's result object text into {"ok":true,...}; an error when `fields` is not
// a JSON object.
Result<std::string> OkReply(const std::string& fields);

}  // namespace ossmount::control
