// Config files: a JSON object of option settings (keys: long option names with '_' or '-',
// plus "source" and "mountpoint"), or the OSS Connector's config.json (connector_config.h),
// turned into option settings for the command line's validation. Key rules, types and
// errors: docs/CONFIGURATION.md, "The config file". Errors name the key and the file; a
// file over kMaxConfigFileBytes or nested deeper than 32 levels is refused.
//
// Thread-safety: pure functions (LoadConfigFile reads the file and stats log directories).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "config/option_layers.h"
#include "ossmount/status.h"

namespace ossmount::config {

// Real config files are a few hundred bytes; this only stops a wrong or hostile file.
inline constexpr size_t kMaxConfigFileBytes = 1u << 20;

struct ConfigFileSettings {
  std::vector<OptionSetting> settings;
  std::vector<std::string> warnings;  // e.g. connector fields with no meaning here
  bool connector_format = false;      // the file was read as the OSS Connector's
};

// Parses `text` (the contents of `path`; `path` is only used in messages). `options` is the
// parser's option table (with the positionals). Errors are kInvalidArgument.
Result<ConfigFileSettings> ParseConfigText(std::string_view text, const std::string& path,
                                           const std::vector<OptionInfo>& options);

// Reads and parses `path`. A missing or unreadable file is an error naming it.
Result<ConfigFileSettings> LoadConfigFile(const std::string& path,
                                          const std::vector<OptionInfo>& options);

}  // namespace ossmount::config
