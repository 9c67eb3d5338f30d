// The OSS Connector for AI/ML's config.json (/etc/oss-connector/config.json) read as an
// ossmount config file: each field mapped onto an ossmount option (docs/CONFIGURATION.md,
// "OSS Connector config.json"); a field with no meaning here is one warning, a field of the
// wrong type an error naming it and the file. Internal to src/config (it exposes RapidJSON
// types).
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
