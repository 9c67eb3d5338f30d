#include "fuse/fuse_server.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "fuse/device_hooks.h"
#include "fuse/fuse_ops.h"
#include "fuse/mounted_device.h"
#include "fuse/passthrough.h"
#include "fuse/uring_switch.h"
#include "fuse/uring_transport.h"
#include "ossmount/control_ioctl.h"

namespace ossmount::fuse {
namespace {

// Write end of the exit pipe of the server whose signal handlers are installed.
std::atomic<int> g_signal_exit_fd{-1};

void OnTerminationSignal(int) {
  int fd = g_signal_exit_fd.load();
  if (fd >= 0) {
    int saved = errno;
    ssize_t ignored = write(fd, "x", 1);
    (void)ignored;
    errno = saved;
  }
}

void OnWakeSignal(int) {}  // exists only to interrupt libfuse's sem_wait

void InstallHandler(int sig, void (*fn)(int)) {
  struct sigaction sa {};
  sa.sa_handler = fn;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: the point is to interrupt the wait
  sigaction(sig, &sa, nullptr);
}

// mountinfo escapes ' ', '\t', '\n' and '\\' as \ooo.
std::string UnescapeMountInfo(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const char* o = s.data() + i + 1;
      if (o[0] >= '0' && o[0] <= '3' && o[1] >= '0' && o[1] <= '7' && o[2] >= '0' && o[2] <= '7') {
        out.push_back(static_cast<char>((o[0] - '0') * 64 + (o[1] - '0') * 8 + (o[2] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

// The FUSE connection number (the minor of st_dev) of the mount on `mountpoint`, read from
// /proc/self/mountinfo so that nothing touches the mount itself; -1 if not found.
long FindConnection(const std::string& mountpoint) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  long found = -1;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, point;
    if (!(fields >> id >> parent >> devno >> root >> point)) continue;
    if (UnescapeMountInfo(point) != mountpoint) continue;
    size_t colon = devno.find(':');
    if (colon == std::string::npos) continue;
    found = std::strtol(devno.c_str() + colon + 1, nullptr, 10);  // the last mount wins
  }
  return found;
}

// Before the mount (the kernel reads the switch when it sends INIT): why the rings will not
// be used ("" if they may be), or the error of --fuse-io-uring on.
Result<std::string> PrepareUringSwitch(FuseRingMode mode, const std::string& path) {
  if (mode == FuseRingMode::kOff) return std::string("turned off (--fuse-io-uring off)");
  LoadFuseModule();  // its parameters appear when it is loaded
  const UringSwitch before = ReadUringSwitch(path);
  if (mode == FuseRingMode::kAuto) return UringSwitchProblem(before, path);
  if (Status on = TurnOnUringSwitch(path); !on.ok()) {
    return Status(on.code(), "--fuse-io-uring on: " + on.message());
  }
  if (before != UringSwitch::kOn) {
    spdlog::warn(
        "turned on the kernel's FUSE io_uring switch ({}) for --fuse-io-uring on; it stays on "
        "for later FUSE mounts too (those whose daemons ask for rings)",
        path);
  }
  return std::string();
}

}  // namespace

void BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

struct FuseServer::Impl {
  FuseServerOptions options;
  std::unique_ptr<AdapterContext> ctx;
  std::unique_ptr<Passthrough> passthrough;  // ctx->passthrough points here
  std::unique_ptr<UringTransport> uring;
  std::unique_ptr<DeviceHooks> device_hooks;  // ctx->device_hooks points here
  fuse_session* se = nullptr;
  bool mounted = false;
  bool hooks_installed = false;  // DeviceHooks see the traffic (WaitForInit)
  long connection = -1;
  int exit_pipe[2] = {-1, -1};
  std::atomic<bool> loop_done{false};
  pthread_t loop_thread{};

  // Waits for an exit request, then keeps interrupting the loop thread until it leaves
  // libfuse's loop (a single signal can land just before libfuse starts waiting).
  void WatchForExit() {
    BlockTerminationSignals();
    for (;;) {
      char c = 0;
      ssize_t n = read(exit_pipe[0], &c, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || c == 'q') return;
      if (c != 'x') continue;
      spdlog::info("exit requested; stopping the FUSE loop");
      fuse_session_exit(se);
      while (!loop_done.load()) {
        pthread_kill(loop_thread, SIGUSR1);
        pollfd p{exit_pipe[0], POLLIN, 0};
        if (poll(&p, 1, 20) > 0) {
          n = read(exit_pipe[0], &c, 1);
          if (n > 0 && c == 'q') return;
        }
      }
      return;
    }
  }

  void AbortConnection() {
    if (connection < 0) {
      spdlog::debug("cannot abort the FUSE connection of {}: its number is unknown",
                    options.mountpoint);
      return;
    }
    std::string path = "/sys/fs/fuse/connections/" + std::to_string(connection) + "/abort";
    int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "1", 1) != 1) {
      spdlog::debug("cannot abort the FUSE connection ({}: {})", path, std::strerror(errno));
    } else {
      spdlog::info("aborted FUSE connection {}: waiting callers get ENOTCONN", connection);
    }
    if (fd >= 0) close(fd);
  }
};

FuseServer::FuseServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<FuseServer>> FuseServer::Mount(std::shared_ptr<fs::Filesystem> fs,
                                                      std::shared_ptr<fs::SessionHooks> hooks,
                                                      FuseServerOptions options) {
  if (fs == nullptr || hooks == nullptr) {
    return Status(ErrorCode::kInvalidArgument, "a mount needs a filesystem and its hooks");
  }
  if (options.allow_other && options.allow_root) {
    return Status(ErrorCode::kInvalidArgument, "allow_other and allow_root are exclusive");
  }
  if (options.fsname.find_first_of(",\\ \t\n") != std::string::npos) {
    return Status(ErrorCode::kInvalidArgument,
                  "fsname '" + options.fsname + "' contains a comma, backslash or blank");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->ctx = std::make_unique<AdapterContext>();
  impl->ctx->fs = std::move(fs);
  impl->ctx->hooks = std::move(hooks);
  impl->ctx->cache_readdir = options.cache_readdir;
  impl->ctx->max_background = options.max_background;
  impl->ctx->congestion_threshold = options.congestion_threshold;
  // The Filesystem hands out backing files only while the kernel takes them.
  impl->passthrough = std::make_unique<Passthrough>(
      options.no_passthrough_reason,
      [hooks = impl->ctx->hooks](bool on) { hooks->SetBackingFilesWanted(on); });
  impl->ctx->passthrough = impl->passthrough.get();
  auto ring_off = options.resumable
                      ? Result<std::string>(std::string(
                            "not used on a connection that outlives the daemon process (a "
                            "request held by a dead process's ring would never be resent)"))
                      : PrepareUringSwitch(options.io_uring, options.uring_switch_path);
  if (!ring_off.ok()) return ring_off.status();
  impl->uring = std::make_unique<UringTransport>(
      *ring_off, UringTransport::EntriesPerQueue(UringTransport::PossibleCpus()),
      [hooks = impl->ctx->hooks](uint64_t bytes) { hooks->CountTransportBuffers(bytes); });
  // Rings the kernel agreed to but that could not be set up: every request would wait for
  // them, so the session ends (Run() returns the error).
  impl->uring->set_on_fatal([raw = impl.get()] {
    if (raw->exit_pipe[1] >= 0) {
      ssize_t ignored = write(raw->exit_pipe[1], "x", 1);
      (void)ignored;
    }
  });
  InitReplay replay;
  if (options.resumable) replay = {options.resumable->init_record, options.resumable->resume};
  impl->device_hooks =
      std::make_unique<DeviceHooks>(impl->passthrough.get(), impl->uring.get(), replay);
  if (Status loaded = impl->device_hooks->LoadInit(); !loaded.ok()) return loaded;
  impl->ctx->device_hooks = impl->device_hooks.get();
  if (options.control) {
    impl->ctx->control = std::make_shared<ControlRequests>(
        options.control, control::kMaxControlRequestBytes, control::kControlPendingBytes);
  }

  const std::string opts = KernelMountOptions(options);
  fuse_args args = FUSE_ARGS_INIT(0, nullptr);
  fuse_opt_add_arg(&args, "ossmount");
  fuse_opt_add_arg(&args, "-o");
  fuse_opt_add_arg(&args, opts.c_str());
  if (options.debug) fuse_opt_add_arg(&args, "-d");
  impl->se = fuse_session_new(&args, &AdapterOps(), sizeof(fuse_lowlevel_ops), impl->ctx.get());
  fuse_opt_free_args(&args);
  if (impl->se == nullptr) {
    return Status(ErrorCode::kInternal,
                  "creating the FUSE session failed (mount options '" + opts + "')");
  }
  // libfuse takes "/dev/fd/N" as a descriptor mounted already.
  const std::string target = options.resumable
                                 ? "/dev/fd/" + std::to_string(options.resumable->device_fd)
                                 : options.mountpoint;
  if (fuse_session_mount(impl->se, target.c_str()) != 0) {
    fuse_session_destroy(impl->se);
    impl->se = nullptr;
    std::string hint =
        "check that /dev/fuse exists and is accessible, that fusermount3 is installed";
    if (options.allow_other || options.allow_root) {
      hint +=
          ", and that /etc/fuse.conf has 'user_allow_other' (needed for --allow-other "
          "and --allow-root unless run as root)";
    }
    return Status(ErrorCode::kInternal, "mounting on '" + options.mountpoint + "' failed: " + hint);
  }
  impl->mounted = true;
  impl->ctx->session = impl->se;
  impl->hooks_installed = impl->device_hooks->Install(impl->se);  // before the loop reads INIT
  if (options.resumable && options.resumable->resume && !impl->hooks_installed) {
    fuse_session_destroy(impl->se);
    impl->se = nullptr;
    return Status(ErrorCode::kNotSupported,
                  "cannot resume the FUSE connection: libfuse refused the I/O hooks");
  }
  impl->connection = FindConnection(options.mountpoint);
  if (pipe2(impl->exit_pipe, O_CLOEXEC) != 0) {
    fuse_session_unmount(impl->se);
    fuse_session_destroy(impl->se);
    impl->se = nullptr;
    return Status(ErrorCode::kInternal, std::string("pipe2: ") + std::strerror(errno));
  }
  fcntl(impl->exit_pipe[1], F_SETFL, O_NONBLOCK);  // a signal handler must never block
  InstallHandler(SIGUSR1, OnWakeSignal);
  spdlog::info("mounted {} on {} (FUSE connection {})", options.fsname, options.mountpoint,
               impl->connection);
  return std::unique_ptr<FuseServer>(new FuseServer(std::move(impl)));
}

void FuseServer::InstallSignalHandlers() {
  g_signal_exit_fd.store(impl_->exit_pipe[1]);
  InstallHandler(SIGINT, OnTerminationSignal);
  InstallHandler(SIGTERM, OnTerminationSignal);
  InstallHandler(SIGHUP, OnTerminationSignal);
  signal(SIGPIPE, SIG_IGN);
}

Status FuseServer::Run() {
  Impl& d = *impl_;
  d.loop_thread = pthread_self();
  d.loop_done.store(false);
  std::thread watcher([&d] { d.WatchForExit(); });
  // Make sure the loop thread itself can be woken even if the caller blocked SIGUSR1.
  sigset_t wake;
  sigemptyset(&wake);
  sigaddset(&wake, SIGUSR1);
  sigset_t old;
  pthread_sigmask(SIG_UNBLOCK, &wake, &old);

  fuse_loop_config config{};
  config.clone_fd = d.options.resumable ? 0 : 1;
  config.max_idle_threads = d.options.max_idle_threads;
  int rc = fuse_session_loop_mt(d.se, &config);

  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  d.loop_done.store(true);
  ssize_t ignored = write(d.exit_pipe[1], "q", 1);
  (void)ignored;
  watcher.join();
  spdlog::info("FUSE loop ended (rc {}); {} request(s) still being answered", rc,
               d.ctx->tracker.outstanding());
  if (std::string why = d.uring->fatal(); !why.empty()) {
    return Status(ErrorCode::kNotSupported,
                  "FUSE over io_uring was agreed with the kernel but its rings could not be "
                  "set up (" +
                      why + "); start again with --fuse-io-uring off");
  }
  // libfuse reports the signal or unmount that ended the loop as a "failure" in some
  // versions; only errors other than those are worth returning.
  if (rc != 0 && rc != -EINTR && rc != -ENODEV && rc != EINTR && rc != 1 && rc != -1) {
    return Status(ErrorCode::kInternal,
                  std::string("FUSE loop failed: ") + std::strerror(rc < 0 ? -rc : rc));
  }
  return Status::Ok();
}

void FuseServer::RequestExit() {
  if (impl_->exit_pipe[1] >= 0) {
    ssize_t ignored = write(impl_->exit_pipe[1], "x", 1);
    (void)ignored;
  }
}

void FuseServer::Unmount() {
  if (impl_->mounted) {
    // The rings hold the device open: stopped first, so that closing the session's fd
    // ends the connection (and fails what its callers still wait for) as it does without
    // them.
    impl_->uring->Stop();
    fuse_session_unmount(impl_->se);
    impl_->mounted = false;
    spdlog::info("unmounted {}", impl_->options.mountpoint);
  }
}

bool FuseServer::Drain(std::chrono::milliseconds grace) {
  RequestTracker& tracker = impl_->ctx->tracker;
  if (tracker.WaitIdle(grace)) return true;
  spdlog::warn("{} FUSE request(s) still unanswered after {} ms; answering them with EIO",
               tracker.outstanding(), grace.count());
  // Answer what we owe, so the callers return and libfuse drops its references to the
  // device fds (the kernel aborts the connection when the last one closes, which also
  // fails requests still queued in the kernel). Aborting through fusectl first, when it
  // is mounted, releases those queued requests at once.
  impl_->AbortConnection();
  tracker.AnswerAllPending(EIO);
  tracker.WaitIdle(grace);
  return false;
}

int64_t FuseServer::outstanding() const { return impl_->ctx->tracker.outstanding(); }

bool FuseServer::WaitForInit(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  if (!impl_->hooks_installed) return true;  // nothing tells: taken as serving
  while (!impl_->device_hooks->init_delivered()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

bool FuseServer::resend_sent() const { return impl_->device_hooks->resend_sent(); }

const std::string& FuseServer::mountpoint() const { return impl_->options.mountpoint; }

FuseServer::~FuseServer() {
  Unmount();
  if (g_signal_exit_fd.load() == impl_->exit_pipe[1]) g_signal_exit_fd.store(-1);
  if (impl_->ctx->tracker.outstanding() == 0) {
    fuse_session_destroy(impl_->se);
  } else {
    // A late reply into a destroyed session would be a use-after-free: leak it instead.
    spdlog::error("{} FUSE request(s) never answered; leaving the session allocated",
                  impl_->ctx->tracker.outstanding());
    impl_->ctx.release();
    impl_->passthrough.release();  // the device hooks reach it through ctx
    impl_->device_hooks.release();
    impl_->uring.release();  // late replies still look up its entries
    impl_->se = nullptr;
    return;  // the pipes are leaked too: a late signal must not write to a reused fd
  }
  for (int fd : impl_->exit_pipe) {
    if (fd >= 0) close(fd);
  }
}

}  // namespace ossmount::fuse
