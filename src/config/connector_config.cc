// MapConnectorConfig: the OSS Connector's fields onto ossmount's options.
#include "config/connector_config.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include "config/option_values.h"

namespace ossmount::config {
namespace {

constexpr std::array<std::string_view, 11> kConnectorFields = {
    "logLevel",     "logPath",        "auditPath", "datasetConfig",  "checkpointConfig",
    "prefetchMB",   "prefetchUnitMB", "timeoutMs", "prefetchWorker", "prefetchConcurrency",
    "expireTimeSec"};

bool HasOption(const std::vector<OptionInfo>& options, const std::string& name) {
  return std::any_of(options.begin(), options.end(),
                     [&](const OptionInfo& o) { return o.name == name && !o.positional; });
}

// A directory path (trailing '/', or an existing directory) -> DIR/file_name; else the path.
std::string FileInOrPath(const std::string& path, const char* file_name) {
  struct stat st {};
  bool is_dir = !path.empty() &&
                (path.back() == '/' || (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)));
  if (!is_dir) return path;
  std::string dir = path;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + "/" + file_name;
}

class Mapper {
 public:
  Mapper(const std::string& path, const std::vector<OptionInfo>& options)
      : path_(path), options_(options) {}

  // One field: `field` is its dotted name ("datasetConfig.prefetchConcurrency").
  Status Field(const std::string& field, const rapidjson::Value& v) {
    std::string leaf = field.substr(field.rfind('.') + 1);
    if (field == "logLevel") return LogLevel(field, v);
    if (field == "logPath" || field == "auditPath") {
      if (!v.IsString()) return WrongType(field, v, "a path string");
      bool audit = field == "auditPath";
      std::string option = audit ? "audit-log" : "log-file";
      if (!HasOption(options_, option)) {
        return NoMeaning(field, "this ossmount has no --" + option + " option");
      }
      Set(field, option, FileInOrPath(v.GetString(), audit ? "audit.log" : "ossmount.log"));
      return Status::Ok();
    }
    if (field == "prefetchMB") return Megabytes(field, v, "max-memory");
    if (field == "prefetchUnitMB") return Megabytes(field, v, "prefetch-unit");
    if (field == "prefetchConcurrency" || field == "datasetConfig.prefetchConcurrency") {
      if (!v.IsInt64() || v.GetInt64() < 1) return WrongType(field, v, "a positive integer");
      Set(field, "prefetch-concurrency", std::to_string(v.GetInt64()));
      return Status::Ok();
    }
    if (field == "timeoutMs") {
      if (!v.IsInt64() || v.GetInt64() < 0) return WrongType(field, v, "milliseconds (integer)");
      Set(field, "request-timeout", std::to_string(v.GetInt64()) + "ms");
      return Status::Ok();
    }
    if (field == "datasetConfig") {
      if (!v.IsObject()) return WrongType(field, v, "an object");
      for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
        Status st = Field(field + "." + it->name.GetString(), it->value);
        if (!st.ok()) return st;
      }
      return Status::Ok();
    }
    if (field == "checkpointConfig" || field.rfind("checkpointConfig.", 0) == 0) {
      return NoMeaning(field,
                       "checkpoints are written with --allow-writes, tuned with "
                       "--upload-concurrency and --upload-part-size");
    }
    if (leaf == "prefetchWorker") {
      return NoMeaning(field,
                       "ossmount has no prefetch worker processes; --io-threads sets its "
                       "worker threads");
    }
    if (field == "expireTimeSec") {
      return NoMeaning(field, "use --metadata-ttl for how long listings stay valid");
    }
    warnings_.push_back(path_ + ": field \"" + field +
                        "\" is not an OSS Connector field ossmount knows; ignored");
    return Status::Ok();
  }

  ConfigFileSettings Take() {
    ConfigFileSettings out;
    out.connector_format = true;
    // A field set twice (prefetchConcurrency at the top and in datasetConfig): the later,
    // more specific one wins.
    for (auto& s : settings_) {
      auto same = std::find_if(out.settings.begin(), out.settings.end(),
                               [&](const OptionSetting& o) { return o.name == s.name; });
      if (same != out.settings.end()) {
        *same = s;
      } else {
        out.settings.push_back(s);
      }
    }
    out.warnings = warnings_;
    return out;
  }

 private:
  Status LogLevel(const std::string& field, const rapidjson::Value& v) {
    static constexpr std::array<const char*, 4> kByNumber = {"debug", "info", "warn", "error"};
    std::string level;
    if (v.IsInt64() && v.GetInt64() >= 0 && v.GetInt64() < 4) {
      level = kByNumber[static_cast<size_t>(v.GetInt64())];
    } else if (v.IsString()) {
      level = v.GetString();
      std::transform(level.begin(), level.end(), level.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (level == "warning") level = "warn";
    } else {
      return WrongType(field, v, "0 (debug), 1 (info), 2 (warn) or 3 (error)");
    }
    Set(field, "log-level", level);
    return Status::Ok();
  }

  Status Megabytes(const std::string& field, const rapidjson::Value& v, const char* option) {
    if (!v.IsInt64() || v.GetInt64() < 1) return WrongType(field, v, "a positive integer of MB");
    Set(field, option, std::to_string(v.GetInt64()) + "MiB");
    return Status::Ok();
  }

  void Set(const std::string& field, const std::string& option, std::string value) {
    OptionSetting s;
    s.name = option;
    s.value = std::move(value);
    s.origin = "OSS Connector field \"" + field + "\" in " + path_;
    settings_.push_back(std::move(s));
  }

  Status WrongType(const std::string& field, const rapidjson::Value&, const std::string& want) {
    return InvalidOption("OSS Connector field \"" + field + "\" in " + path_ + ": must be " + want);
  }

  Status NoMeaning(const std::string& field, const std::string& why) {
    warnings_.push_back(path_ + ": OSS Connector field \"" + field +
                        "\" has no meaning for ossmount (" + why + "); ignored");
    return Status::Ok();
  }

  const std::string& path_;
  const std::vector<OptionInfo>& options_;
  std::vector<OptionSetting> settings_;
  std::vector<std::string> warnings_;
};

}  // namespace

bool LooksLikeConnectorConfig(const rapidjson::Value& doc) {
  if (!doc.IsObject()) return false;
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    std::string_view key(it->name.GetString(), it->name.GetStringLength());
    if (std::find(kConnectorFields.begin(), kConnectorFields.end(), key) !=
        kConnectorFields.end()) {
      return true;
    }
  }
  return false;
}

Result<ConfigFileSettings> MapConnectorConfig(const rapidjson::Value& doc, const std::string& path,
                                              const std::vector<OptionInfo>& options) {
  Mapper mapper(path, options);
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    std::string key(it->name.GetString(), it->name.GetStringLength());
    // A file mixing both vocabularies is most likely a mistake; say which key is ossmount's.
    if (HasOption(options, OptionNameFromKey(key)) || key == "source" || key == "mountpoint") {
      return InvalidOption(
          "key \"" + key + "\" in " + path +
          ": this file has OSS Connector fields (logLevel, prefetchMB, ...), so it is "
          "read as the connector's config.json, where \"" +
          key +
          "\" is not a field; put ossmount's own options in a separate file or on the "
          "command line");
    }
    Status st = mapper.Field(key, it->value);
    if (!st.ok()) return st;
  }
  return mapper.Take();
}

}  // namespace ossmount::config
