// ossmount: mount an OSS (or S3) bucket with FUSE (read-only unless --allow-writes).
//
//   ossmount BUCKET[:/PREFIX] MOUNTPOINT [options]   mount (see --help)
//   ossmount --help | --version
//   ossmount <subcommand> ...                        when argv[1] is a known subcommand
//
// Exit status: 0 mounted (background: the mount answers) or cleanly unmounted; 1 the
// mount could not be made or failed; 2 bad command line.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "abort_uploads_command.h"
#include "background.h"
#include "common/metrics.h"
#include "config/mount_config.h"
#include "config/mountpoint_check.h"
#include "data/disk_block_cache.h"
#include "fuse/mounted_device.h"
#include "heap_metrics.h"
#include "logging.h"
#include "mount_session.h"
#include "stats_command.h"
#include "supervisor.h"
#include "systemd_store.h"
#include "warmup_command.h"

namespace {

using ossmount::Result;
using ossmount::Status;
namespace config = ossmount::config;
namespace daemon_ns = ossmount::daemon;

int PrintVersion(const std::vector<std::string>&) {
  std::printf("ossmount %s\n", OSSMOUNT_VERSION);
  return 0;
}

int PrintHelp(const std::vector<std::string>&) {
  std::printf("%s", config::UsageText().c_str());
  return 0;
}

// Subcommands: argv[1] equal to one of these words runs it with the remaining arguments.
// Bucket names can be plain words too, so only words that are documented subcommands
// belong here (warmup, stats, ... as they are written).
const std::map<std::string, std::function<int(const std::vector<std::string>&)>>& Subcommands() {
  static const std::map<std::string, std::function<int(const std::vector<std::string>&)>> k = {
      {"version", PrintVersion},
      {"help", PrintHelp},
      {"stats", daemon_ns::StatsCommand},
      {"abort-uploads", daemon_ns::AbortUploadsCommand},
      {"warmup", daemon_ns::WarmupCommand},
  };
  return k;
}

// The disk cache's own counts, read when metrics are exposed.
void RegisterDiskCacheMetrics(const std::shared_ptr<ossmount::data::DiskBlockCache>& cache) {
  std::weak_ptr<ossmount::data::DiskBlockCache> weak = cache;
  auto read = [weak](uint64_t ossmount::data::DiskCacheStats::*field) {
    return [weak, field] {
      auto c = weak.lock();
      return c ? static_cast<double>(c->Stats().*field) : 0.0;
    };
  };
  using S = ossmount::data::DiskCacheStats;
  auto& r = ossmount::metrics::Registry::Global();
  r.SetCallbackCounter("ossmount_disk_cache_hits_total", "Blocks found in the disk cache.", {},
                       read(&S::hits));
  r.SetCallbackCounter("ossmount_disk_cache_misses_total", "Blocks not in the disk cache.", {},
                       read(&S::misses));
  r.SetCallbackCounter("ossmount_disk_cache_corrupt_total",
                       "Disk cache blocks that failed verification and were dropped.", {},
                       read(&S::corrupt));
  r.SetCallbackCounter("ossmount_disk_cache_evictions_total", "Blocks evicted (LRU).", {},
                       read(&S::evictions));
  r.SetCallbackCounter("ossmount_disk_cache_space_evictions_total",
                       "Blocks evicted to leave --cache-min-free available on the cache's file "
                       "system (also in ossmount_disk_cache_evictions_total).",
                       {}, read(&S::space_evictions));
  r.SetCallbackCounter("ossmount_disk_cache_no_space_total",
                       "Blocks not cached: even an empty cache left less than --cache-min-free "
                       "available.",
                       {}, read(&S::no_space));
  r.SetCallbackGauge("ossmount_disk_cache_bytes", "Bytes in the disk cache now.", {},
                     read(&S::bytes));
  r.SetCallbackGauge("ossmount_disk_cache_capacity_bytes",
                     "What the disk cache can hold now: --max-cache-size, or less when its file "
                     "system has less room above --cache-min-free.",
                     {}, [weak] {
                       auto c = weak.lock();
                       return c ? static_cast<double>(c->capacity()) : 0.0;
                     });
}

// Relative paths would break after the daemon's chdir("/").
std::string Absolute(const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  auto abs = config::AbsoluteMountPoint(path);
  return abs.ok() ? *abs : path;
}

// The mount of this systemd unit's last run, which systemd kept in its descriptor store
// (systemd_store.h) across a restart: the supervisor resumes it. One whose connection ended,
// that is not mounted on the mount point, or that this start does not supervise is dropped
// (systemd closes its copy, the connection ends, and the dead mount is cleared as usual).
ossmount::UniqueFd TakeStoredMount(config::MountConfig& cfg) {
  std::optional<ossmount::UniqueFd> fd =
      daemon_ns::TakePassedDescriptor(daemon_ns::kStoredFuseName);
  if (!fd) return ossmount::UniqueFd();
  std::string why;
  if (!cfg.daemon.supervise) {
    why = "--no-supervise is given";
  } else if (cfg.daemon.take_over) {
    why = "--take-over is given";
  } else if (!ossmount::fuse::MountedDevice::ConnectionAlive(fd->get())) {
    why = "its connection has ended";
  } else {
    std::ifstream in("/proc/self/mountinfo");
    std::stringstream mountinfo;
    mountinfo << in.rdbuf();
    auto entry = config::FindMountEntry(mountinfo.str(), cfg.daemon.mountpoint);
    if (!entry || !config::IsOssmountEntry(*entry)) {
      why = "it is not mounted on " + cfg.daemon.mountpoint;
    }
  }
  if (why.empty()) return std::move(*fd);
  (void)daemon_ns::RemoveStoredDescriptor(daemon_ns::kStoredFuseName);
  const std::string note =
      "systemd kept the FUSE connection of this unit's last mount, which is not resumed (" + why +
      "); mounting anew";
  std::fprintf(stderr, "ossmount: %s\n", note.c_str());
  cfg.warnings.push_back(note);
  return ossmount::UniqueFd();
}

int Mount(const std::vector<std::string>& args) {
  auto parsed = config::ParseCommandLine(args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "ossmount: %s\n", parsed.status().message().c_str());
    return 2;
  }
  if (parsed->command == config::Command::kHelp) {
    std::printf("%s", parsed->text.c_str());
    return 0;
  }
  if (parsed->command == config::Command::kVersion) {
    std::printf("%s\n", parsed->text.c_str());
    return 0;
  }
  config::MountConfig cfg = std::move(parsed->config);
  // A child of the supervisor (supervisor.h): it serves the supervisor's mount.
  const std::optional<daemon_ns::SupervisedRun> supervised =
      daemon_ns::SupervisedRunFromEnvironment();
  if (supervised) {
    // Started through /proc/self/exe (the supervisor's own binary, even after an upgrade on
    // disk), which would name the process "exe".
    prctl(PR_SET_NAME, "ossmount");
    auto mountpoint = config::AbsoluteMountPoint(cfg.daemon.mountpoint);
    if (!mountpoint.ok()) {
      std::fprintf(stderr, "ossmount: %s\n", mountpoint.status().message().c_str());
      return 1;
    }
    cfg.daemon.mountpoint = *mountpoint;
  } else if (std::optional<int> fd = config::FuseFdMountPoint(cfg.daemon.mountpoint)) {
    // Mounted already by whoever passed the descriptor: nothing to check or recover here.
    if (Status st = config::CheckFuseFd(*fd); !st.ok()) {
      std::fprintf(stderr, "ossmount: %s\n", st.message().c_str());
      return 1;
    }
  } else {
    auto mountpoint = config::AbsoluteMountPoint(cfg.daemon.mountpoint);
    if (!mountpoint.ok()) {
      std::fprintf(stderr, "ossmount: %s\n", mountpoint.status().message().c_str());
      return 1;
    }
    cfg.daemon.mountpoint = *mountpoint;
  }
  ossmount::UniqueFd stored_mount;
  if (!supervised && !config::FuseFdMountPoint(cfg.daemon.mountpoint)) {
    stored_mount = TakeStoredMount(cfg);
  }
  if (supervised || cfg.daemon.take_over || config::FuseFdMountPoint(cfg.daemon.mountpoint) ||
      stored_mount) {
    // Mounted already: by the supervisor, by the one to take over from, by whoever passed
    // the descriptor, or by this unit's last run (kept by systemd).
  } else {
    // A mount left by a daemon that was killed (systemd Restart=on-failure lands here).
    auto recovered = config::RecoverDeadMount(cfg.daemon.mountpoint);
    if (!recovered.ok()) {
      std::fprintf(stderr, "ossmount: %s\n", recovered.status().message().c_str());
      return 1;
    }
    if (!recovered->empty()) {
      std::fprintf(stderr, "ossmount: %s\n", recovered->c_str());
      cfg.warnings.push_back(*recovered);  // logged once logging is set up
    }
    if (Status st = config::CheckMountPoint(cfg.daemon.mountpoint, cfg.daemon.nonempty); !st.ok()) {
      std::fprintf(stderr, "ossmount: %s\n", st.message().c_str());
      return 1;
    }
  }
  cfg.daemon.log_file = Absolute(cfg.daemon.log_file);
  cfg.daemon.audit_log = Absolute(cfg.daemon.audit_log);
  cfg.credential_sources.credentials_file = Absolute(cfg.credential_sources.credentials_file);
  cfg.credential_sources.passwd_file = Absolute(cfg.credential_sources.passwd_file);
  cfg.client.ca_bundle = Absolute(cfg.client.ca_bundle);
  if (cfg.manifest_key.empty()) cfg.manifest = Absolute(cfg.manifest);  // not a bucket's URI

