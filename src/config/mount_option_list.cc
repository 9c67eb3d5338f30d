#include "config/mount_option_list.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "config/option_values.h"

namespace ossmount::config {
namespace {

bool IsIgnoredMountOption(const std::string& name) {
  static constexpr std::array<std::string_view, 21> kIgnored = {
      "rw",       "ro",      "dev",    "nodev",    "suid",
      "nosuid",   "exec",    "noexec", "atime",    "noatime",
      "relatime", "_netdev", "nofail", "auto",     "noauto",
      "user",     "nouser",  "users",  "defaults", "default_permissions",
      "comment"};
  if (name.rfind("x-systemd.", 0) == 0 || name.rfind("x-", 0) == 0) return true;
  return std::find(kIgnored.begin(), kIgnored.end(), name) != kIgnored.end();
}

}  // namespace

Result<std::vector<std::string>> ExpandMountOptions(const std::vector<std::string>& args,
                                                    const OptionKindOf& kind_of,
                                                    std::vector<std::string>* warnings) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string list;
    if (a == "-o") {
      if (i + 1 >= args.size())
        return InvalidOption("-o: missing the option list (-o opt1,opt2=value)");
      list = args[++i];
    } else if (a.size() > 2 && a.rfind("-o", 0) == 0) {
      list = a.substr(2);
    } else {
      out.push_back(a);
      continue;
    }
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      std::string item = list.substr(start, comma - start);
      start = comma + 1;
      if (item.empty()) continue;
      size_t eq = item.find('=');
      std::string name = item.substr(0, eq);
      if (IsIgnoredMountOption(name)) {
        if (name == "rw") {
          warnings->push_back("-o rw ignored: a mount is read-only unless allow_writes is given");
        }
        continue;
      }
      std::string flag = name;
      std::replace(flag.begin(), flag.end(), '_', '-');
      flag = "--" + flag;
      OptionKind kind = kind_of(flag);
      if (kind == OptionKind::kUnknown) {
        return InvalidOption("-o " + name + ": unknown option (see ossmount --help)");
      }
      if (eq == std::string::npos) {
        if (kind != OptionKind::kFlag) {
          return InvalidOption("-o " + name + ": needs a value (" + name + "=VALUE)");
        }
        out.push_back(flag);
      } else {
        if (kind == OptionKind::kFlag) {
          return InvalidOption("-o " + name + ": takes no value");
        }
        out.push_back(flag + "=" + item.substr(eq + 1));
      }
    }
  }
  return out;
}

}  // namespace ossmount::config
