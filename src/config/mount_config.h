// MountConfig: everything the daemon needs to mount one bucket, validated, and
// ParseCommandLine, the pure function that produces it from the command line, fstab -o
// lists, OSSMOUNT_<OPTION> variables and a config file (docs/CONFIGURATION.md). The options
// themselves are defined and checked by group, in options_<group>.cc.
//
// Thread-safety: ParseCommandLine is a pure function of its arguments.
#pragma once

#include <sched.h>

#include <algorithm>
#include <string>
#include <vector>

#include "auth/credential_sources.h"
#include "config/option_layers.h"
#include "data/disk_cache_options.h"
#include "fs/fs_options.h"
#include "ossmount/client_options.h"
#include "ossmount/status.h"

namespace ossmount::config {

// The default number of worker threads: the CPUs this process may run on (its affinity
// mask, so taskset and cpusets count), at least 2 and at most 4. Threads beyond the cores
// only add hand-offs: on 2 cores a hinted epoch read about 10% more files per second with
// 2 than with 4 (docs/BENCHMARKS.md).
inline int DefaultIoThreads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 4;
  return std::clamp(cpus, 2, 4);
}

// Settings of the daemon process itself (not of the filesystem or the client).
struct DaemonSettings {
  std::string source;      // the positional source as given, for messages
  std::string mountpoint;  // as given (the daemon makes it absolute before forking)
  bool foreground = false;
  // A supervisor process holds the FUSE connection and restarts the daemon on it when it dies
  // (--no-supervise turns it off).
  bool supervise = true;
  // Take the mount over from the supervisor serving the mount point (an upgrade in place)
  // instead of mounting (--take-over).
  bool take_over = false;
  bool allow_other = false;
  bool allow_root = false;
  bool nonempty = false;                 // allow mounting over a non-empty directory
  bool fuse_debug = false;               // libfuse request tracing (--debug)
  bool passthrough = true;               // FUSE passthrough for cached files (--no-passthrough)
  std::string fuse_io_uring = "auto";    // auto|on|off: FUSE over io_uring (--fuse-io-uring)
  std::string log_file;                  // "" = stderr in the foreground, syslog in the background
  std::string log_level = "info";        // trace|debug|info|warn|error
  uint64_t log_max_size = 100ull << 20;  // --log-file rotates at this size; 0 = never
  int log_max_files = 5;                 // rotated files kept beside --log-file
  std::string audit_log;                 // "" = no audit log
  std::string metrics_host;              // --metrics-address; "" = no metrics listener
  uint16_t metrics_port = 0;
  int io_threads = DefaultIoThreads();  // Asio worker threads
};

struct MountConfig {
  // Bucket, endpoints, regions, signing, TLS, retries, timeouts. `credentials` is left
  // null: the daemon builds it from `credential_sources`.
  ClientOptions client;
  auth::CredentialSources credential_sources;  // protocol and bucket filled in; no fetcher
  fs::FsOptions fs;              // disk_cache left null: the daemon opens it from `cache`
  data::DiskCacheOptions cache;  // dir "" = no disk cache
  DaemonSettings daemon;
  // --manifest FILE: the tree comes from this file, never from LIST ("" = list the bucket).
  // Read by the daemon (meta::LoadManifestFile); relative paths are relative to its start
  // directory.
  std::string manifest;
  // --manifest oss://BUCKET/KEY (or s3://): the manifest is the object KEY (a full key, not
  // relative to the mounted prefix) of the mounted bucket, read once at start; `manifest`
  // keeps the text as given, for messages. "" = a local file (or no manifest).
  std::string manifest_key;
  // Things the user should hear about but that do not stop the mount ('rw' ignored,
  // TLS verification off, ...). The daemon logs each at warn level.
  std::vector<std::string> warnings;
};

enum class Command {
  kMount,    // config is valid
  kHelp,     // print text, exit 0
  kVersion,  // print text, exit 0
};

struct ParsedCommandLine {
  Command command = Command::kMount;
  MountConfig config;
  std::string text;         // help or version text
  std::string config_file;  // the config file that was read, "" = none
};

// The default config file, read when it exists and no --config / OSSMOUNT_CONFIG names one.
extern const char* const kDefaultConfigPath;

// Where values other than the command line's come from (option_layers.h, config_file.h).
struct ParseSources {
  EnvironmentGetter getenv;         // OSSMOUNT_<OPTION>, OSSMOUNT_CONFIG; null = none
  std::string default_config_path;  // used only if it exists; "" = none
};

// Parses the arguments after the program name (argv[1..]) and merges the other layers:
// command line > environment (OSSMOUNT_<OPTION>) > config file (--config PATH, which must
// exist, else $OSSMOUNT_CONFIG, else kDefaultConfigPath if it exists) > defaults. Every value
// goes through the same validation. Errors are kInvalidArgument with a message that names the
// offending option, and, for a value from a layer, where it came from (variable, or key and
// file); the daemon exits 2 on them.
Result<ParsedCommandLine> ParseCommandLine(const std::vector<std::string>& args,
                                           const ParseSources& sources);

// The same with the process environment and kDefaultConfigPath.
Result<ParsedCommandLine> ParseCommandLine(const std::vector<std::string>& args);

// The option table every layer works from: each named option (long name, flag or not) but
// help, version and config, plus the positionals "source" and "mountpoint".
std::vector<OptionInfo> CommandLineOptions();

// The usage text (also returned for --help).
std::string UsageText();

}  // namespace ossmount::config
