// Option layers: option texts from the environment (OSSMOUNT_<OPTION>), and the merge of
// layers by precedence: command line > environment > config file > defaults. A layer reads
// the parser's option table (OptionInfo), never individual options, and yields texts that
// then get the command line's own validation.
//
// Thread-safety: pure functions (the environment is read through the getter passed in).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ossmount/status.h"

namespace ossmount::config {

// One option of the command line, as the layers see it.
struct OptionInfo {
  std::string name;         // long name without dashes: "metadata-ttl"; or "source"/"mountpoint"
  bool flag = false;        // takes no value (--allow-other)
  bool positional = false;  // "source" or "mountpoint"
};

// One value for one option, with where it came from (for error messages).
struct OptionSetting {
  std::string name;         // OptionInfo::name
  std::string value;        // the option's text (non-flags)
  bool flag_value = false;  // flags: set (true) or explicitly unset (false)
  std::string origin;       // "OSSMOUNT_METADATA_TTL in the environment", "key ... in FILE"
};

// The environment variable that sets option `name`: OSSMOUNT_ + upper case, '-' -> '_'
// ("metadata-ttl" -> "OSSMOUNT_METADATA_TTL").
std::string EnvironmentVariableFor(const std::string& name);

using EnvironmentGetter = std::function<const char*(const char*)>;

// Reads OSSMOUNT_<OPTION> for every named (non-positional) option in `options`. Empty values
// count as unset. Flags take 1/true/yes/on or 0/false/no/off (case-insensitive); anything
// else is an error naming the variable. Never consulted for secrets: no option carries one
// (credentials come from the credential sources, docs/CONFIGURATION.md).
Result<std::vector<OptionSetting>> SettingsFromEnvironment(const std::vector<OptionInfo>& options,
                                                           const EnvironmentGetter& getenv_fn);

// Normalises a config-file key or -o name to an option name: '_' -> '-'.
std::string OptionNameFromKey(const std::string& key);

// Merges layers, highest precedence first. `already_set` are the options the command line
// gave (they win over every layer). Returns, per option, the first layer's setting; an
// option named twice in one layer keeps the first.
std::vector<OptionSetting> MergeLayers(const std::vector<std::string>& already_set,
                                       const std::vector<std::vector<OptionSetting>>& layers);

}  // namespace ossmount::config
