// ParseConfigText: RapidJSON DOM -> option settings. The OSS Connector's shape is handed to
// connector_config.cc; everything else must be ossmount's own keys.
#include "config/config_file.h"

#include <rapidjson/document.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>

#include "common/bounded_json.h"
#include "config/connector_config.h"
#include "config/option_values.h"

namespace ossmount::config {
namespace {

const char* TypeName(const rapidjson::Value& v) {
  if (v.IsNull()) return "null";
  if (v.IsBool()) return "a boolean";
  if (v.IsNumber()) return "a number";
  if (v.IsString()) return "a string";
  if (v.IsArray()) return "an array";
  return "an object";
}

}  // namespace

std::string JsonScalarText(const rapidjson::Value& v) {
  if (v.IsString()) return std::string(v.GetString(), v.GetStringLength());
  if (v.IsInt64()) return std::to_string(v.GetInt64());
  if (v.IsUint64()) return std::to_string(v.GetUint64());
  return "";
}

Result<ConfigFileSettings> ParseConfigText(std::string_view text, const std::string& path,
                                           const std::vector<OptionInfo>& options) {
  rapidjson::Document doc;
  Status parsed =
      ParseBoundedJson(text, {kMaxConfigFileBytes}, &doc,
                       rapidjson::kParseCommentsFlag | rapidjson::kParseTrailingCommasFlag);
  if (!parsed.ok()) return InvalidOption(path + ": " + parsed.message());
  if (!doc.IsObject()) {
    return InvalidOption(path +
                         ": the config file must be a JSON object ({\"key\": value, ...}), not " +
                         TypeName(doc));
  }
  if (LooksLikeConnectorConfig(doc)) return MapConnectorConfig(doc, path, options);

  std::map<std::string, const OptionInfo*> by_name;
  for (const OptionInfo& o : options) by_name[o.name] = &o;
  std::map<std::string, std::string> key_of_option;  // detects metadata_ttl + metadata-ttl
  ConfigFileSettings out;
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    std::string key(it->name.GetString(), it->name.GetStringLength());
    const rapidjson::Value& v = it->value;
    std::string where = "key \"" + key + "\" in " + path;
    std::string name = OptionNameFromKey(key);
    if (name == "config" || name == "help" || name == "version") {
      return InvalidOption(where + ": not allowed in a config file");
    }
    auto found = by_name.find(name);
    if (found == by_name.end()) {
      return InvalidOption(where +
                           ": unknown key; keys are ossmount's long option names with '_' or "
                           "'-' (e.g. metadata_ttl), plus source and mountpoint (see "
                           "docs/CONFIGURATION.md)");
    }
    auto [prev, inserted] = key_of_option.emplace(name, key);
    if (!inserted) {
      return InvalidOption(where + ": the option is already set by key \"" + prev->second +
                           "\"; keep one of them");
    }
    const OptionInfo& opt = *found->second;
    OptionSetting s;
    s.name = opt.name;
    s.origin = where;
    if (opt.flag) {
      if (!v.IsBool()) {
        return InvalidOption(where + ": must be true or false (--" + opt.name +
                             " is a flag), not " + TypeName(v));
      }
      s.flag_value = v.GetBool();
    } else if (v.IsString() || v.IsInt64() || v.IsUint64()) {
      s.value = JsonScalarText(v);
    } else if (v.IsNumber()) {
      return InvalidOption(where +
                           ": must be a string or a whole number, not a fraction (write e.g. " +
                           "\"1536MiB\" instead of 1.5GiB)");
    } else {
      return InvalidOption(where + ": must be a string or a number, not " + TypeName(v));
    }
    out.settings.push_back(std::move(s));
  }
  return out;
}

Result<ConfigFileSettings> LoadConfigFile(const std::string& path,
                                          const std::vector<OptionInfo>& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return InvalidOption("config file " + path + ": cannot be read (" + std::strerror(errno) + ")");
  }
  // Read one byte past the limit, no more: a huge file (or /dev/zero) is refused without
  // holding it in memory.
  std::string text(kMaxConfigFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return InvalidOption("config file " + path + ": read error");
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxConfigFileBytes) {
    in.clear();
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();  // -1 for a pipe
    return InvalidOption(
        "config file " + path + ": " +
        (size > 0 ? std::to_string(size) : "more than " + std::to_string(kMaxConfigFileBytes)) +
        " bytes, over the " + std::to_string(kMaxConfigFileBytes) +
        "-byte limit (a config file holds a few options: is this the right file?)");
  }
  return ParseConfigText(text, path, options);
}

}  // namespace ossmount::config
