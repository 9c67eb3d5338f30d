#include "notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ossmount::daemon {

Status NotifySocket(const std::string& socket_path, const std::string& state, int fd_to_send) {
  if (socket_path.empty()) return Status::Ok();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path) ||
      (socket_path[0] != '/' && socket_path[0] != '@')) {
    return Status(ErrorCode::kInvalidArgument,
                  "NOTIFY_SOCKET '" + socket_path + "' is not an absolute path or @abstract name");
  }
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_path.size());
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return Status(ErrorCode::kInternal, std::string("notify socket: ") + std::strerror(errno));
  }
  iovec iov{const_cast<char*>(state.data()), state.size()};
  msghdr msg{};
  msg.msg_name = &addr;
  msg.msg_namelen = len;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd_to_send >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cmsg), &fd_to_send, sizeof(int));
  }
  ssize_t n;
  do {
    n = sendmsg(fd, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  int err = errno;
  close(fd);
  if (n < 0) {
    return Status(ErrorCode::kInternal,
                  "notify " + socket_path + ": " + std::string(std::strerror(err)));
  }
  return Status::Ok();
}

Status NotifySystemd(const std::string& state, int fd) {
  const char* socket_path = std::getenv("NOTIFY_SOCKET");
  if (socket_path == nullptr) return Status::Ok();
  return NotifySocket(socket_path, state, fd);
}

}  // namespace ossmount::daemon
