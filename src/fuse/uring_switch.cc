#include "fuse/uring_switch.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace ossmount::fuse {

UringSwitch ReadUringSwitch(const std::string& path) {
  std::ifstream in(path);
  std::string value;
  if (!in || !(in >> value)) return UringSwitch::kAbsent;
  return value == "Y" || value == "1" ? UringSwitch::kOn : UringSwitch::kOff;
}

void LoadFuseModule() {
  const int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (fd >= 0) close(fd);
}

std::string UringSwitchProblem(UringSwitch state, const std::string& path) {
  switch (state) {
    case UringSwitch::kOn:
      return "";
    case UringSwitch::kOff:
      return "the kernel's FUSE io_uring switch is off (" + path +
             " is N; turn it on with 'echo Y > " + path +
             "' as root, or start ossmount as root with --fuse-io-uring on)";
    case UringSwitch::kAbsent:
      break;
  }
  return "this kernel has no FUSE io_uring support (it needs Linux 6.14 or later built with "
         "CONFIG_FUSE_IO_URING; " +
         path + " does not exist)";
}

Status TurnOnUringSwitch(const std::string& path) {
  const UringSwitch state = ReadUringSwitch(path);
  if (state == UringSwitch::kOn) return Status::Ok();
  if (state == UringSwitch::kAbsent) {
    return Status(ErrorCode::kNotSupported, UringSwitchProblem(state, path));
  }
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, "Y", 1) != 1) {
    const int err = errno;
    if (fd >= 0) close(fd);
    return Status(ErrorCode::kAccessDenied,
                  "cannot turn on the kernel's FUSE io_uring switch: writing " + path +
                      " failed (" + std::strerror(err) +
                      "; it takes root). Turn it on as root with 'echo Y > " + path +
                      "', or use --fuse-io-uring auto");
  }
  close(fd);
  if (ReadUringSwitch(path) != UringSwitch::kOn) {
    return Status(ErrorCode::kInternal, "the kernel's FUSE io_uring switch " + path +
                                            " did not stay on after writing Y to it");
  }
  return Status::Ok();
}

}  // namespace ossmount::fuse
