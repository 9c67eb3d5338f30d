// ProcessOfThread: the process (thread group) a thread belongs to. FUSE and SO_PEERCRED
// name the calling thread, and a program may open a file in one thread and close it in
// another; what belongs to "the process that opened it" is compared by thread group.
// Reads /proc/TID/status; the thread id itself when that cannot be read.
#pragma once

#include <cstdlib>
#include <string>

#include "common/read_file.h"

namespace ossmount {

inline int ProcessOfThread(int tid) {
  if (tid <= 0) return tid;
  const std::string status = ReadFileOrEmpty("/proc/" + std::to_string(tid) + "/status");
  const std::string::size_type at = status.find("\nTgid:");
  if (at == std::string::npos) return tid;
  const int tgid = std::atoi(status.c_str() + at + 6);  // atoi skips the tab
  return tgid > 0 ? tgid : tid;
}

}  // namespace ossmount
