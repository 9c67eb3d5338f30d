#include "mount_session.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "audit_log.h"
#include "bucket_connection.h"
#include "bucket_probe.h"
#include "common/metrics.h"
#include "common/record_log.h"
#include "config/mountpoint_check.h"
#include "control/command_table.h"
#include "control/control_server.h"
#include "fs/object_filesystem.h"
#include "fs/prefetch_link.h"
#include "fuse/fuse_server.h"
#include "fuse/kernel_readahead.h"
#include "logging.h"
#include "manifest_setup.h"
#include "metrics_http.h"
#include "prefetch_control.h"
#include "stats_command.h"
#include "upload/staging_area.h"
#include "upload/upload_journal.h"
#include "upload/upload_metrics.h"

namespace ossmount::daemon {
namespace {

using Clock = std::chrono::steady_clock;

// How long unmount waits for in-flight requests before answering them EIO.
constexpr std::chrono::milliseconds kDrainGrace{2000};

// The io_context and its threads. Stop() is idempotent; the threads block termination
// signals so SIGTERM/SIGINT reach the FUSE loop's thread.
class IoPool {
 public:
  explicit IoPool(int threads) : work_(io_.get_executor()) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this] {
        fuse::BlockTerminationSignals();
        io_.run();
      });
    }
  }
  ~IoPool() { Stop(); }
  boost::asio::io_context& io() { return io_; }
  void Stop() {
    work_.reset();
    io_.stop();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
};

void Fail(StartupReporter& reporter, const std::string& message) {
  spdlog::error("{}", message);
  reporter.Fail(message);
  if (!reporter.background()) {
    // In the foreground the log already went to stderr; nothing else to do.
  }
}

// What the control commands of a session may reach. Modules add fields as they need them.
struct ControlContext {
  boost::asio::io_context& io;
  const config::MountConfig& config;
  std::shared_ptr<ObjectClient> client;
  std::shared_ptr<prefetch::DatasetPrefetcher> prefetcher;
  std::chrono::steady_clock::time_point started;
  std::shared_ptr<RestartHistory> restarts;
};

// The one place where the session's control commands are registered ("stats", "warmup",
// ...), before the mount is made: both channels (the socket and the mount's ioctls) answer
// from this table.
void RegisterControlCommands(control::CommandTable& commands, const ControlContext& context) {
  commands.Register(
      "stats",
      [mountpoint = context.config.daemon.mountpoint, started = context.started,
       restarts = context.restarts](const rapidjson::Document&) {
        return Result<std::string>(StatsResult(mountpoint, started, *restarts));
      },
      control::Access::kAnyUser);
  // Dataset prefetch: "warmup", "warmup-status", "warmup-cancel", "hints". The table's
  // owner: the daemon's user (the CommandTable below is built with it too).
  RegisterPrefetchCommands(commands, context.io, context.prefetcher, geteuid());
}

// One line at exit with what the retry loop absorbed; tests read it (test_faults.py).
void LogRetryStats(const RetryStats& s) {
  spdlog::info(
      "retries: {} (throttled {}, server errors {}, network {}, timeouts {}, integrity {}, "
      "other {}); Retry-After waits {}; gave up {}; resumed {} ({} bytes not fetched again)",
      s.retries, s.throttled, s.server_errors, s.network, s.timeouts, s.integrity, s.other,
      s.retry_after, s.gave_up, s.resumed, s.resumed_bytes);
}

