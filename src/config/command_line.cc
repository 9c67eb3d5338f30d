// ParseCommandLine: CLI11 collects the raw option strings; the values are then checked
// here, one by one, so that every error names its option and says what is accepted.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <boost/asio/ip/address.hpp>
#include <cctype>
#include <cstdlib>
#include <optional>

#include "config/config_file.h"
#include "config/mount_config.h"
#include "config/option_layers.h"
#include "config/option_values.h"

namespace ossmount::config {

const char* const kDefaultConfigPath = "/etc/ossmount/config.json";

namespace {

// Raw strings as CLI11 saw them; empty optional = not given.
struct RawOptions {
  std::string source, mountpoint;
  std::string endpoint, data_endpoint, region, data_region, protocol, signature_version;
  bool path_style = false;
  std::string credentials_file, passwd_file, ram_role, ecs_metadata_url;
  bool anonymous = false;
  std::string metadata_ttl = "60", negative_metadata_ttl = "5", small_file_threshold = "8MiB";
  std::string list_ahead = "64", max_list_pages = "100000";
  std::string uid, gid, file_mode, dir_mode;
  bool allow_other = false, allow_root = false, nonempty = false, foreground = false;
  std::string log_file, log_level;
  std::string log_max_size = "100MiB", log_max_files = "5", audit_log, metrics_address;
  bool debug = false;
  std::string ca_bundle;
  bool no_verify_tls = false;
  std::string max_in_flight, connect_timeout, request_timeout, retries, io_threads;
  std::string retry_budget, stall_timeout;
  bool version = false;
  std::string config_file;
  // Data path: memory budget, readahead, disk cache.
  std::string max_memory = "1GiB", max_readahead = "64MiB", prefetch_unit = "8MiB";
  std::string prefetch_concurrency = "64", cache_dir, max_cache_size = "10GiB";
  std::string cache_min_free = "5%";
  // Dataset prefetch: warm-up and sampler-order hints.
  std::string warmup_concurrency = "128", hint_concurrency = "256", hint_ahead_files = "2048",
              hint_ahead_bytes = "512MiB";
  std::string control_memory = "256MiB";
  bool prefetch_on_list = false;
  bool no_passthrough = false;
  std::string fuse_io_uring = "auto";
  // Metadata from a file instead of LIST (--manifest).
  std::string manifest;
  std::string kernel_readahead = "1MiB";
};

// Defines every option on `app`, bound to `r`. Returns the options that are flags (take
// no value), which -o lists need to know.
std::vector<CLI::Option*> DefineOptions(CLI::App& app, RawOptions& r) {
  std::vector<CLI::Option*> flags;
  auto add_flag = [&](auto&&... args) {
    CLI::Option* opt = app.add_flag(std::forward<decltype(args)>(args)...);
    flags.push_back(opt);
    return opt;
  };
  app.set_help_flag("-h,--help", "Print this help and exit");
  add_flag("-V,--version", r.version, "Print the version and exit");
  app.add_option("--config", r.config_file,
                 "JSON config file of options (default /etc/ossmount/config.json if it "
                 "exists); also the OSS Connector's config.json");
  app.add_option("source", r.source,
                 "BUCKET[:/PREFIX], oss://BUCKET/PREFIX/ or s3://BUCKET/PREFIX/");
  app.add_option("mountpoint", r.mountpoint, "Existing empty directory to mount on");

  auto* conn = "Connection";
  app.add_option("--endpoint", r.endpoint,
                 "Endpoint for listings and metadata (and data when no --data-endpoint), e.g. "
                 "oss-cn-beijing-internal.aliyuncs.com or http://127.0.0.1:9000")
      ->group(conn);
  app.add_option("--data-endpoint", r.data_endpoint,
                 "Endpoint for object data, e.g. the OSS Accelerator "
                 "cn-beijing-internal.oss-data-acc.aliyuncs.com")
      ->group(conn);
  app.add_option("--region", r.region,
                 "Signing region (OSS V4 / SigV4), e.g. cn-beijing; inferred from an "
                 "aliyuncs.com endpoint")
      ->group(conn);
  app.add_option("--data-region", r.data_region,
                 "Signing region for --data-endpoint (default: --region)")
      ->group(conn);
  app.add_option("--protocol", r.protocol, "oss (default) or s3")->group(conn);
  add_flag("--path-style", r.path_style,
           "Address the bucket as ENDPOINT/BUCKET/KEY instead of BUCKET.ENDPOINT/KEY")
      ->group(conn);
  app.add_option("--signature-version", r.signature_version,
                 "OSS signature: v4 (default when a region is known) or v1")
      ->group(conn);
  app.add_option("--ca-bundle", r.ca_bundle, "PEM file of CAs to trust instead of the system's")
      ->group(conn);
  add_flag("--no-verify-tls", r.no_verify_tls,
           "DANGEROUS: do not verify TLS certificates (testing only)")
      ->group(conn);
  app.add_option("--max-in-flight", r.max_in_flight,
                 "Requests on the wire at once, all endpoints together (default 256)")
      ->group(conn);
  app.add_option("--connect-timeout", r.connect_timeout,
                 "Connect timeout, e.g. 5s or 500ms (default 5s)")
      ->group(conn);
  app.add_option("--request-timeout", r.request_timeout,
                 "Give up one attempt of a request after this long, e.g. 30s (default: no "
                 "limit; the stall deadline still applies)")
      ->group(conn);
  app.add_option("--retries", r.retries,
                 "Retries after a failed attempt for transient errors (default 4)")
      ->group(conn);
  app.add_option("--retry-budget", r.retry_budget,
                 "Longest time one request keeps retrying before the read fails (EIO), e.g. "
                 "30s (default 120s)")
      ->group(conn);
  app.add_option("--stall-timeout", r.stall_timeout,
                 "Abandon (and retry) a transfer that moves under 1 KiB/s for this long, whole "
                 "seconds, e.g. 5s (default 15s)")
      ->group(conn);

  auto* cred = "Credentials (the key pair comes from the environment or a file, never argv)";
  app.add_option("--credentials-file", r.credentials_file,
                 "JSON or INI credentials file (default ~/.alibabacloud/credentials)")
      ->group(cred);
  app.add_option("--passwd-file", r.passwd_file,
                 "ossfs-style passwd file (bucket:id:secret or id:secret), mode 0600")
      ->group(cred);
  app.add_option("--ram-role", r.ram_role,
                 "ECS RAM role name, or 'auto' to discover it from the metadata service")
      ->group(cred);
  app.add_option("--ecs-metadata-url", r.ecs_metadata_url,
                 "ECS metadata service (default http://100.100.100.200)")
      ->group(cred);
  add_flag("--anonymous", r.anonymous, "Send unsigned requests (public buckets)")->group(cred);

  auto* fs = "Filesystem";
  app.add_option("--metadata-ttl", r.metadata_ttl,
                 "How long listings and attributes stay valid: indefinite, SECONDS, or 0 "
                 "(default 60)")
      ->group(fs);
  app.add_option("--list-ahead", r.list_ahead,
                 "When a program walks the tree, list up to N of the next directories in the "
                 "background before it enters them (default 64, 0 = off)")
      ->group(fs);
  app.add_option("--max-list-pages", r.max_list_pages,
                 "A listing (a directory's, or a warm-up's) that goes past N pages of up to 1,000 "
                 "keys fails with EIO (default 100000)")
      ->group(fs);
  app.add_option("--negative-metadata-ttl", r.negative_metadata_ttl,
                 "How long 'no such file' stays cached, SECONDS (default 5)")
      ->group(fs);
  app.add_option("--small-file-threshold", r.small_file_threshold,
                 "Objects up to this size are fetched whole on first read (default 8MiB)")
      ->group(fs);
  app.add_option("--uid", r.uid, "Owner of every file (default: the daemon's user)")->group(fs);
  app.add_option("--gid", r.gid, "Group of every file (default: the daemon's group)")->group(fs);
  app.add_option("--file-mode", r.file_mode, "Permission bits of files, octal (default 0444)")
      ->group(fs);
  app.add_option("--dir-mode", r.dir_mode, "Permission bits of directories, octal (default 0555)")
      ->group(fs);

  auto* data = "Data path";
  app.add_option("--max-memory", r.max_memory,
                 "All data buffers together: whole small files and readahead (default 1GiB)")
      ->group(data);
  app.add_option("--max-readahead", r.max_readahead,
                 "Largest readahead window of one sequentially read file (default 64MiB)")
      ->group(data);
  app.add_option("--kernel-readahead", r.kernel_readahead,
                 "The kernel's readahead on the mount (root only), 0 = the kernel's 128KiB "
                 "(default 1MiB with --metadata-ttl indefinite)")
      ->group(data);
  app.add_option("--prefetch-unit", r.prefetch_unit,
                 "Size of one ranged GET of a large file (default 8MiB)")
      ->group(data);
  app.add_option("--prefetch-concurrency", r.prefetch_concurrency,
                 "Readahead GETs in flight, all files together (default 64)")
      ->group(data);
  app.add_option("--cache", r.cache_dir,
                 "Directory of the local disk cache of object data (default: none)")
      ->group(data);
  app.add_option("--max-cache-size", r.max_cache_size,
                 "Largest size of the disk cache (default 10GiB)")
      ->group(data);
  app.add_option("--cache-min-free", r.cache_min_free,
                 "Free space the disk cache leaves on its file system, a size or a percentage "
                 "of the file system (default 5%; 0: none)")
      ->group(data);
  app.add_option("--warmup-concurrency", r.warmup_concurrency,
                 "GETs in flight that warm-up fills up to, hinted ones included (default 128, "
                 "at most --max-in-flight)")
      ->group(data);
  app.add_option("--hint-concurrency", r.hint_concurrency,
                 "GETs in flight that sampler-order hints fill up to, warm-up included "
                 "(default 256, at most --max-in-flight)")
      ->group(data);
  app.add_option("--hint-ahead-files", r.hint_ahead_files,
                 "With sampler-order hints, prefetch up to N files past the furthest read "
                 "(default 2048)")
      ->group(data);
  app.add_option("--hint-ahead-bytes", r.hint_ahead_bytes,
                 "Hinted bytes held fetched and unread, at most about (default 512MiB)")
      ->group(data);
  app.add_option("--control-memory", r.control_memory,
                 "Memory for control requests: hint lists and warm-up queues together; users "
                 "other than the owner and root share a quarter (default 256MiB)")
      ->group(data);
  add_flag("--prefetch-on-list", r.prefetch_on_list,
           "Warm up a directory's files after it is listed (within the cache budget)")
      ->group(data);
  add_flag("--no-passthrough", r.no_passthrough,
           "Never let the kernel read cached files directly (FUSE passthrough, used by "
           "default where the kernel offers it)")
      ->group(data);
  app.add_option("--fuse-io-uring", r.fuse_io_uring,
                 "How FUSE requests reach the daemon: auto (io_uring rings where the kernel's "
                 "switch is on, else /dev/fuse; default), on (also turn the switch on, as "
                 "root; fail if impossible) or off")
      ->group(data);

  app.add_option("--manifest", r.manifest,
                 "File listing the objects to show (KEY<TAB>SIZE[<TAB>ETAG[<TAB>LABEL]] or "
                 "'KEY [LABEL]' per line, keys relative to the mounted prefix): the bucket "
                 "is never listed and nothing else is visible")
      ->group(fs);

  auto* mnt = "Mount and daemon";
  add_flag("--allow-other", r.allow_other,
           "Let other users access the mount (needs user_allow_other in /etc/fuse.conf "
           "unless root)")
      ->group(mnt);
  add_flag("--allow-root", r.allow_root, "Let root access the mount too")->group(mnt);
  add_flag("--nonempty", r.nonempty, "Allow mounting over a non-empty directory")->group(mnt);
  add_flag("-f,--foreground", r.foreground, "Stay in the foreground, log to stderr")->group(mnt);
  app.add_option("--log-file", r.log_file,
                 "Log to this file (default: stderr in the foreground, syslog otherwise)")
      ->group(mnt);
  app.add_option("--log-level", r.log_level, "trace, debug, info (default), warn or error")
      ->group(mnt);
  add_flag("-d,--debug", r.debug, "Log level debug and trace every FUSE request")->group(mnt);
  app.add_option("--log-max-size", r.log_max_size,
                 "Rotate --log-file when it reaches this size; 0 = never (default 100MiB)")
      ->group(mnt);
  app.add_option("--log-max-files", r.log_max_files,
                 "Rotated log files kept (FILE.1 ... FILE.N, default 5)")
      ->group(mnt);
  app.add_option("--audit-log", r.audit_log,
                 "Write one JSON line per opened file (path, pid, uid, bytes read, duration) "
                 "to this file")
      ->group(mnt);
  app.add_option("--metrics-address", r.metrics_address,
                 "Serve Prometheus metrics on HOST:PORT at /metrics (default: off)")
      ->group(mnt);
  app.add_option("--io-threads", r.io_threads, "Worker threads (default: the CPUs, 2 to 4)")
      ->group(mnt);

  return flags;
}

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

// Expands every "-o a,b=c" (also "-oa,b=c") into "--a" "--b=c". Generic mount options are
// dropped; names that are not ossmount options are errors.
Result<std::vector<std::string>> ExpandMountOptions(const std::vector<std::string>& args,
                                                    CLI::App& app,
                                                    const std::vector<CLI::Option*>& flags,
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
        if (name == "rw") warnings->push_back("-o rw ignored: ossmount mounts are read-only");
        continue;
      }
      std::string flag = name;
      std::replace(flag.begin(), flag.end(), '_', '-');
      flag = "--" + flag;
      CLI::Option* opt = app.get_option_no_throw(flag);
      if (opt == nullptr || opt->get_positional() || flag == "--help" || flag == "--version") {
        return InvalidOption("-o " + name + ": unknown option (see ossmount --help)");
      }
      bool is_flag = std::find(flags.begin(), flags.end(), opt) != flags.end();
      if (eq == std::string::npos) {
        if (!is_flag) {
          return InvalidOption("-o " + name + ": needs a value (" + name + "=VALUE)");
        }
        out.push_back(flag);
      } else {
        if (is_flag) {
          return InvalidOption("-o " + name + ": takes no value");
        }
        out.push_back(flag + "=" + item.substr(eq + 1));
      }
    }
  }
  return out;
}

