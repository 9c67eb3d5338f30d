#include "handover.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "control/control_server.h"

namespace ossmount::daemon {
namespace {

Status Errno(const std::string& what) {
  return Status(ErrorCode::kInternal, what + ": " + std::strerror(errno));
}

Result<sockaddr_un> Address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return Status(ErrorCode::kInvalidArgument, "socket path too long: " + path);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

}  // namespace

std::string BesideControlSocket(const std::string& absolute_mountpoint, const std::string& suffix) {
  std::string path = control::SocketPathForMountpoint(absolute_mountpoint);
  const std::string sock = ".sock";
  if (path.size() > sock.size() &&
      path.compare(path.size() - sock.size(), sock.size(), sock) == 0) {
    path.resize(path.size() - sock.size());
  }
  return path + suffix;
}

Result<UniqueFd> ListenForTakeOver(const std::string& path) {
  auto addr = Address(path);
  if (!addr.ok()) return addr.status();
  UniqueFd sock(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!sock) return Errno("socket");
  unlink(path.c_str());  // a dead supervisor's
  if (bind(sock.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr)) != 0) {
    return Errno("bind " + path);
  }
  if (listen(sock.get(), 4) != 0) return Errno("listen " + path);
  return sock;
}

Result<UniqueFd> AcceptPeer(int listener) {
  UniqueFd conn(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  if (!conn) return Errno("accept");
  ucred peer{};
  socklen_t len = sizeof(peer);
  if (getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0) {
    return Errno("SO_PEERCRED");
  }
  if (peer.uid != 0 && peer.uid != geteuid()) {
    return Status(ErrorCode::kAccessDenied,
                  "uid " + std::to_string(peer.uid) + " may not take this mount over");
  }
  return conn;
}

Result<UniqueFd> ConnectForTakeOver(const std::string& path) {
  auto addr = Address(path);
  if (!addr.ok()) return addr.status();
  UniqueFd sock(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock) return Errno("socket");
  if (connect(sock.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr)) != 0) {
    return Status(ErrorCode::kNotFound,
                  "no ossmount supervisor answers at " + path + " (" + std::strerror(errno) + ")");
  }
  return sock;
}

Result<std::string> ReadLine(int sock, std::chrono::milliseconds timeout, UniqueFd* fd) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string line;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Status(ErrorCode::kTimeout, "no answer in time");
    pollfd p{sock, POLLIN, 0};
    int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char c;
    iovec iov{&c, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return Errno("recvmsg");
    if (n == 0) return Status(ErrorCode::kNotFound, "the peer closed the connection");
    for (cmsghdr* h = CMSG_FIRSTHDR(&msg); h != nullptr; h = CMSG_NXTHDR(&msg, h)) {
      if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
        int received;
        std::memcpy(&received, CMSG_DATA(h), sizeof(received));
        if (fd != nullptr) {
          fd->reset(received);
        } else {
          close(received);
        }
      }
    }
    if (c == '\n') return line;
    line.push_back(c);
  }
}

Status WriteLine(int sock, const std::string& line, int fd) {
  const std::string text = line + "\n";
  iovec iov{const_cast<char*>(text.data()), text.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* h = CMSG_FIRSTHDR(&msg);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(h), &fd, sizeof(fd));
  }
  // One small message: sent whole or not at all on a Unix stream socket in practice; a
  // short send is reported.
  ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
  if (n != static_cast<ssize_t>(text.size())) return Errno("sendmsg");
  return Status::Ok();
}

}  // namespace ossmount::daemon
