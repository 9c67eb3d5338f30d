#include "control/mount_call.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "common/unique_fd.h"
#include "control/control_server.h"
#include "ossmount/control_ioctl.h"

namespace ossmount::control {

Result<std::string> CallThroughMount(const std::string& directory,
                                     const std::string& request_json) {
  UniqueFd dir(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) {
    return Status(ErrorCode::kNotFound,
                  "cannot open " + directory + " to reach its daemon: " + std::strerror(errno));
  }
  auto chunk = std::make_unique<ControlChunk>();
  const std::string request = request_json + "\n";
  auto failed = [&](const char* stage) {
    const int e = errno;
    if (e == ENOTTY || e == ENOSYS) {
      return Status(ErrorCode::kNotSupported,
                    "the daemon of " + directory + " takes no requests through the mount");
    }
    return Status(ErrorCode::kInvalidArgument, std::string("control request through ") + directory +
                                                   ": " + stage + ": " + std::strerror(e));
  };
  for (std::size_t sent = 0; sent < request.size();) {
    const std::size_t n = std::min(kControlChunkData, request.size() - sent);
    chunk->length = static_cast<uint32_t>(n);
    std::memcpy(chunk->data, request.data() + sent, n);
    if (::ioctl(dir.get(), kControlSend, chunk.get()) != 0) return failed("send");
    sent += n;
  }
  std::string answer;
  for (;;) {
    const int n = ::ioctl(dir.get(), kControlReceive, chunk.get());
    if (n < 0) return failed("receive");
    if (n == 0) break;
    if (static_cast<std::size_t>(n) > kControlChunkData ||
        chunk->length != static_cast<uint32_t>(n)) {
      return Status(ErrorCode::kProtocol,
                    "the daemon of " + directory + " sent a malformed answer");
    }
    answer.append(chunk->data, static_cast<std::size_t>(n));
  }
  if (!answer.empty() && answer.back() == '\n') answer.pop_back();
  return answer;
}

Result<std::string> CallMount(const std::string& mountpoint, const std::string& request_json,
                              std::chrono::milliseconds timeout) {
  Result<std::string> through_mount = CallThroughMount(mountpoint, request_json);
  if (through_mount.ok() || through_mount.status().code() != ErrorCode::kNotSupported) {
    return through_mount;
  }
  return Call(SocketPathForMountpoint(mountpoint), request_json, timeout);
}

}  // namespace ossmount::control
