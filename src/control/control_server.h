// The control socket: how `ossmount stats`, `ossmount warmup` and friends talk to a running
// mount's daemon when they run as the daemon's user on its machine (the mount's directory
// ioctls, control_ioctl.h, reach the same commands from anywhere the mount is seen).
//
// Protocol: a Unix stream socket, mode 0600 (root: /run/ossmount/, others:
// $XDG_RUNTIME_DIR/ossmount/ or /tmp/ossmount-<uid>/, directory 0700). A client sends one
// JSON request terminated by '\n' and gets one JSON answer terminated by '\n' (the format:
// command_table.h), then the server closes the connection. Requests over kMaxRequestBytes
// are refused.
//
// Thread-safety: the server's own work runs on the io_context it was started on.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "control/command_table.h"
#include "ossmount/status.h"

namespace ossmount::control {

class ControlServer {
 public:
  // Binds the socket (replacing a stale one left by a dead daemon), starts accepting on `io`
  // and answers each request from `commands`. Fails when the directory cannot be made safely
  // (not ours, not 0700), when the path is not a socket, or when another live daemon already
  // answers on it.
  static Result<std::unique_ptr<ControlServer>> Start(boost::asio::io_context& io,
                                                      std::string socket_path,
                                                      std::shared_ptr<CommandTable> commands);
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

}  // namespace ossmount::control
