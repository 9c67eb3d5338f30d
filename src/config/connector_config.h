// The OSS Connector for AI/ML's config.json (/etc/oss-connector/config.json) read as an
// ossmount config file. Internal to src/config (it exposes RapidJSON types).
//
// Field -> option (docs/CONFIGURATION.md, "OSS Connector config.json"):
//   logLevel         0 debug, 1 info, 2 warn, 3 error (or the name) -> --log-level
//   logPath          directory (ends in '/' or exists as one) -> --log-file DIR/ossmount.log;
//                    otherwise the file itself -> --log-file
//   auditPath        same rule, DIR/audit.log -> --audit-log when the daemon has that
//                    option, else a warning
//   prefetchMB       -> --max-memory NMiB         prefetchUnitMB -> --prefetch-unit NMiB
//   prefetchConcurrency (top level or datasetConfig) -> --prefetch-concurrency
//   timeoutMs        -> --request-timeout Nms
// Fields that have no meaning for a read-only mount (prefetchWorker, checkpointConfig, ...)
// and unknown fields are ignored with one warning each; a field with a wrong type is an
// error naming the field and the file.
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <vector>

#include "config/config_file.h"

namespace ossmount::config {

// True when the top-level object has any of the connector's documented field names.
bool LooksLikeConnectorConfig(const rapidjson::Value& doc);

Result<ConfigFileSettings> MapConnectorConfig(const rapidjson::Value& doc, const std::string& path,
                                              const std::vector<OptionInfo>& options);

// The text of a string or integer JSON value ("" for anything else).
std::string JsonScalarText(const rapidjson::Value& v);

}  // namespace ossmount::config
