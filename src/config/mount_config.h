// MountConfig: everything the daemon needs to mount one bucket, validated, and the pure
// parser that produces it from the command line.
//
// Accepted forms (docs/CONFIGURATION.md):
//   ossmount BUCKET[:/PREFIX] MOUNTPOINT [options]
//   ossmount oss://BUCKET/PREFIX/ MOUNTPOINT [options]
//   ossmount s3://BUCKET/PREFIX/ MOUNTPOINT [options]        (S3 mode)
//   ossmount BUCKET MOUNTPOINT -o opt1,opt2=value             (what mount.fuse3 runs)
// In -o lists, option names may use '_' or '-' (metadata_ttl=indefinite is
// --metadata-ttl indefinite). Generic mount(8) options (rw, ro, dev, nodev, suid, nosuid,
// exec, noexec, atime, noatime, relatime, _netdev, nofail, auto, noauto, user, nouser,
// users, defaults, x-systemd.*, comment=...) are accepted and ignored; the mount is always
// read-only, so 'rw' only adds a warning.
//
// Credentials are never taken from the command line (visible in ps): the key pair comes
// from the environment or from files, which src/auth reads (BuildCredentialsProvider).
//
// Thread-safety: ParseCommandLine is a pure function of its arguments.
#pragma once

#include <string>
#include <vector>

#include "auth/credential_providers.h"
#include "data/disk_block_cache.h"
#include "fs/object_filesystem.h"
#include "ossmount/client_options.h"
#include "ossmount/status.h"

namespace ossmount::config {

// Settings of the daemon process itself (not of the filesystem or the client).
struct DaemonSettings {
  std::string source;      // the positional source as given, for messages
  std::string mountpoint;  // as given (the daemon makes it absolute before forking)
  bool foreground = false;
  bool allow_other = false;
  bool allow_root = false;
  bool nonempty = false;           // allow mounting over a non-empty directory
  bool fuse_debug = false;         // libfuse request tracing (--debug)
  std::string log_file;            // "" = stderr in the foreground, syslog in the background
  std::string log_level = "info";  // trace|debug|info|warn|error
  int io_threads = 4;              // Asio worker threads
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
  std::string text;  // help or version text
};

// Parses the arguments after the program name (argv[1..]). Errors are kInvalidArgument
// with a message that names the offending option; the daemon exits 2 on them.
Result<ParsedCommandLine> ParseCommandLine(const std::vector<std::string>& args);

// The usage text (also returned for --help).
std::string UsageText();

}  // namespace ossmount::config