// Writes on: opens the record of this mount's multipart uploads and aborts those an earlier
// run of the same bucket and prefix left open (a crash mid-write), before the mount appears.
Status SetUpUploads(fs::ObjectFilesystem& filesystem, const std::shared_ptr<ObjectClient>& client,
                    const config::MountConfig& config, std::chrono::seconds timeout) {
  const fs::WritePolicy& writes = config.fs.writes;
  if (writes.staging_dir.empty()) {
    spdlog::warn(
        "writes are on without a staging directory (--staging-dir ''): files written out of "
        "order, read back, truncated or changed in place fail with ENOTSUP");
  } else {
    auto staging = upload::StagingArea::Open(writes.staging_dir, writes.max_staging_size);
    if (!staging.ok()) {
      return Status(ErrorCode::kInvalidArgument,
                    staging.status().message() + " (set --staging-dir to a writable directory)");
    }
    filesystem.SetStaging(*staging);
  }
  const std::string& base = writes.upload.journal_dir;
  if (base.empty()) {
    spdlog::warn(
        "writes are on without an upload journal (--upload-journal ''): a crash "
        "mid-write leaves its multipart upload to the bucket's lifecycle rule");
    return Status::Ok();
  }
  const std::string dir = upload::UploadJournal::DirectoryFor(
      base, config.client.endpoint, config.client.bucket, config.fs.prefix);
  auto journal = upload::UploadJournal::Open(dir);
  if (!journal.ok()) {
    return Status(ErrorCode::kInvalidArgument,
                  journal.status().message() + " (set --upload-journal to a writable directory)");
  }
  auto aborted = std::make_shared<std::promise<std::pair<size_t, Status>>>();
  auto answer = aborted->get_future();
  (*journal)->AbortLeftovers(client, [aborted](size_t n, Status first_error) {
    aborted->set_value({n, first_error});
  });
  if (answer.wait_for(timeout) != std::future_status::ready) {
    spdlog::warn("aborting the uploads an earlier run left open is taking long; going on");
  } else {
    auto [n, first_error] = answer.get();
    if (n > 0) spdlog::info("aborted {} multipart upload(s) an earlier run left open", n);
    if (!first_error.ok()) {
      spdlog::warn(
          "could not abort every upload an earlier run left open: {} (they stay "
          "recorded in {})",
          first_error.ToString(), dir);
    }
  }
  filesystem.SetUploadJournal(*journal);
  return Status::Ok();
}

// Lets the uploads of files still being completed at unmount finish (each close already
// waited for its own; these are the files whose last release or unmount completes them).
void WaitForUploads(std::chrono::seconds timeout) {
  auto& in_flight = upload::Uploads().files_in_flight;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (in_flight.Value() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (in_flight.Value() > 0) {
    spdlog::error(
        "{} file(s) were still uploading at exit; they are not saved, and their "
        "multipart uploads will be aborted at the next mount",
        in_flight.Value());
  }
}

// A supervised daemon (supervisor.h): restores what the process before it recorded, when
// there was one, and records from now on what the next one needs. The records live in the
// supervisor's state directory.
Status SetUpResumption(fs::ObjectFilesystem& filesystem, const SupervisedRun& run,
                       fuse::FuseServerOptions& fuse_options) {
  const std::string nodes_path = run.state_dir + "/nodes";
  const std::string handles_path = run.state_dir + "/handles";
  const std::string listings_path = run.state_dir + "/listings";
  RecordLog::Records nodes, handles;
  std::vector<meta::ListingRecords::Restored> listings;
  if (run.resume) {
    if (auto loaded = RecordLog::Load(nodes_path); loaded.ok()) nodes = std::move(*loaded);
    if (auto loaded = RecordLog::Load(handles_path); loaded.ok()) handles = std::move(*loaded);
    if (auto loaded = RecordLog::Load(listings_path); loaded.ok()) {
      listings = meta::ListingRecords::Decode(*loaded);
      // Only what is still fresh carries on into the next file.
      const auto now = std::chrono::steady_clock::now();
      std::erase_if(listings,
                    [&](const auto& l) { return !meta::TtlPolicy::Fresh(l.expiry, now); });
    }
    const auto restored =
        filesystem.RestoreSession(nodes, fs::HandleRecords::Decode(handles), listings);
    spdlog::info(
        "resuming the mount after the daemon before this one {} (restart {}, take-over {}): {} "
        "nodes, {} files open for reading, {} directories open, {} files open for writing (these "
        "get EIO: their bytes died with it), {} directory listings",
        run.last_cause, run.restarts, run.take_overs, restored.nodes, restored.read_handles,
        restored.dir_handles, restored.lost_writers, restored.listings);
  }
  auto node_log = RecordLog::Create(nodes_path, nodes);
  if (!node_log.ok()) return node_log.status();
  auto handle_log = RecordLog::Create(handles_path, handles);
  if (!handle_log.ok()) return handle_log.status();
  auto listing_log = meta::ListingRecords::Create(listings_path, listings);
  if (!listing_log.ok()) return listing_log.status();
  filesystem.RecordSession(
      std::move(*node_log),
      std::make_shared<fs::HandleRecords>(std::move(*handle_log), std::move(handles)),
      std::shared_ptr<meta::ListingRecords>(std::move(*listing_log)));
  fuse_options.resumable =
      fuse::ResumableConnection{run.device_fd, run.state_dir + "/init", run.resume};
  return Status::Ok();
}

}  // namespace

