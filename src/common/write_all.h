// WriteAll: writes every byte of `data` to `fd`, going on after short writes and EINTR.
// Returns false, with errno set, when a write fails; a write that takes no bytes counts as
// failed (EIO), so a full device can never make it spin.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <string_view>

namespace ossmount {

inline bool WriteAll(int fd, std::string_view data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) {
      errno = EIO;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace ossmount
