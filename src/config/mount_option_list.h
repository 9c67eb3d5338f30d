// fstab's -o lists: "-o a,b=c" (also "-oa,b=c") becomes "--a" "--b=c", the form mount.fuse3
// passes options in. Names may use '_' or '-'. Generic mount(8) options (rw, ro, dev, nodev,
// suid, nosuid, exec, noexec, atime, noatime, relatime, _netdev, nofail, auto, noauto, user,
// nouser, users, defaults, default_permissions, x-systemd.*, x-*, comment=...) are dropped;
// 'rw' adds a warning, the mount being read-only. Pure functions.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ossmount/status.h"

namespace ossmount::config {

enum class OptionKind { kUnknown, kFlag, kValue };

// What "--name" is on the parser (OptionSet::KindOf).
using OptionKindOf = std::function<OptionKind(const std::string& dashed_name)>;

// Expands every -o list in `args`, leaving other arguments as they are. A name that is no
// option, a flag given a value and an option given none are errors naming the -o item.
Result<std::vector<std::string>> ExpandMountOptions(const std::vector<std::string>& args,
                                                    const OptionKindOf& kind_of,
                                                    std::vector<std::string>* warnings);

}  // namespace ossmount::config
