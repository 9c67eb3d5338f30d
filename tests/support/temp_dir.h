// TempDir: a fresh directory under $TMPDIR (or /tmp) for one test, removed with everything in
// it when the object goes. Header-only, so any test target can use it without linking.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace ossmount::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "ossmount-test") {
    std::string templ = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(templ.data()) == nullptr) {
      throw std::runtime_error("mkdtemp " + templ + " failed");
    }
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path()/name (not created).
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }
  // Writes `content` to path()/name (parents created) with permission bits `mode`; returns
  // the file's path.
  std::string Write(const std::string& name, const std::string& content, mode_t mode = 0600) const {
    const std::string p = Sub(name);
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p, std::ios::trunc) << content;
    if (::chmod(p.c_str(), mode) != 0) throw std::runtime_error("chmod " + p + " failed");
    return p;
  }

 private:
  std::string path_;
};

}  // namespace ossmount::testing
