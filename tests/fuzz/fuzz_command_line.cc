// Fuzz target: the command line and fstab -o option parser (config::ParseCommandLine), which
// sees whatever /etc/fstab or a user's shell hands to the daemon.
//
// Input layout: NUL-separated arguments. Two runs per input: the arguments as given after a
// fixed "bucket /mnt" pair, and the whole input as one "-o" option list, which is how
// mount.fuse3 passes fstab options.
//
// Invariants: an error is kInvalidArgument with a message (the daemon exits 2 on it, so
// nothing else may escape); an accepted mount configuration has a bucket, a mount point, and
// at least one io thread.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config/mount_config.h"
#include "fuzz/fuzz_check.h"

using namespace ossmount;

namespace {

void Check(const std::vector<std::string>& args) {
  // No environment and no default config file: the input is the only source.
  auto parsed = config::ParseCommandLine(args, config::ParseSources{});
  if (!parsed.ok()) {
    FUZZ_CHECK(!parsed.status().message().empty());
    FUZZ_CHECK(parsed.status().code() == ErrorCode::kInvalidArgument);
    return;
  }
  if (parsed->command != config::Command::kMount) return;
  const config::MountConfig& c = parsed->config;
  FUZZ_CHECK(!c.client.bucket.empty());
  FUZZ_CHECK(!c.daemon.mountpoint.empty());
  FUZZ_CHECK(c.daemon.io_threads >= 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args = {"bucket", "/mnt"};
  size_t start = 0;
  while (start <= input.size() && args.size() < 64) {
    size_t end = input.find('\0', start);
    if (end == std::string::npos) end = input.size();
    args.push_back(input.substr(start, end - start));
    start = end + 1;
  }
  Check(args);
  // Everything as a single -o list, as mount.fuse3 passes fstab options.
  std::string options = input;
  for (char& ch : options) {
    if (ch == '\0') ch = ',';
  }
  Check({"bucket", "/mnt", "-o", options});
  // And with the positional arguments from the input too (no fixed bucket).
  std::vector<std::string> free(args.begin() + 2, args.end());
  Check(free);
  return 0;
}
