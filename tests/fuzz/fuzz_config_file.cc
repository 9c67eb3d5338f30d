// Fuzz target: JSON config files (config::ParseConfigText), ossmount's own format and the OSS
// Connector's config.json, which is read from /etc at every start.
//
// Invariants: an error is kInvalidArgument with a message; every setting a parsed file
// yields names an option of the command-line table (so it goes through the command line's
// validation) and says where it came from; a flag setting carries no value text.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/config_file.h"
#include "config/mount_config.h"
#include "fuzz/fuzz_check.h"

using namespace ossmount;
using namespace ossmount::config;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<OptionInfo> kOptions = CommandLineOptions();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseConfigText(text, "/fuzz/config.json", kOptions);
  if (!parsed.ok()) {
    FUZZ_CHECK(parsed.status().code() == ErrorCode::kInvalidArgument);
    FUZZ_CHECK(!parsed.status().message().empty());
    return 0;
  }
  std::set<std::string> seen;
  for (const OptionSetting& s : parsed->settings) {
    const OptionInfo* info = nullptr;
    for (const OptionInfo& o : kOptions) {
      if (o.name == s.name) info = &o;
    }
    FUZZ_CHECK(info != nullptr);
    FUZZ_CHECK(!s.origin.empty());
    if (info->flag) FUZZ_CHECK(s.value.empty());
    seen.insert(s.name);
  }
  return 0;
}
