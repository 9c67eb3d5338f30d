#include "config/option_layers.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace ossmount::config {

std::string EnvironmentVariableFor(const std::string& name) {
  std::string var = "OSSMOUNT_";
  for (char c : name) {
    var += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return var;
}

std::string OptionNameFromKey(const std::string& key) {
  std::string name = key;
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

Result<std::vector<OptionSetting>> SettingsFromEnvironment(const std::vector<OptionInfo>& options,
                                                           const EnvironmentGetter& getenv_fn) {
  std::vector<OptionSetting> out;
  if (!getenv_fn) return out;  // no environment layer (ParseSources::getenv null = none)
  for (const OptionInfo& opt : options) {
    if (opt.positional) continue;
    std::string var = EnvironmentVariableFor(opt.name);
    const char* raw = getenv_fn(var.c_str());
    if (raw == nullptr || *raw == '\0') continue;
    OptionSetting s;
    s.name = opt.name;
    s.origin = var + " in the environment";
    if (opt.flag) {
      std::string v = raw;
      std::transform(v.begin(), v.end(), v.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (v == "1" || v == "true" || v == "yes" || v == "on") {
        s.flag_value = true;
      } else if (v == "0" || v == "false" || v == "no" || v == "off") {
        s.flag_value = false;
      } else {
        return Status(ErrorCode::kInvalidArgument,
                      var + "='" + raw + "': --" + opt.name +
                          " is a flag; set the variable to 1/true/yes/on or 0/false/no/off");
      }
    } else {
      s.value = raw;
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<OptionSetting> MergeLayers(const std::vector<std::string>& already_set,
                                       const std::vector<std::vector<OptionSetting>>& layers) {
  std::set<std::string> decided(already_set.begin(), already_set.end());
  std::vector<OptionSetting> out;
  for (const auto& layer : layers) {
    for (const OptionSetting& s : layer) {
      if (decided.insert(s.name).second) out.push_back(s);
    }
  }
  return out;
}

}  // namespace ossmount::config
