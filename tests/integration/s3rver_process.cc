#include "s3rver_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "client_rig.h"

namespace ossmount::itest {
namespace {

std::string NodeBinary() { return OSSMOUNT_NODE_BIN; }
std::string S3rverScript() {
  return std::string(OSSMOUNT_SOURCE_DIR) + "/tests/s3rver/node_modules/s3rver/bin/s3rver.js";
}

}  // namespace

std::string S3rverProcess::Unavailable() {
  std::string node = NodeBinary();
  if (node.empty() || node.find("NOTFOUND") != std::string::npos ||
      ::access(node.c_str(), X_OK) != 0) {
    return "node is not installed (found at configure time: '" + node + "')";
  }
  if (::access(S3rverScript().c_str(), R_OK) != 0) {
    return "s3rver is not installed at " + S3rverScript() + " (npm install in tests/s3rver)";
  }
  return "";
}

void S3rverProcess::SkipIfUnavailable() {
  std::string why = Unavailable();
  if (why.empty()) return;
  std::fprintf(stderr, "SKIPPED: s3rver integration tests need node and s3rver: %s\n", why.c_str());
  std::fflush(stderr);
  std::_Exit(77);
}

S3rverProcess::S3rverProcess(const std::vector<std::string>& buckets) {
  dir_ = MakeTempDir("ossmount-s3rver");
  int port = FreePort();
  if (dir_.empty() || port <= 0) return;
  std::vector<std::string> args = {NodeBinary(),
                                   "--openssl-legacy-provider",
                                   S3rverScript(),
                                   "-d",
                                   dir_,
                                   "-a",
                                   "127.0.0.1",
                                   "-p",
                                   std::to_string(port),
                                   "--no-vhost-buckets",
                                   "-s"};
  for (const auto& b : buckets) {
    args.push_back("--configure-bucket");
    args.push_back(b);
  }
  pid_ = ::fork();
  if (pid_ == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::_Exit(127);
  }
  if (pid_ < 0) return;
  if (WaitForPort(port, 60)) port_ = port;
}

S3rverProcess::~S3rverProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int status = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

}  // namespace ossmount::itest
