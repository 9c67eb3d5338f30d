// The Filesystem implementation over an ObjectClient: a read-only POSIX view of a bucket
// (or of a prefix of it). See docs/SEMANTICS.md for what users observe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "fs/filesystem.h"
#include "ossmount/object_client.h"

namespace boost::asio {
class io_context;
}

namespace ossmount::fs {

struct FsOptions {
  // Key prefix mounted as the root, "" or ending in '/': "imagenet/".
  std::string prefix;
  // How long listings, attributes and positive lookups stay valid. nullopt = indefinite
  // (never revalidated; the kernel is told to cache too). Zero = always ask the server.
  std::optional<std::chrono::milliseconds> metadata_ttl = std::chrono::seconds(60);
  // How long "no such name" stays cached.
  std::chrono::milliseconds negative_ttl = std::chrono::seconds(5);
  // Objects at or below this size are fetched whole with one GET on first read.
  uint64_t small_file_threshold = 8ull << 20;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t file_mode = 0444;  // permission bits only
  uint32_t dir_mode = 0555;
  // The steady clock TTLs are measured with; empty = std::chrono::steady_clock::now. Tests
  // inject a controllable clock so expiry needs no sleeping.
  std::function<std::chrono::steady_clock::time_point()> clock;
};

// `io` runs the filesystem's work and the client's completions. The prefix is normalised
// (a missing trailing '/' is added). Operations in flight hold a reference, so the filesystem
// outlives them even if the caller drops its pointer.
std::shared_ptr<Filesystem> MakeObjectFilesystem(boost::asio::io_context& io,
                                                 std::shared_ptr<ObjectClient> client,
                                                 FsOptions options);

}  // namespace ossmount::fs