// "host", "http://host:port", "https://host/": keeps the scheme, drops trailing slashes.
Result<std::string> CheckEndpoint(const char* option, std::string endpoint) {
  size_t scheme = endpoint.find("://");
  size_t host_start = scheme == std::string::npos ? 0 : scheme + 3;
  while (endpoint.size() > host_start && endpoint.back() == '/') endpoint.pop_back();
  if (endpoint.empty()) return InvalidOption(std::string(option) + ": is empty");
  std::string host = endpoint;
  if (scheme != std::string::npos) {
    std::string s = endpoint.substr(0, scheme);
    if (s != "http" && s != "https") {
      return InvalidOption(std::string(option) + ": '" + endpoint + "' has scheme '" + s +
                           "'; use http://, https:// or a bare host name");
    }
    host = endpoint.substr(scheme + 3);
  }
  if (host.empty() || host.find_first_of(" /?#@") != std::string::npos) {
    return InvalidOption(std::string(option) + ": '" + endpoint +
                         "' is not an endpoint; expected a host[:port] with an optional http:// or "
                         "https://, e.g. oss-cn-beijing.aliyuncs.com");
  }
  return endpoint;
}

Status Validate(const RawOptions& r, CLI::App& app, MountConfig& c) {
  auto given = [&](const char* name) { return app.count(name) > 0; };
  if (r.source.empty() || r.mountpoint.empty()) {
    return InvalidOption(
        "missing arguments: usage is ossmount BUCKET[:/PREFIX] MOUNTPOINT [options] "
        "(see --help)");
  }
  auto source = ParseMountSource(r.source);
  if (!source.ok()) return source.status();
  c.daemon.source = r.source;
  c.daemon.mountpoint = r.mountpoint;

  // Protocol.
  Protocol protocol = source->url_protocol.value_or(Protocol::kOss);
  if (given("--protocol")) {
    Protocol flag;
    if (r.protocol == "oss") {
      flag = Protocol::kOss;
    } else if (r.protocol == "s3") {
      flag = Protocol::kS3;
    } else {
      return InvalidOption("--protocol: '" + r.protocol + "' is not valid; expected oss or s3");
    }
    if (source->url_protocol && *source->url_protocol != flag) {
      return InvalidOption("--protocol " + r.protocol + " contradicts the source '" + r.source +
                           "'; drop one of them");
    }
    protocol = flag;
  }
  ClientOptions& client = c.client;
  client.protocol = protocol;
  client.bucket = source->bucket;
  client.path_style = r.path_style;

  // Endpoints and regions.
  client.region = r.region;
  if (given("--endpoint")) {
    auto ep = CheckEndpoint("--endpoint", r.endpoint);
    if (!ep.ok()) return ep.status();
    client.endpoint = *ep;
  }
  if (client.region.empty() && !client.endpoint.empty()) {
    client.region = RegionFromEndpoint(client.endpoint);
  }
  if (client.endpoint.empty()) {
    if (client.region.empty()) {
      return InvalidOption(
          "--endpoint is required (e.g. --endpoint oss-cn-beijing-internal.aliyuncs.com), or "
          "give --region to use the region's public endpoint");
    }
    client.endpoint = protocol == Protocol::kOss ? "https://oss-" + client.region + ".aliyuncs.com"
                                                 : "https://s3." + client.region + ".amazonaws.com";
  }
  if (given("--data-endpoint")) {
    auto ep = CheckEndpoint("--data-endpoint", r.data_endpoint);
    if (!ep.ok()) return ep.status();
    client.data_endpoint = *ep;
  }
  if (given("--data-region")) {
    if (client.data_endpoint.empty()) {
      return InvalidOption("--data-region needs --data-endpoint (it is the signing region for it)");
    }
    if (r.data_region.empty()) return InvalidOption("--data-region: is empty");
    client.data_signing_region = r.data_region;
  }

  // Signing.
  if (protocol == Protocol::kS3) {
    if (given("--signature-version")) {
      return InvalidOption(
          "--signature-version applies to --protocol oss only (S3 always uses SigV4)");
    }
    if (client.region.empty()) client.region = "us-east-1";
  } else {
    if (given("--signature-version")) {
      if (r.signature_version == "v1") {
        client.oss_signature = OssSignatureVersion::kV1;
      } else if (r.signature_version == "v4") {
        if (client.region.empty()) {
          return InvalidOption("--signature-version v4 needs --region (e.g. --region cn-beijing)");
        }
        client.oss_signature = OssSignatureVersion::kV4;
      } else {
        return InvalidOption("--signature-version: '" + r.signature_version +
                             "' is not valid; expected v1 or v4");
      }
    } else {
      client.oss_signature =
          client.region.empty() ? OssSignatureVersion::kV1 : OssSignatureVersion::kV4;
    }
  }

  // TLS and transport.
  client.ca_bundle = r.ca_bundle;
  if (given("--ca-bundle") && r.ca_bundle.empty()) return InvalidOption("--ca-bundle: is empty");
  if (r.no_verify_tls) {
    client.verify_tls = false;
    c.warnings.push_back(
        "--no-verify-tls: TLS certificates are NOT verified; anyone on the network path can "
        "impersonate the server and read your credentials' signatures and data");
  }
  if (given("--max-in-flight")) {
    auto v = ParseInteger("--max-in-flight", r.max_in_flight, 1, 4096);
    if (!v.ok()) return v.status();
    client.max_in_flight = static_cast<int>(*v);
    client.max_connections_per_host = static_cast<int>(*v);
  }
  if (given("--connect-timeout")) {
    auto v = ParseDuration("--connect-timeout", r.connect_timeout);
    if (!v.ok()) return v.status();
    if (v->count() == 0) return InvalidOption("--connect-timeout: must be more than 0");
    client.timeouts.connect = *v;
  }
  if (given("--request-timeout")) {
    auto v = ParseDuration("--request-timeout", r.request_timeout);
    if (!v.ok()) return v.status();
    client.timeouts.request = *v;
  }
  if (given("--retries")) {
    auto v = ParseInteger("--retries", r.retries, 0, 100);
    if (!v.ok()) return v.status();
    client.retry.max_attempts = static_cast<int>(*v) + 1;
  }
  if (given("--retry-budget")) {
    auto v = ParseDuration("--retry-budget", r.retry_budget);
    if (!v.ok()) return v.status();
    if (v->count() == 0) return InvalidOption("--retry-budget: must be more than 0");
    client.retry.total_budget = *v;
  }
  if (given("--stall-timeout")) {
    auto v = ParseDuration("--stall-timeout", r.stall_timeout);
    if (!v.ok()) return v.status();
    // libcurl measures the low-speed window in whole seconds.
    if (v->count() < 1000 || v->count() % 1000 != 0) {
      return InvalidOption("--stall-timeout: give whole seconds, at least 1s (e.g. 5s)");
    }
    client.timeouts.low_speed_time = std::chrono::duration_cast<std::chrono::seconds>(*v);
  }

  // Credentials.
  auth::CredentialSources& cred = c.credential_sources;
  cred.protocol = protocol;
  cred.bucket = source->bucket;
  cred.anonymous = r.anonymous;
  cred.credentials_file = r.credentials_file;
  cred.passwd_file = r.passwd_file;
  cred.ram_role = r.ram_role;
  for (const char* name : {"--credentials-file", "--passwd-file", "--ram-role"}) {
    if (given(name) && r.anonymous) {
      return InvalidOption(std::string(name) + " contradicts --anonymous; drop one of them");
    }
  }
  if (given("--credentials-file") && r.credentials_file.empty()) {
    return InvalidOption("--credentials-file: is empty");
  }
  if (given("--passwd-file") && r.passwd_file.empty())
    return InvalidOption("--passwd-file: is empty");
  if (given("--ram-role") && r.ram_role.empty()) {
    return InvalidOption("--ram-role: is empty (give a role name, or 'auto')");
  }
  if (given("--ecs-metadata-url")) {
    if (r.ram_role.empty()) return InvalidOption("--ecs-metadata-url needs --ram-role");
    auto url = CheckEndpoint("--ecs-metadata-url", r.ecs_metadata_url);
    if (!url.ok()) return url.status();
    cred.ecs_metadata_url = *url;
  }

  // Filesystem.
  fs::FsOptions& fso = c.fs;
  fso.prefix = source->prefix;
  auto ttl = ParseTtl("--metadata-ttl", r.metadata_ttl);
  if (!ttl.ok()) return ttl.status();
  fso.metadata_ttl = *ttl;
  // Listings ahead are sent at foreground priority: never more than the request cap (the
  // default follows a lower one), or reads would queue behind them.
  auto list_ahead = ParseInteger("--list-ahead", r.list_ahead, 0, 4096);
  if (!list_ahead.ok()) return list_ahead.status();
  if (given("--list-ahead") && *list_ahead > c.client.max_in_flight) {
    return InvalidOption("--list-ahead " + std::to_string(*list_ahead) +
                         " is more than --max-in-flight " + std::to_string(c.client.max_in_flight) +
                         "; lower it or raise --max-in-flight");
  }
  fso.list_ahead = static_cast<size_t>(std::min<int64_t>(*list_ahead, c.client.max_in_flight));
  auto max_list_pages = ParseInteger("--max-list-pages", r.max_list_pages, 1, 100000000);
  if (!max_list_pages.ok()) return max_list_pages.status();
  fso.max_list_pages = static_cast<int>(*max_list_pages);
  auto neg = ParseDuration("--negative-metadata-ttl", r.negative_metadata_ttl);
  if (!neg.ok()) return neg.status();
  fso.negative_ttl = *neg;
  auto small = ParseSize("--small-file-threshold", r.small_file_threshold);
  if (!small.ok()) return small.status();
  fso.small_file_threshold = *small;
  fso.uid = static_cast<uint32_t>(geteuid());
  fso.gid = static_cast<uint32_t>(getegid());
  if (given("--uid")) {
    auto v = ParseInteger("--uid", r.uid, 0, 4294967294LL);
    if (!v.ok()) return v.status();
    fso.uid = static_cast<uint32_t>(*v);
  }
  if (given("--gid")) {
    auto v = ParseInteger("--gid", r.gid, 0, 4294967294LL);
    if (!v.ok()) return v.status();
    fso.gid = static_cast<uint32_t>(*v);
  }
  if (given("--file-mode")) {
    auto v = ParseOctalMode("--file-mode", r.file_mode);
    if (!v.ok()) return v.status();
    fso.file_mode = *v;
  }
  if (given("--dir-mode")) {
    auto v = ParseOctalMode("--dir-mode", r.dir_mode);
    if (!v.ok()) return v.status();
    fso.dir_mode = *v;
  }

  // Data path.
  auto max_memory = ParseSize("--max-memory", r.max_memory);
  if (!max_memory.ok()) return max_memory.status();
  if (*max_memory < (16ull << 20)) return InvalidOption("--max-memory: at least 16MiB");
  fso.max_memory = *max_memory;
  auto unit = ParseSize("--prefetch-unit", r.prefetch_unit);
  if (!unit.ok()) return unit.status();
  if (*unit < (64ull << 10) || *unit > (1ull << 30)) {
    return InvalidOption("--prefetch-unit: between 64KiB and 1GiB");
  }
  fso.readahead.part_size = *unit;
  auto max_ra = ParseSize("--max-readahead", r.max_readahead);
  if (!max_ra.ok()) return max_ra.status();
  if (*max_ra < fso.readahead.initial_window)
    return InvalidOption("--max-readahead: at least 1MiB");
  fso.readahead.max_window = *max_ra;
  auto kernel_ra = ParseSize("--kernel-readahead", r.kernel_readahead);
  if (!kernel_ra.ok()) return kernel_ra.status();
  if (*kernel_ra > (1ull << 30)) return InvalidOption("--kernel-readahead: at most 1GiB");
  fso.readahead.kernel_readahead = *kernel_ra;
  if (!given("--kernel-readahead")) {
    // 1 MiB: the kernel's reads are then 1 MiB (its largest), as with more, and a
    // sequential reader's readahead is the daemon's window (a 1 GiB read was no faster with
    // 16 MiB). More would cost random readers of a memory-mapped file (Arrow, numpy.memmap,
    // LMDB): the kernel reads its whole readahead around every page fault. The kernel's readahead
    // requests of every open file are answered even when the budget is spent, so by default they
    // are kept a small share of it. And only with an indefinite metadata TTL: where objects may
    // change, the kernel can still hold an old, larger size, and its concurrent readahead requests
    // past the new end then leave zeroed pages (seen in mount:replace), which one 128 KiB request
    // at a time does not.
    fso.readahead.kernel_readahead =
        fso.metadata_ttl.has_value() ? 0 : std::min(*kernel_ra, fso.max_memory / 64 >> 20 << 20);
  }
  auto pc = ParseInteger("--prefetch-concurrency", r.prefetch_concurrency, 1, 4096);
  if (!pc.ok()) return pc.status();
  fso.readahead.global_concurrency = static_cast<int>(*pc);
  auto cache_size = ParseSize("--max-cache-size", r.max_cache_size);
  if (!cache_size.ok()) return cache_size.status();
  if (given("--max-cache-size") && r.cache_dir.empty()) {
    return InvalidOption("--max-cache-size needs --cache DIR");
  }
  auto min_free = ParseSizeOrPercent("--cache-min-free", r.cache_min_free);
  if (!min_free.ok()) return min_free.status();
  if (given("--cache-min-free") && r.cache_dir.empty()) {
    return InvalidOption("--cache-min-free needs --cache DIR");
  }
  if (!r.cache_dir.empty()) {
    if (r.cache_dir[0] != '/') return InvalidOption("--cache: give an absolute directory path");
    c.cache.dir = r.cache_dir;
    c.cache.max_size = *cache_size;
    c.cache.min_free = {min_free->bytes, min_free->fraction};
  }
  // Prefetch concurrency: an explicit value above the request cap is an error; the default
  // follows a lower cap (prefetches queued inside the engine would make a reader that joins
  // one wait behind other prefetches).
  auto prefetch_concurrency = [&](const char* flag, const std::string& text) -> Result<int> {
    auto v = ParseInteger(flag, text, 1, 4096);
    if (!v.ok()) return v.status();
    if (given(flag) && *v > c.client.max_in_flight) {
      return InvalidOption(
          std::string(flag) + " " + std::to_string(*v) + " is more than --max-in-flight " +
          std::to_string(c.client.max_in_flight) + "; lower it or raise --max-in-flight");
    }
    return static_cast<int>(std::min<int64_t>(*v, c.client.max_in_flight));
  };
  auto wc = prefetch_concurrency("--warmup-concurrency", r.warmup_concurrency);
  if (!wc.ok()) return wc.status();
  fso.dataset_prefetch.concurrency = *wc;
  auto hc = prefetch_concurrency("--hint-concurrency", r.hint_concurrency);
  if (!hc.ok()) return hc.status();
  fso.dataset_prefetch.hint_concurrency = *hc;
  auto haf = ParseInteger("--hint-ahead-files", r.hint_ahead_files, 1, 10000000);
  if (!haf.ok()) return haf.status();
  fso.dataset_prefetch.hint_ahead_files = static_cast<size_t>(*haf);
  auto hab = ParseSize("--hint-ahead-bytes", r.hint_ahead_bytes);
  if (!hab.ok()) return hab.status();
  if (*hab < (1ull << 20)) return InvalidOption("--hint-ahead-bytes: at least 1MiB");
  fso.dataset_prefetch.hint_ahead_bytes = *hab;
  // Hint lists and warm-up queues come from requests any user of the mount may send: their
  // memory has a limit of its own (DatasetPrefetcher), outside --max-memory's data buffers.
  auto control_memory = ParseSize("--control-memory", r.control_memory);
  if (!control_memory.ok()) return control_memory.status();
  if (*control_memory < (1ull << 20)) return InvalidOption("--control-memory: at least 1MiB");
  fso.dataset_prefetch.control_memory = *control_memory;
  fso.prefetch_on_list = r.prefetch_on_list;

  if (given("--manifest")) {
    if (r.manifest.empty()) return InvalidOption("--manifest: give the path of a manifest file");
    c.manifest = r.manifest;
  }

  // Daemon.
  DaemonSettings& d = c.daemon;
  if (r.allow_other && r.allow_root) {
    return InvalidOption(
        "--allow-other contradicts --allow-root (allow_other already includes root); "
        "drop one of them");
  }
  d.allow_other = r.allow_other;
  d.allow_root = r.allow_root;
  d.passthrough = !r.no_passthrough;
  if (r.fuse_io_uring != "auto" && r.fuse_io_uring != "on" && r.fuse_io_uring != "off") {
    return InvalidOption("--fuse-io-uring: '" + r.fuse_io_uring +
                         "' is not valid; expected auto, on or off");
  }
  d.fuse_io_uring = r.fuse_io_uring;
  d.nonempty = r.nonempty;
  d.foreground = r.foreground;
  d.log_file = r.log_file;
  if (given("--log-file") && r.log_file.empty()) return InvalidOption("--log-file: is empty");
  if (r.debug) {
    d.log_level = "debug";
    d.fuse_debug = true;
  }
  if (given("--log-level")) {
    static constexpr std::array<std::string_view, 5> kLevels = {"trace", "debug", "info", "warn",
                                                                "error"};
    if (std::find(kLevels.begin(), kLevels.end(), r.log_level) == kLevels.end()) {
      return InvalidOption("--log-level: '" + r.log_level +
                           "' is not valid; expected trace, debug, info, warn or error");
    }
    if (r.debug && r.log_level != "debug" && r.log_level != "trace") {
      return InvalidOption("--log-level " + r.log_level + " contradicts --debug; drop one of them");
    }
    d.log_level = r.log_level;
  }
  {
    auto v = ParseSize("--log-max-size", r.log_max_size);
    if (!v.ok()) return v.status();
    d.log_max_size = *v;
    if (d.log_max_size != 0 && d.log_max_size < 4096) {
      return InvalidOption("--log-max-size: " + r.log_max_size +
                           " is too small; give at least 4KiB or 0");
    }
    auto files = ParseInteger("--log-max-files", r.log_max_files, 1, 1000);
    if (!files.ok()) return files.status();
    d.log_max_files = static_cast<int>(*files);
  }
  if (given("--audit-log")) {
    if (r.audit_log.empty()) return InvalidOption("--audit-log: is empty");
    d.audit_log = r.audit_log;
  }
  if (given("--metrics-address")) {
    // HOST:PORT with a numeric IPv4 address or [IPv6]; a name would be resolved at start.
    const std::string& a = r.metrics_address;
    auto colon = a.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return InvalidOption("--metrics-address: '" + a + "' is not HOST:PORT (e.g. 127.0.0.1:9464)");
    }
    std::string host = a.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    boost::system::error_code ec;
    boost::asio::ip::make_address(host, ec);
    if (ec) {
      return InvalidOption("--metrics-address: '" + host +
                           "' is not an IP address (e.g. 127.0.0.1:9464; names are not resolved)");
    }
    auto port = ParseInteger("--metrics-address", a.substr(colon + 1), 1, 65535);
    if (!port.ok()) return port.status();
    d.metrics_host = host;
    d.metrics_port = static_cast<uint16_t>(*port);
  }
  if (given("--io-threads")) {
    auto v = ParseInteger("--io-threads", r.io_threads, 1, 64);
    if (!v.ok()) return v.status();
    d.io_threads = static_cast<int>(*v);
  }
  return Status::Ok();
}

