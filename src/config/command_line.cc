// ParseCommandLine: the command line (with -o lists expanded) is parsed once alone, to
// learn what it sets and which config file it names; the environment and config-file
// layers then add what it left unset, and the merged line is parsed again and validated
// (OptionSet), so every value goes through the same checks wherever it came from.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "config/config_file.h"
#include "config/mount_config.h"
#include "config/mount_option_list.h"
#include "config/option_layers.h"
#include "config/option_set.h"
#include "config/option_values.h"

namespace ossmount::config {

const char* const kDefaultConfigPath = "/etc/ossmount/config.json";

namespace {

const char* const kDescription =
    "ossmount: mount an Alibaba Cloud OSS bucket (or an S3 bucket) as a POSIX tree, read-only "
    "unless --allow-writes is given";

// An error about an option whose value came from a layer says where: the message's first
// "--option" that a layer set gets " (from <origin>)" appended.
std::string WithOrigin(const std::string& message, const std::vector<OptionSetting>& layered) {
  size_t best = std::string::npos;
  const OptionSetting* origin = nullptr;
  for (const OptionSetting& s : layered) {
    std::string needle =
        s.name == "source" || s.name == "mountpoint" ? "'" + s.value + "'" : "--" + s.name;
    for (size_t at = message.find(needle); at != std::string::npos;
         at = message.find(needle, at + 1)) {
      size_t end = at + needle.size();
      bool boundary =
          end >= message.size() ||
          !(std::isalnum(static_cast<unsigned char>(message[end])) || message[end] == '-');
      if (boundary) {
        if (at < best) {
          best = at;
          origin = &s;
        }
        break;
      }
    }
  }
  if (origin == nullptr) return message;
  return message + " (from " + origin->origin + ")";
}

// The config file to read: --config (which must then name one), else $OSSMOUNT_CONFIG,
// else the default path if it exists; "" = none.
Result<std::string> ConfigFilePath(const CLI::App& app, const GeneralOptions& general,
                                   const ParseSources& sources) {
  std::string path = general.config_file;
  if (app.count("--config") > 0 && path.empty()) return InvalidOption("--config: is empty");
  if (path.empty() && sources.getenv) {
    const char* from_env = sources.getenv("OSSMOUNT_CONFIG");
    if (from_env != nullptr) path = from_env;
  }
  if (path.empty() && !sources.default_config_path.empty() &&
      access(sources.default_config_path.c_str(), F_OK) == 0) {
    path = sources.default_config_path;
  }
  return path;
}

// The command line plus what the layers set, as arguments: options first, then the
// positionals, which fill in order (a file's mountpoint can follow a command-line source).
std::vector<std::string> MergedArguments(std::vector<std::string> args,
                                         const std::vector<OptionInfo>& table,
                                         const std::vector<OptionSetting>& layered) {
  for (const OptionSetting& s : layered) {
    const OptionInfo& info = *std::find_if(table.begin(), table.end(),
                                           [&](const OptionInfo& o) { return o.name == s.name; });
    if (info.positional) continue;
    if (info.flag) {
      if (s.flag_value) args.push_back("--" + s.name);
    } else {
      args.push_back("--" + s.name + "=" + s.value);
    }
  }
  std::vector<std::string> positionals;
  for (const char* name : {"source", "mountpoint"}) {
    for (const OptionSetting& s : layered) {
      if (s.name == name) positionals.push_back(s.value);
    }
  }
  if (!positionals.empty()) {
    if (std::find(args.begin(), args.end(), "--") == args.end()) args.push_back("--");
    args.insert(args.end(), positionals.begin(), positionals.end());
  }
  return args;
}

// CLI11 takes the arguments in reverse.
void ParseArguments(CLI::App& app, const std::vector<std::string>& args) {
  app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
}

}  // namespace

std::string UsageText() {
  CLI::App app{kDescription, "ossmount"};
  OptionSet options(app);
  app.footer(
      "Forms:\n"
      "  ossmount BUCKET[:/PREFIX] MOUNTPOINT [options]\n"
      "  ossmount oss://BUCKET/PREFIX/ MOUNTPOINT [options]\n"
      "  ossmount s3://BUCKET/PREFIX/ MOUNTPOINT [options]\n"
      "  ossmount BUCKET MOUNTPOINT -o metadata_ttl=indefinite,allow_other   (fstab)\n"
      "Credentials: OSS_ACCESS_KEY_ID/OSS_ACCESS_KEY_SECRET[/OSS_SESSION_TOKEN],\n"
      "  ALIBABA_CLOUD_ACCESS_KEY_ID/..., AWS_ACCESS_KEY_ID/... (S3 mode), --credentials-file,\n"
      "  --passwd-file, or --ram-role. Secrets are never accepted on the command line.\n"
      "The mount is read-only unless --allow-writes is given. chmod, chown, utime and touch -d\n"
      "  succeed without effect (every file shows --file-mode and --uid/--gid) unless\n"
      "  --posix-metadata stores them with each object.");
  return app.help();
}

std::vector<OptionInfo> CommandLineOptions() {
  CLI::App app{"ossmount", "ossmount"};
  return OptionSet(app).Table();
}

Result<ParsedCommandLine> ParseCommandLine(const std::vector<std::string>& args) {
  ParseSources sources;
  sources.getenv = [](const char* name) -> const char* { return std::getenv(name); };
  sources.default_config_path = kDefaultConfigPath;
  return ParseCommandLine(args, sources);
}

Result<ParsedCommandLine> ParseCommandLine(const std::vector<std::string>& args,
                                           const ParseSources& sources) {
  ParsedCommandLine parsed;
  // Pass 1: the command line alone.
  CLI::App app{kDescription, "ossmount"};
  OptionSet options(app);
  auto expanded = ExpandMountOptions(
      args, [&](const std::string& name) { return options.KindOf(name); }, &parsed.config.warnings);
  if (!expanded.ok()) return expanded.status();
  try {
    ParseArguments(app, *expanded);
  } catch (const CLI::CallForHelp&) {
    parsed.command = Command::kHelp;
    parsed.text = UsageText();
    return parsed;
  } catch (const CLI::ParseError& e) {
    return InvalidOption(e.what());
  }
  if (options.general().version) {
    parsed.command = Command::kVersion;
    parsed.text = std::string("ossmount ") + OSSMOUNT_VERSION;
    return parsed;
  }

  // The other layers, highest precedence first: environment, then the config file.
  std::vector<OptionInfo> table = options.Table();
  std::vector<std::string> on_command_line;
  for (const OptionInfo& o : table) {
    const GeneralOptions& general = options.general();
    bool set = o.positional ? !(o.name == "source" ? general.source : general.mountpoint).empty()
                            : app.count("--" + o.name) > 0;
    if (set) on_command_line.push_back(o.name);
  }
  auto env = SettingsFromEnvironment(table, sources.getenv);
  if (!env.ok()) return env.status();
  auto config_path = ConfigFilePath(app, options.general(), sources);
  if (!config_path.ok()) return config_path.status();
  std::vector<OptionSetting> from_file;
  if (!config_path->empty()) {
    auto file = LoadConfigFile(*config_path, table);
    if (!file.ok()) return file.status();
    from_file = std::move(file->settings);
    for (auto& w : file->warnings) parsed.config.warnings.push_back(std::move(w));
    parsed.config_file = *config_path;
  }
  std::vector<OptionSetting> layered = MergeLayers(on_command_line, {*env, from_file});

  // Pass 2: the command line plus what the layers add, through the same parser and checks.
  CLI::App final_app{"ossmount", "ossmount"};
  OptionSet final_options(final_app);
  Status st = Status::Ok();
  try {
    ParseArguments(final_app, MergedArguments(*expanded, table, layered));
  } catch (const CLI::ParseError& e) {
    st = InvalidOption(e.what());
  }
  if (st.ok()) st = final_options.Validate(parsed.config);
  if (!st.ok()) return InvalidOption(WithOrigin(st.message(), layered));
  return parsed;
}

}  // namespace ossmount::config
