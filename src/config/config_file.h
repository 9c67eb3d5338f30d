// Config files: a JSON object whose keys are ossmount's long option names, turned into
// option settings (option_layers.h) that then go through the command line's validation.
//
//   {"source": "my-bucket:/imagenet", "mountpoint": "/mnt/dataset",
//    "endpoint": "oss-cn-beijing-internal.aliyuncs.com", "metadata_ttl": "indefinite",
//    "max_memory": "4GiB", "prefetch_concurrency": 128, "allow_other": true}
//
// Keys: an option's long name with '_' or '-' ("metadata_ttl" or "metadata-ttl"), plus
// "source" and "mountpoint" for the two positional arguments. Values: a string or an
// integer for an option that takes a value (the integer is its decimal text), true/false for
// a flag. Unknown keys, wrong types, a key given twice (also as metadata_ttl and
// metadata-ttl), and "config"/"help"/"version" are errors that name the key and the file.
//
// The same loader accepts the OSS Connector for AI/ML's /etc/oss-connector/config.json
// (camelCase keys such as logLevel, logPath, auditPath, prefetchMB, prefetchUnitMB,
// timeoutMs, datasetConfig.prefetchConcurrency): a file with any of those keys is read as
// the connector's and each field is mapped onto the closest ossmount option (see
// docs/CONFIGURATION.md, "OSS Connector config.json"); fields with no meaning here become
// one warning each.
//
// Limits: a file over kMaxConfigFileBytes, or nested deeper than kDefaultMaxJsonDepth (32)
// levels, is an error naming the file and the limit (common/bounded_json.h).
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
