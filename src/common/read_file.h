// ReadFileOrEmpty: the whole text of a small file (/proc/locks, /proc/self/mountinfo, a
// process's comm), or "" when it cannot be opened. For callers to whom an unreadable file
// means "nothing known"; a caller that must report why a file could not be read opens it
// itself.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace ossmount {

inline std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace ossmount