  // Fork first: no thread may exist yet.
  daemon_ns::StartupReporter reporter;
  if (supervised) {
    reporter = daemon_ns::StartupReporter(supervised->report_fd);
  } else if (!cfg.daemon.foreground) {
    auto child = daemon_ns::ForkIntoBackground();
    if (!child.ok()) {
      std::fprintf(stderr, "ossmount: cannot go to the background (%s); use -f\n",
                   child.status().message().c_str());
      return 1;
    }
    reporter = std::move(*child);
  }
  // The mount outlives the daemon process: this one holds it and runs the daemon as a child
  // (supervisor.h), taking its signals through a descriptor, in every thread.
  const bool supervise =
      !supervised && cfg.daemon.supervise && !config::FuseFdMountPoint(cfg.daemon.mountpoint);
  sigset_t child_mask;
  if (supervise) child_mask = daemon_ns::BlockSupervisorSignals();
  if (Status st = daemon_ns::SetupLogging(cfg.daemon, cfg.daemon.foreground); !st.ok()) {
    reporter.Fail(st.message());
    std::fprintf(stderr, "ossmount: %s\n", st.message().c_str());
    return 1;
  }
  if (supervise) {
    int code = daemon_ns::RunSupervisor(cfg, reporter, args, child_mask, std::move(stored_mount));
    spdlog::shutdown();
    return code;
  }
  // The disk cache starts its writer thread, so it opens after the fork; a cache that cannot
  // be used fails the start (a user who asked for --cache expects it to work).
  if (!cfg.cache.dir.empty()) {
    // A wait for another process to let go of the directory, or a move of an older cache's
    // blocks, is shown to a user waiting on a background start too, not only logged.
    ossmount::data::DiskCacheOptions options = cfg.cache;
    options.on_notice = [&reporter](const std::string& note) { reporter.Note(note); };
    auto cache = ossmount::data::DiskBlockCache::Open(options);
    if (!cache.ok()) {
      std::string message = "disk cache: " + cache.status().message();
      spdlog::error("{}", message);
      reporter.Fail(message);
      std::fprintf(stderr, "ossmount: %s\n", message.c_str());
      spdlog::shutdown();
      return 1;
    }
    cfg.fs.disk_cache = *cache;
    RegisterDiskCacheMetrics(*cache);
  }
  daemon_ns::RegisterHeapMetrics();
  int code = daemon_ns::RunMountSession(cfg, reporter, supervised ? &*supervised : nullptr);
  if (cfg.fs.disk_cache) {
    // main() leaves with _Exit: write what is queued first, so the next mount finds it.
    cfg.fs.disk_cache->Flush();
    auto s = cfg.fs.disk_cache->Stats();
    spdlog::info(
        "disk cache: {} hits, {} misses, {} corrupt, {} written, {} evicted ({} for free space), "
        "{} dropped ({} for want of free space)",
        s.hits, s.misses, s.corrupt, s.writes, s.evictions, s.space_evictions, s.dropped,
        s.no_space);
  }
  spdlog::shutdown();
  return code;
}

// Until the mount installs its own handlers (unmount, then exit 0), SIGTERM and SIGINT end
// the start with the status a shell reports for a signal. Explicit because the kernel ignores
// the signals a container's PID 1 has no handler for: `podman stop` or a pod's deletion
// during a slow start-up listing would wait out the grace period and end in SIGKILL.
void EndStartOnSignal(int sig) { _exit(128 + sig); }

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty()) {
    auto it = Subcommands().find(args[0]);
    if (it != Subcommands().end()) {
      return it->second(std::vector<std::string>(args.begin() + 1, args.end()));
    }
  }
  signal(SIGTERM, EndStartOnSignal);
  signal(SIGINT, EndStartOnSignal);
  int code = Mount(args);
  // See mount_session.cc's shutdown note: leave without running destructors of the
  // object graph (the FUSE mount is already gone and every request answered).
  std::fflush(nullptr);
  std::_Exit(code);
}
