// OptionSet: every option of ossmount on one CLI11 parser (the general options and
// positionals, then each group in --help order) with the raw texts it parses into, the
// option table the other layers read, and the validation of the whole. Internal to
// src/config; one OptionSet per parse.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/mount_config.h"
#include "config/mount_option_list.h"
#include "config/option_group.h"
#include "config/option_layers.h"
#include "ossmount/status.h"

namespace ossmount::config {

// The options outside the groups, as parsed.
struct GeneralOptions {
  bool version = false;
  std::string config_file;  // --config
  std::string source, mountpoint;
};

class OptionSet {
 public:
  // Defines every option on `app`, which must outlive this set.
  explicit OptionSet(CLI::App& app);
  ~OptionSet();

  const GeneralOptions& general() const { return general_; }

  // Every named option but help, version and config, plus the positionals "source" and
  // "mountpoint", in definition order.
  std::vector<OptionInfo> Table() const;

  // What "--name" is on this parser, as -o lists see it: help, version and the positionals
  // are not settable there.
  OptionKind KindOf(const std::string& dashed_name) const;

  // After the app parsed: the positionals, each group in order, then the checks across
  // groups. The first error is returned.
  Status Validate(MountConfig& config) const;

 private:
  CLI::App& app_;
  OptionDefiner definer_;
  GeneralOptions general_;
  std::vector<std::unique_ptr<OptionGroup>> groups_;
};

}  // namespace ossmount::config
