// Option groups: the options of one concern (connection, credentials, ...), each group
// defined and validated in one file, options_<group>.cc. A group owns the raw texts the
// parser writes into; Validate turns them into its MountConfig fields, every error naming
// its option. Checks between groups are CheckAcrossGroups (cross_checks.cc), run after all
// groups. Internal to src/config.
//
// Thread-safety: a group is used by one parse on one thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config/mount_config.h"
#include "config/option_values.h"
#include "ossmount/status.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace ossmount::config {

// The headings of --help, shared by the groups that list options under them.
inline constexpr const char* kConnectionHeading = "Connection";
inline constexpr const char* kCredentialsHeading =
    "Credentials (the key pair comes from the environment or a file, never argv)";
inline constexpr const char* kFilesystemHeading = "Filesystem";
inline constexpr const char* kDataPathHeading = "Data path";
inline constexpr const char* kMountHeading = "Mount and daemon";
inline constexpr const char* kWritesHeading = "Writing (checkpoints)";

// Defines options on the parser, under the current --help heading, and remembers which take
// no value (-o lists and the other layers need to know). Options are listed in --help in the
// order they are defined. Implemented in option_set.cc.
class OptionDefiner {
 public:
  explicit OptionDefiner(CLI::App& app) : app_(app) {}

  // Options defined from now on are listed under `heading` ("" = CLI11's "Options").
  void SetHeading(std::string heading) { heading_ = std::move(heading); }
  // An option taking a value: "--endpoint". `text` keeps its value when not given.
  void Value(const std::string& names, std::string& text, const std::string& help);
  // A flag: "--path-style", "-f,--foreground".
  void Flag(const std::string& names, bool& set, const std::string& help);

  bool IsFlag(const CLI::Option* option) const;

 private:
  CLI::App& app_;
  std::string heading_;
  std::vector<const CLI::Option*> flags_;
};

// What a group's validation may read besides its own texts.
struct OptionContext {
  // Whether the command line, with what the layers added, set `option` ("--uid"): some
  // values keep their default unless given, and some checks apply only to given values.
  std::function<bool(const std::string& option)> given;
  MountSource source;       // the positional source, parsed
  std::string source_text;  // ... and as written, for messages
};

class OptionGroup {
 public:
  virtual ~OptionGroup() = default;
  // Defines the group's options, bound to its texts.
  virtual void Define(OptionDefiner& d) = 0;
  // Checks the texts and sets the group's fields of `config`; the first error is returned.
  virtual Status Validate(const OptionContext& ctx, MountConfig& config) const = 0;
};

// The groups, in --help order (OptionSet defines and validates them in this order).
std::unique_ptr<OptionGroup> MakeConnectionGroup();   // options_connection.cc
std::unique_ptr<OptionGroup> MakeCredentialsGroup();  // options_credentials.cc
std::unique_ptr<OptionGroup> MakeFilesystemGroup();   // options_filesystem.cc
std::unique_ptr<OptionGroup> MakeDataPathGroup();     // options_data_path.cc
std::unique_ptr<OptionGroup> MakePrefetchGroup();     // options_prefetch.cc
std::unique_ptr<OptionGroup> MakeWritesGroup();       // options_writes.cc
std::unique_ptr<OptionGroup> MakeMountGroup();        // options_mount.cc
std::unique_ptr<OptionGroup> MakeDaemonGroup();       // options_daemon.cc

// The checks and derived values that involve more than one group, run after every group
// has validated (cross_checks.cc): limits against --max-in-flight, defaults that follow
// another group's value, and the source's share of the credential sources.
Status CheckAcrossGroups(const OptionContext& ctx, MountConfig& config);

}  // namespace ossmount::config