int RunMountSession(const config::MountConfig& config_in, StartupReporter& reporter,
                    const SupervisedRun* supervised) {
  config::MountConfig config = config_in;
  const auto session_started = std::chrono::steady_clock::now();
  for (const std::string& w : config.warnings) spdlog::warn("{}", w);

  std::shared_ptr<AuditLog> audit;
  if (!config.daemon.audit_log.empty()) {
    auto opened = AuditLog::Open(config.daemon.audit_log);
    if (!opened.ok()) {
      Fail(reporter, opened.status().message());
      return 1;
    }
    audit = *opened;
    config.fs.audit = audit;
  }

  // Objects are owned here, not destroyed in the usual reverse order at the end: see the
  // shutdown note below.
  auto* pool = new IoPool(config.daemon.io_threads);
  boost::asio::io_context& io = pool->io();

  auto connection = ConnectToBucket(io, config);
  if (!connection.ok()) {
    Fail(reporter, connection.status().message());
    return 1;
  }
  spdlog::info("credentials: {}", connection->credentials);
  std::shared_ptr<ObjectClient> client = connection->client;
  spdlog::info("bucket '{}' prefix '{}' at {} ({}), data endpoint {}", config.client.bucket,
               config.fs.prefix, config.client.endpoint,
               config.client.protocol == Protocol::kS3 ? "s3" : "oss",
               config.client.data_endpoint.empty() ? "(same)" : config.client.data_endpoint);

  // Generous: the client retries within its own budget first.
  auto probe_timeout =
      std::chrono::duration_cast<std::chrono::seconds>(config.client.retry.total_budget) +
      std::chrono::seconds(30);
  std::shared_ptr<ObjectClient> fs_client = client;
  const WaitingNotice note = [&reporter](const std::string& text) { reporter.Note(text); };
  if (!config.manifest.empty()) {
    // The tree comes from the manifest: no LIST, not even the start-up probe.
    auto manifest_client = SetUpManifest(io, fs_client, config, probe_timeout, note);
    if (!manifest_client.ok()) {
      Fail(reporter, manifest_client.status().message());
      return 1;
    }
    fs_client = *manifest_client;
    config.fs.list_for_lookups = false;
  } else if (supervised != nullptr && supervised->verified) {
    // A restart: a daemon with these options served already, and readers wait for this one.
    spdlog::info("restarted with the options a daemon before served with: no start-up probe");
  } else if (Status st = ProbeBucket(*client, config, probe_timeout, note); !st.ok()) {
    Fail(reporter, st.message());
    return 1;
  }

  // Asked for explicitly, so a listener that cannot start fails the mount.
  std::unique_ptr<MetricsHttpServer> metrics_server;
  if (!config.daemon.metrics_host.empty()) {
    auto listening =
        MetricsHttpServer::Start(io, config.daemon.metrics_host, config.daemon.metrics_port,
                                 [] { return metrics::Registry::Global().PrometheusText(); });
    if (!listening.ok()) {
      Fail(reporter, listening.status().message());
      return 1;
    }
    metrics_server = std::move(*listening);
    spdlog::info("metrics at http://{}:{}/metrics", config.daemon.metrics_host,
                 metrics_server->port());
  }

  auto filesystem = fs::MakeObjectFilesystem(io, fs_client, config.fs);
  // Warm-up and sampler-order hints (the control commands below), fetched through the
  // filesystem's caches and moved on by its reads; attached before the first listing, which
  // --prefetch-on-list warms.
  auto prefetcher = fs::MakeDatasetPrefetcher(filesystem);
  filesystem->SetReadObserver(
      std::make_shared<fs::PrefetchObserver>(prefetcher, filesystem->options()));
  if (config.fs.writes.enabled) {
    if (Status st = SetUpUploads(*filesystem, client, config, probe_timeout); !st.ok()) {
      Fail(reporter, st.message());
      return 1;
    }
  }
  // Cache the root listing before the mount appears, so the first lookups under the root
  // (ImageFolder's stat of MOUNT/train) are answered without probing requests.
  // (A restart has the kernel's names already.)
  if (supervised == nullptr || !supervised->verified) {
    WarmRootListing(*filesystem, std::chrono::seconds(10));
  }

  // The control commands (`ossmount stats`, `ossmount warmup`, hints, ...), answered through
  // the mount's directory ioctls as soon as it is mounted, and through the control socket
  // once that is started below.
  auto commands = std::make_shared<control::CommandTable>(io, geteuid());
  const std::shared_ptr<RestartHistory> restarts = RegisterRestartMetrics(supervised);
  RegisterControlCommands(
      *commands, ControlContext{io, config, client, prefetcher, session_started, restarts});

  fuse::FuseServerOptions fuse_options;
  fuse_options.control = [commands](std::string request, fuse::ControlCaller caller,
                                    std::function<void(std::string)> done) {
    const control::Peer peer{control::ProcessOfThread(caller.pid), caller.uid,
                             std::move(caller.directory)};
    commands->Answer(std::move(request), peer, std::move(done));
  };
  fuse_options.mountpoint = config.daemon.mountpoint;
  fuse_options.fsname = "ossmount:" + config.client.bucket;
  fuse_options.allow_other = config.daemon.allow_other;
  fuse_options.allow_root = config.daemon.allow_root;
  fuse_options.read_only = !config.fs.writes.enabled;
  fuse_options.debug = config.daemon.fuse_debug;
  fuse_options.cache_readdir = !config.fs.metadata_ttl.has_value();
  if (!config.daemon.passthrough) {
    fuse_options.no_passthrough_reason = "turned off (--no-passthrough)";
  } else if (!config.daemon.audit_log.empty()) {
    // The audit log counts the bytes read through each handle; the daemon never sees the
    // reads of a passthrough open.
    fuse_options.no_passthrough_reason =
        "--audit-log counts the bytes read through each open file, and passthrough reads "
        "bypass the daemon";
  }
  fuse_options.io_uring = config.daemon.fuse_io_uring == "on"    ? fuse::FuseRingMode::kOn
                          : config.daemon.fuse_io_uring == "off" ? fuse::FuseRingMode::kOff
                                                                 : fuse::FuseRingMode::kAuto;
  if (supervised != nullptr) {
    if (Status st = SetUpResumption(*filesystem, *supervised, fuse_options); !st.ok()) {
      Fail(reporter, "cannot keep the records a restarted daemon needs: " + st.message());
      return 1;
    }
  }
  auto mounted = fuse::FuseServer::Mount(filesystem, filesystem, fuse_options);
  if (!mounted.ok()) {
    Fail(reporter, mounted.status().message());
    return 1;
  }
  std::unique_ptr<fuse::FuseServer> server = std::move(*mounted);
  server->InstallSignalHandlers();
  // SIGHUP reopens the log files (logrotate) instead of unmounting; SIGUSR2 toggles debug.
  StartLogSignalThread([audit] {
    if (audit) audit->Reopen();
  });

  // The control socket: started once the mount answers and before the start is reported,
  // so a subcommand run right after `ossmount` returns finds it.
  std::unique_ptr<control::ControlServer> control;
  auto start_control = [&] {
    std::string path = control::SocketPathForMountpoint(config.daemon.mountpoint);
    auto started = control::ControlServer::Start(io, path, commands);
    if (!started.ok()) {
      // The mount works without it; only the subcommands that talk to it are unavailable.
      spdlog::warn(
          "control socket unavailable ({}); `ossmount stats` and similar reach this mount "
          "through its directories only",
          started.status().message());
      return;
    }
    control = std::move(*started);
    spdlog::info("control socket {}", control->path());
  };

  // The mount "answers" once a stat of its root goes through the loop started below.
  std::thread ready([&server, &reporter, &start_control, mountpoint = config.daemon.mountpoint,
                     kernel_readahead = config.fs.readahead.kernel_readahead, restarts,
                     died_ns = supervised != nullptr ? supervised->died_ns : 0] {
    fuse::BlockTerminationSignals();
    if (config::FuseFdMountPoint(mountpoint)) {
      // A passed descriptor has no path to stat here: the INIT reply tells it serves.
      if (server->WaitForInit(std::chrono::seconds(30))) {
        spdlog::info("serving the FUSE connection of {}", mountpoint);
        start_control();
        reporter.Ready();
      } else {
        const std::string message = "no FUSE INIT arrived on " + mountpoint +
                                    " within 30 s: was the descriptor mounted (fd=N)?";
        spdlog::error("{}", message);
        reporter.Fail(message);
        server->RequestExit();
      }
      return;
    }
    struct stat st {};
    if (stat(mountpoint.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      if (kernel_readahead > 0) {
        // After INIT (the stat above went through it), which would overwrite the value.
        if (Status ra = fuse::SetKernelReadahead(mountpoint, kernel_readahead); !ra.ok()) {
          spdlog::info("kernel readahead left at its default: {}", ra.message());
        }
      }
      spdlog::info("mounted on {}; serving", mountpoint);
      restarts->Served(died_ns);
      start_control();
      reporter.Ready();
    } else {
      std::string message =
          "the mount on " + mountpoint + " does not answer: " + std::strerror(errno);
      spdlog::error("{}", message);
      reporter.Fail(message);
      server->RequestExit();
    }
  });
  if (reporter.background()) DetachWorkingDirectory();

  Status run = server->Run();
  reporter.Stopping();
  ready.join();
  control.reset();  // unlinks the socket: subcommands now say no daemon answers
  server->Unmount();
  bool drained = server->Drain(kDrainGrace);
  spdlog::info("stopped{}", drained ? "" : " (some requests were answered EIO)");
  metrics_server.reset();
  // Files still open (a process held one across the unmount, or the kernel dropped its
  // queued release) are released now, so each still gets its audit line.
  filesystem->EndSession();
  WaitForUploads(probe_timeout);
  if (audit) audit->Stop();  // the files released until now are written
  LogRetryStats(client->retry_stats());

  // Shutdown note: the FUSE side is finished (unmounted, every request answered). The
  // object graph (filesystem -> client -> fetch engine -> io_context, with handlers that
  // hold references to each other) is not torn down piece by piece: the io threads are
  // stopped and joined so nothing runs, and the process exits. That avoids destroying the
  // engine under a client a pending handler still owns.
  pool->Stop();
  if (!run.ok()) {
    spdlog::error("{}", run.message());
    return 1;
  }
  return 0;
}

}  // namespace ossmount::daemon
