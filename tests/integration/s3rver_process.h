// S3rverProcess: runs the s3rver Node.js S3 server (tests/s3rver) on a free loopback port
// with a fresh data directory, path-style only, with the given buckets created at start.
// The destructor stops it (SIGTERM, then SIGKILL) and removes the directory.
//
// When node or s3rver is not installed, Available() says why, and tests skip (exit code 77,
// which ctest reports as skipped); any other failure to start fails the test.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ossmount::itest {

class S3rverProcess {
 public:
  // "" when node and s3rver are present, else the reason they are not usable.
  static std::string Unavailable();
  // Prints the reason and exits with 77 when s3rver is unavailable.
  static void SkipIfUnavailable();

  explicit S3rverProcess(const std::vector<std::string>& buckets);
  ~S3rverProcess();
  S3rverProcess(const S3rverProcess&) = delete;
  S3rverProcess& operator=(const S3rverProcess&) = delete;

  bool started() const { return port_ > 0; }
  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  pid_t pid_ = -1;
  int port_ = -1;
  std::string dir_;
};

}  // namespace ossmount::itest