// The option table the layers work from: every named option but help/version/config,
// plus the two positionals.
std::vector<OptionInfo> OptionTable(const CLI::App& app, const std::vector<CLI::Option*>& flags) {
  std::vector<OptionInfo> table;
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_positional()) {
      table.push_back({opt->get_name(), false, true});
      continue;
    }
    if (opt->get_lnames().empty()) continue;
    const std::string& name = opt->get_lnames().front();
    if (name == "help" || name == "version" || name == "config") continue;
    bool is_flag = std::find(flags.begin(), flags.end(), opt) != flags.end();
    table.push_back({name, is_flag, false});
  }
  return table;
}

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

}  // namespace

std::string UsageText() {
  CLI::App app{"ossmount: mount an Alibaba Cloud OSS bucket (or an S3 bucket) read-only",
               "ossmount"};
  RawOptions raw;
  DefineOptions(app, raw);
  app.footer(
      "Forms:\n"
      "  ossmount BUCKET[:/PREFIX] MOUNTPOINT [options]\n"
      "  ossmount oss://BUCKET/PREFIX/ MOUNTPOINT [options]\n"
      "  ossmount s3://BUCKET/PREFIX/ MOUNTPOINT [options]\n"
      "  ossmount BUCKET MOUNTPOINT -o metadata_ttl=indefinite,allow_other   (fstab)\n"
      "Credentials: OSS_ACCESS_KEY_ID/OSS_ACCESS_KEY_SECRET[/OSS_SESSION_TOKEN],\n"
      "  ALIBABA_CLOUD_ACCESS_KEY_ID/..., AWS_ACCESS_KEY_ID/... (S3 mode), --credentials-file,\n"
      "  --passwd-file, or --ram-role. Secrets are never accepted on the command line.\n"
      "The mount is always read-only.");
  return app.help();
}

