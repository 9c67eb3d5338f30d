#include "config/option_set.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "config/option_values.h"

namespace ossmount::config {

void OptionDefiner::Value(const std::string& names, std::string& text, const std::string& help) {
  CLI::Option* opt = app_.add_option(names, text, help);
  if (!heading_.empty()) opt->group(heading_);
}

void OptionDefiner::Flag(const std::string& names, bool& set, const std::string& help) {
  CLI::Option* opt = app_.add_flag(names, set, help);
  if (!heading_.empty()) opt->group(heading_);
  flags_.push_back(opt);
}

bool OptionDefiner::IsFlag(const CLI::Option* option) const {
  return std::find(flags_.begin(), flags_.end(), option) != flags_.end();
}

OptionSet::OptionSet(CLI::App& app) : app_(app), definer_(app) {
  app.set_help_flag("-h,--help", "Print this help and exit");
  definer_.Flag("-V,--version", general_.version, "Print the version and exit");
  definer_.Value("--config", general_.config_file,
                 "JSON config file of options (default /etc/ossmount/config.json if it "
                 "exists); also the OSS Connector's config.json");
  definer_.Value("source", general_.source,
                 "BUCKET[:/PREFIX], oss://BUCKET/PREFIX/ or s3://BUCKET/PREFIX/");
  definer_.Value("mountpoint", general_.mountpoint, "Existing empty directory to mount on");

  groups_.push_back(MakeConnectionGroup());
  groups_.push_back(MakeCredentialsGroup());
  groups_.push_back(MakeFilesystemGroup());
  groups_.push_back(MakeDataPathGroup());
  groups_.push_back(MakePrefetchGroup());
  groups_.push_back(MakeWritesGroup());
  groups_.push_back(MakeMountGroup());
  groups_.push_back(MakeDaemonGroup());
  for (auto& group : groups_) group->Define(definer_);
}

OptionSet::~OptionSet() = default;

std::vector<OptionInfo> OptionSet::Table() const {
  std::vector<OptionInfo> table;
  for (const CLI::Option* opt : app_.get_options()) {
    if (opt->get_positional()) {
      table.push_back({opt->get_name(), false, true});
      continue;
    }
    if (opt->get_lnames().empty()) continue;
    const std::string& name = opt->get_lnames().front();
    if (name == "help" || name == "version" || name == "config") continue;
    table.push_back({name, definer_.IsFlag(opt), false});
  }
  return table;
}

OptionKind OptionSet::KindOf(const std::string& dashed_name) const {
  const CLI::Option* opt = app_.get_option_no_throw(dashed_name);
  if (opt == nullptr || opt->get_positional() || dashed_name == "--help" ||
      dashed_name == "--version") {
    return OptionKind::kUnknown;
  }
  return definer_.IsFlag(opt) ? OptionKind::kFlag : OptionKind::kValue;
}

Status OptionSet::Validate(MountConfig& config) const {
  if (general_.source.empty() || general_.mountpoint.empty()) {
    return InvalidOption(
        "missing arguments: usage is ossmount BUCKET[:/PREFIX] MOUNTPOINT [options] "
        "(see --help)");
  }
  auto source = ParseMountSource(general_.source);
  if (!source.ok()) return source.status();
  config.daemon.source = general_.source;
  config.daemon.mountpoint = general_.mountpoint;
  config.client.bucket = source->bucket;
  config.fs.prefix = source->prefix;

  OptionContext ctx;
  ctx.given = [this](const std::string& option) { return app_.count(option) > 0; };
  ctx.source = *source;
  ctx.source_text = general_.source;
  for (const auto& group : groups_) {
    Status st = group->Validate(ctx, config);
    if (!st.ok()) return st;
  }
  return CheckAcrossGroups(ctx, config);
}

}  // namespace ossmount::config
