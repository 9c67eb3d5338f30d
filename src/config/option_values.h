// Parsers for the value syntaxes of ossmount's options: sizes, durations, TTLs, octal
// modes, integers, mount sources. Pure functions; every error message names the option
// (passed in as `option`, e.g. "--metadata-ttl") and the rejected text, and says what is
// accepted instead.
//
// Thread-safety: stateless, callable from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ossmount/client_options.h"
#include "ossmount/status.h"

namespace ossmount::config {

// The status of a rejected option, configuration field or configuration file:
// kInvalidArgument with `message`, which names what was rejected and says what to use.
Status InvalidOption(std::string message);

// "8MiB", "8M", "8m", "8388608", "512K", "1GiB", "100B". K/M/G and KiB/MiB/GiB are all
// binary (1024-based), as file sizes usually are. No fractions, no negative values.
Result<uint64_t> ParseSize(std::string_view option, std::string_view text);
// A size as ParseSize takes it back, in the largest binary unit that divides it: "8MiB".
std::string SizeText(uint64_t bytes);

// A size (as ParseSize takes it) or a percentage: "2GiB", "0", "5%", "0.5%" (at most two
// decimals, below 100%). Exactly one of the two is non-zero, or neither ("0", "0%").
struct SizeOrShare {
  uint64_t bytes = 0;
  double fraction = 0;  // "5%" -> 0.05
};
Result<SizeOrShare> ParseSizeOrPercent(std::string_view option, std::string_view text);

// A metadata TTL: "indefinite" (also "inf", "infinite", "forever": never revalidate) ->
// nullopt; otherwise a duration (see ParseDuration), "0" meaning "always ask".
Result<std::optional<std::chrono::milliseconds>> ParseTtl(std::string_view option,
                                                          std::string_view text);

// A non-negative duration: plain number = seconds ("60"), or with a unit suffix
// "500ms", "30s", "5m", "2h". Integers only.
Result<std::chrono::milliseconds> ParseDuration(std::string_view option, std::string_view text);

// Permission bits in octal: "0444", "444", "0o755". At most 0777 (no setuid/sticky bits).
Result<uint32_t> ParseOctalMode(std::string_view option, std::string_view text);

// A decimal integer within [min, max].
Result<int64_t> ParseInteger(std::string_view option, std::string_view text, int64_t min,
                             int64_t max);

// An endpoint: "host", "host:port", "http://host:port", "https://host/" (trailing slashes
// dropped, the scheme kept). Other schemes, and a '/', '?', '#', '@' or space after the
// host, are errors.
Result<std::string> ParseEndpoint(std::string_view option, std::string_view text);

// What the first positional argument names.
struct MountSource {
  std::string bucket;
  std::string prefix;  // "" or "a/b/" (no leading '/', one trailing '/')
  // Set when the source was a URL: oss://... -> kOss, s3://... -> kS3.
  std::optional<Protocol> url_protocol;
};

// "bucket", "bucket:/prefix", "bucket:prefix/", "oss://bucket/prefix/", "s3://bucket".
// Prefix components may not be empty ('a//b'), '.' or '..'.
Result<MountSource> ParseMountSource(std::string_view text);

// The signing region implied by a well-known Alibaba Cloud endpoint, or "" when the
// endpoint is not one: "oss-cn-beijing-internal.aliyuncs.com" -> "cn-beijing",
// "https://s3.oss-cn-hangzhou.aliyuncs.com" -> "cn-hangzhou",
// "cn-beijing-internal.oss-data-acc.aliyuncs.com" -> "cn-beijing".
std::string RegionFromEndpoint(std::string_view endpoint);

}  // namespace ossmount::config