std::vector<OptionInfo> CommandLineOptions() {
  CLI::App app{"ossmount", "ossmount"};
  RawOptions raw;
  std::vector<CLI::Option*> flags = DefineOptions(app, raw);
  return OptionTable(app, flags);
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
  // Pass 1: the command line alone, to learn what it sets and which config file it names.
  CLI::App app{"ossmount: mount an Alibaba Cloud OSS bucket (or an S3 bucket) read-only",
               "ossmount"};
  RawOptions raw;
  std::vector<CLI::Option*> flags = DefineOptions(app, raw);

  auto expanded = ExpandMountOptions(args, app, flags, &parsed.config.warnings);
  if (!expanded.ok()) return expanded.status();
  try {
    app.parse(std::vector<std::string>(expanded->rbegin(), expanded->rend()));
  } catch (const CLI::CallForHelp&) {
    parsed.command = Command::kHelp;
    parsed.text = UsageText();
    return parsed;
  } catch (const CLI::ParseError& e) {
    return InvalidOption(e.what());
  }
  if (raw.version) {
    parsed.command = Command::kVersion;
    parsed.text = std::string("ossmount ") + OSSMOUNT_VERSION;
    return parsed;
  }

  // The other layers, highest precedence first: environment, then the config file.
  std::vector<OptionInfo> table = OptionTable(app, flags);
  std::vector<std::string> on_command_line;
  for (const OptionInfo& o : table) {
    bool set = o.positional ? !(o.name == "source" ? raw.source : raw.mountpoint).empty()
                            : app.count("--" + o.name) > 0;
    if (set) on_command_line.push_back(o.name);
  }
  auto env = SettingsFromEnvironment(table, sources.getenv);
  if (!env.ok()) return env.status();
  std::string config_path = raw.config_file;
  if (app.count("--config") > 0 && config_path.empty()) return InvalidOption("--config: is empty");
  if (config_path.empty() && sources.getenv) {
    const char* from_env = sources.getenv("OSSMOUNT_CONFIG");
    if (from_env != nullptr) config_path = from_env;
  }
  if (config_path.empty() && !sources.default_config_path.empty() &&
      access(sources.default_config_path.c_str(), F_OK) == 0) {
    config_path = sources.default_config_path;
  }
  std::vector<OptionSetting> from_file;
  if (!config_path.empty()) {
    auto file = LoadConfigFile(config_path, table);
    if (!file.ok()) return file.status();
    from_file = std::move(file->settings);
    for (auto& w : file->warnings) parsed.config.warnings.push_back(std::move(w));
    parsed.config_file = config_path;
  }
  std::vector<OptionSetting> layered = MergeLayers(on_command_line, {*env, from_file});

  // Pass 2: the command line plus what the layers add, through the same parser and checks.
  std::vector<std::string> merged = *expanded;
  std::vector<std::string> positionals;
  for (const OptionSetting& s : layered) {
    const OptionInfo& info = *std::find_if(table.begin(), table.end(),
                                           [&](const OptionInfo& o) { return o.name == s.name; });
    if (info.positional) continue;
    if (info.flag) {
      if (s.flag_value) merged.push_back("--" + s.name);
    } else {
      merged.push_back("--" + s.name + "=" + s.value);
    }
  }
  // Positionals fill in order: a file's mountpoint can follow a command-line source.
  for (const char* name : {"source", "mountpoint"}) {
    for (const OptionSetting& s : layered) {
      if (s.name == name) positionals.push_back(s.value);
    }
  }
  if (!positionals.empty()) {
    if (std::find(merged.begin(), merged.end(), "--") == merged.end()) merged.push_back("--");
    merged.insert(merged.end(), positionals.begin(), positionals.end());
  }
  CLI::App final_app{"ossmount", "ossmount"};
  RawOptions final_raw;
  DefineOptions(final_app, final_raw);
  Status st = Status::Ok();
  try {
    final_app.parse(std::vector<std::string>(merged.rbegin(), merged.rend()));
  } catch (const CLI::ParseError& e) {
    st = InvalidOption(e.what());
  }
  if (st.ok()) st = Validate(final_raw, final_app, parsed.config);
  if (!st.ok()) return InvalidOption(WithOrigin(st.message(), layered));
  return parsed;
}

}  // namespace ossmount::config
