#include "supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "common/record_log.h"
#include "common/unique_fd.h"
#include "fs/handle_records.h"
#include "fuse/mounted_device.h"
#include "handover.h"
#include "systemd_store.h"

extern char** environ;

namespace ossmount::daemon {
namespace {

std::string DescribeEnd(int status) {
  if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    return "was killed by signal " + std::to_string(WTERMSIG(status)) +
           (name != nullptr ? std::string(" (SIG") + name + ")" : std::string());
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

sigset_t HandledSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR2, SIGCHLD}) sigaddset(&set, sig);
  return set;
}

// How long a supervisor that systemd restarts waits for the files open for writing to close
// (below ossmount@.service's TimeoutStopSec=30, after which systemd kills the unit anyway).
constexpr std::chrono::seconds kRestartWait{20};

struct Child {
  pid_t pid = -1;
  UniqueFd report;    // the read end of its StartupReporter pipe, until its verdict
  std::string lines;  // what it reported, not yet handled
  std::string error;  // its "ERR" message
  bool ready = false;
  std::chrono::steady_clock::time_point ready_at;
};

// Starts the child with the signals of `mask` (the caller's, before the supervisor blocked its
// own). Between fork and exec only async-signal-safe calls.
// `run` says what the child is told; its report_fd is made here.
Result<Child> StartChild(const std::vector<std::string>& args, SupervisedRun run,
                         const sigset_t& mask) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return Status(ErrorCode::kInternal, std::string("pipe: ") + std::strerror(errno));
  }
  UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  std::vector<std::string> argv_text = {"ossmount"};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  run.report_fd = write_end.get();
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    // systemd hears from the supervisor only; the supervisor's own variables are replaced.
    if (entry.rfind("NOTIFY_SOCKET=", 0) == 0 || IsSupervisedRunEntry(entry)) continue;
    env_text.push_back(std::move(entry));
  }
  for (std::string& entry : SupervisedRunEnvironment(run)) env_text.push_back(std::move(entry));
  std::vector<char*> argv, envp;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  const pid_t parent = getpid();
  const int report_fd = write_end.get();
  const int device_fd = run.device_fd;
  const pid_t pid = fork();
  if (pid < 0) return Status(ErrorCode::kInternal, std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, &mask, nullptr);
    // A supervisor that dies takes its child with it: the mount then fails as it does without
    // one, and the next start clears it.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    fcntl(device_fd, F_SETFD, 0);
    fcntl(report_fd, F_SETFD, 0);
    execve("/proc/self/exe", argv.data(), envp.data());
    _exit(127);
  }
  Child child;
  child.pid = pid;
  child.report = std::move(read_end);
  return child;
}

// Files open for writing in the running daemon, from its handle records.
size_t WritersOpen(const std::string& state_dir) {
  auto records = RecordLog::Load(state_dir + "/handles");
  if (!records.ok()) return 0;
  size_t writers = 0;
  for (const auto& [fh, record] : fs::HandleRecords::Decode(*records)) {
    if (record.kind == fs::HandleRecord::Kind::kWrite) ++writers;
  }
  return writers;
}

class Supervisor {
 public:
  Supervisor(const config::MountConfig& config, StartupReporter& reporter,
             const std::vector<std::string>& args, const sigset_t& child_mask,
             UniqueFd stored_mount)
      : config_(config),
        reporter_(reporter),
        args_(args),
        child_mask_(child_mask),
        stored_mount_(std::move(stored_mount)) {}

  int Run() {
    const std::string& mountpoint = config_.daemon.mountpoint;
    state_dir_ = StateDirForMountpoint(mountpoint);
    if (config_.daemon.take_over) {
      if (Status st = TakeOver(); !st.ok()) return Fail(st.message());
    } else if (stored_mount_) {
      ResumeStoredMount();
    } else {
      if (Status st = FreshStateDir(); !st.ok()) return Fail(st.message());
      fuse::FuseServerOptions options;
      options.mountpoint = mountpoint;
      options.fsname = "ossmount:" + config_.client.bucket;
      options.allow_other = config_.daemon.allow_other;
      options.allow_root = config_.daemon.allow_root;
      options.read_only = !config_.fs.writes.enabled;
      auto device = fuse::MountedDevice::Mount(options);
      if (!device.ok()) return Fail(device.status().message());
      device_ = std::move(*device);
      spdlog::info("supervisor: mounted {} (FUSE descriptor {}); the daemon runs as its child",
                   mountpoint, device_->fd());
    }
    // A supervisor that takes over listens once its daemon serves: until then the one it
    // takes over from may serve again, and must stay reachable.
    if (!took_over_) Listen();

    const sigset_t handled = HandledSignals();
    signals_.reset(signalfd(-1, &handled, SFD_CLOEXEC));
    if (!signals_) return Fail(std::string("signalfd: ") + std::strerror(errno));

    start_at_ = std::chrono::steady_clock::now();
    for (;;) {
      // (No child while the mount is being handed over: the new supervisor's serves next.)
      if (child_.pid < 0 && start_at_ && handover_ == HandOver::kNone &&
          std::chrono::steady_clock::now() >= *start_at_) {
        start_at_.reset();
        SupervisedRun run;
        run.device_fd = device_->fd();
        run.state_dir = state_dir_;
        run.restarts = restarts_;
        run.take_overs = take_overs_;
        run.resume = resume_next_;
        run.verified = ever_ready_;
        run.last_cause = last_cause_;
        run.died_ns = died_ns_;
        run.longest_pause_ms = longest_pause_ms_;
        auto started = StartChild(args_, run, child_mask_);
        if (!started.ok()) return GiveUp(started.status().message());
        child_ = std::move(*started);
        resume_next_ = true;  // every later child resumes what this one served
      }
      if (handover_ == HandOver::kWaitingForWriters) {
        if (std::optional<int> code = MaybeStopForHandOver()) return *code;
      }
      pollfd fds[4] = {{signals_.get(), POLLIN, 0},
                       {child_.report.get(), POLLIN, 0},
                       {listener_.get(), POLLIN, 0},
                       {handover_conn_.get(), POLLIN, 0}};
      int timeout = -1;
      if (start_at_ && handover_ == HandOver::kNone) {
        timeout = static_cast<int>(
            std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(
                                     *start_at_ - std::chrono::steady_clock::now())
                                     .count()));
      }
      if (handover_ == HandOver::kWaitingForWriters) timeout = 100;  // polls the records
      if (poll(fds, 4, timeout) < 0 && errno != EINTR) {
        return GiveUp(std::string("poll: ") + std::strerror(errno));
      }
      if (child_.report && (fds[1].revents & (POLLIN | POLLHUP)) != 0) ReadReport();
      if (listener_ && (fds[2].revents & POLLIN) != 0) OnTakeOverRequest();
      if (handover_conn_ && (fds[3].revents & (POLLIN | POLLHUP)) != 0) {
        if (std::optional<int> code = OnNewSupervisorMessage()) return *code;
      }
      if ((fds[0].revents & POLLIN) != 0) {
        signalfd_siginfo info{};
        if (read(signals_.get(), &info, sizeof(info)) != sizeof(info)) continue;
        const int sig = static_cast<int>(info.ssi_signo);
        if (sig == SIGCHLD) {
          if (std::optional<int> code = Reap()) return *code;
        } else if (sig == SIGUSR2 || sig == SIGHUP) {
          if (child_.pid > 0) kill(child_.pid, sig);  // debug toggle, log reopening
        } else if (leaving_for_restart_) {
          continue;  // leaving already, the mount kept for the next start
        } else {
          if (sig == SIGTERM && stored_in_systemd_ && handover_ == HandOver::kNone && !stopping_) {
            std::string why;
            if (SystemdRestartsThisUnit(&why)) {
              BeginLeavingForRestart();
              if (std::optional<int> code = MaybeStopForHandOver()) return *code;
              continue;
            }
            spdlog::info("supervisor: unmounting: {}", why);
          }
          spdlog::info("supervisor: signal {}; stopping the daemon", sig);
          if (!stopping_ && ever_ready_) reporter_.Stopping();
          stopping_ = true;
          if (handover_ == HandOver::kWaitingForWriters) CancelHandOver("this supervisor stops");
          if (child_.pid > 0) {
            kill(child_.pid, SIGTERM);
          } else if (handover_ == HandOver::kNone) {
            return Finish(0);
          }
        }
      }
    }
  }

 private:
  enum class HandOver {
    kNone,
    kWaitingForWriters,  // a take-over was asked for; files open for writing are closing
    kStopping,           // the daemon was told to stop; the descriptor goes when it is gone
    kSent,               // the new supervisor has the descriptor; waiting for it to serve
  };

  Status FreshStateDir() {
    std::error_code ec;
    std::filesystem::remove_all(state_dir_, ec);  // an earlier mount's: nothing to resume
    std::filesystem::create_directories(state_dir_, ec);
    if (ec) {
      return Status(ErrorCode::kInvalidArgument,
                    "cannot create " + state_dir_ + " for the daemon's records: " + ec.message());
    }
    std::filesystem::permissions(state_dir_, std::filesystem::perms::owner_all, ec);
    return Status::Ok();
  }

  // The mount of this unit's last run, kept by systemd across its restart.
  void ResumeStoredMount() {
    device_ = fuse::MountedDevice::Adopt(std::move(stored_mount_), config_.daemon.mountpoint);
    const int64_t left_ns = LoadCounters();
    ++restarts_;
    resume_next_ = true;
    resumed_stored_mount_ = true;
    last_cause_ = left_ns > 0
                      ? "was restarted by systemd"
                      : "was killed with its supervisor, and systemd started the unit again";
    // A supervisor killed with its daemon left no time: the pause is counted from this start.
    died_ns_ = left_ns > 0 ? left_ns : MonotonicNs();
    spdlog::info(
        "supervisor: systemd kept the mount of {} (FUSE descriptor {}); the daemon resumes it",
        config_.daemon.mountpoint, device_->fd());
  }

  // The history `ossmount stats` shows, kept in the state directory for a supervisor that
  // resumes a mount systemd kept; `left_ns` is when this one left it (0: it serves).
  void SaveCounters(int64_t left_ns) {
    std::ofstream out(state_dir_ + "/supervisor", std::ios::trunc);
    out << restarts_ << ' ' << take_overs_ << ' ' << longest_pause_ms_ << ' ' << left_ns << '\n';
  }
  int64_t LoadCounters() {
    std::ifstream in(state_dir_ + "/supervisor");
    uint64_t restarts = 0, take_overs = 0;
    int64_t longest = 0, left_ns = 0;
    if (!(in >> restarts >> take_overs >> longest >> left_ns)) return 0;
    restarts_ = restarts;
    take_overs_ = take_overs;
    longest_pause_ms_ = longest;
    return left_ns;
  }

  // Stores the mount's descriptor in systemd's store, for the unit's next start.
  void StoreInSystemd() {
    if (std::getenv("NOTIFY_SOCKET") == nullptr) return;
    if (Status st = StoreDescriptor(device_->fd(), kStoredFuseName); !st.ok()) {
      spdlog::warn(
          "supervisor: systemd's descriptor store refused the mount ({}); a restart "
          "of the unit will remount",
          st.message());
      return;
    }
    stored_in_systemd_ = true;
  }

  // systemd restarts the unit: the daemon stops as for a hand-over, and the mount waits in
  // systemd's descriptor store for the next start.
  void BeginLeavingForRestart() {
    leaving_for_restart_ = true;
    reporter_.Stopping();
    spdlog::info(
        "supervisor: systemd restarts this unit; the mount stays, held by systemd, for its next "
        "start (once the files open for writing are closed, at most {} s)",
        kRestartWait.count());
    handover_ = HandOver::kWaitingForWriters;
    handover_deadline_ = std::chrono::steady_clock::now() + kRestartWait;
  }

  int LeaveForRestart() {
    SaveCounters(MonotonicNs());
    if (listener_) unlink(SupervisorSocketPath(config_.daemon.mountpoint).c_str());
    device_->Release();
    spdlog::info("supervisor: the daemon stopped; systemd holds the mount for the next start");
    return 0;
  }

  // --take-over: the connection (and the records) of the supervisor serving the mount.
  Status TakeOver() {
    const std::string path = SupervisorSocketPath(config_.daemon.mountpoint);
    auto conn = ConnectForTakeOver(path);
    if (!conn.ok()) {
      return Status(ErrorCode::kNotFound,
                    "--take-over: no ossmount serves " + config_.daemon.mountpoint + " (" +
                        conn.status().message() + "); mount it without --take-over");
    }
    spdlog::info("supervisor: asking the ossmount serving {} to hand its mount over",
                 config_.daemon.mountpoint);
    if (Status st = WriteLine(conn->get(), std::string("take-over ") + OSSMOUNT_VERSION);
        !st.ok()) {
      return st;
    }
    UniqueFd fd;
    auto answer = ReadLine(conn->get(), kHandOverWait + std::chrono::seconds(60), &fd);
    if (!answer.ok()) {
      return Status(answer.status().code(),
                    "--take-over: the ossmount serving " + config_.daemon.mountpoint +
                        " did not hand its mount over: " + answer.status().message());
    }
    unsigned long long restarts = 0, take_overs = 0;
    long long longest = 0;
    if (std::sscanf(answer->c_str(), "handed %llu %llu %lld", &restarts, &take_overs, &longest) !=
            3 ||
        !fd) {
      return Status(ErrorCode::kProtocol, "--take-over: the ossmount serving " +
                                              config_.daemon.mountpoint + " answered '" + *answer +
                                              "'");
    }
    device_ = fuse::MountedDevice::Adopt(std::move(fd), config_.daemon.mountpoint);
    took_over_ = std::move(*conn);
    restarts_ = restarts;
    take_overs_ = take_overs + 1;
    longest_pause_ms_ = longest;
    resume_next_ = true;
    last_cause_ = "was stopped to hand the mount over to ossmount " OSSMOUNT_VERSION;
    died_ns_ = MonotonicNs();
    spdlog::info("supervisor: took the mount over (FUSE descriptor {}); starting its daemon",
                 device_->fd());
    return Status::Ok();
  }

  // Where a later `ossmount --take-over` asks for the mount (replacing the socket of the
  // supervisor this one took over from).
  void Listen() {
    auto listening = ListenForTakeOver(SupervisorSocketPath(config_.daemon.mountpoint));
    if (listening.ok()) {
      listener_ = std::move(*listening);
    } else {
      spdlog::warn("supervisor: no take-over socket ({}); upgrades must remount",
                   listening.status().message());
    }
  }

  void OnTakeOverRequest() {
    auto conn = AcceptPeer(listener_.get());
    if (!conn.ok()) {
      spdlog::warn("supervisor: take-over refused: {}", conn.status().message());
      return;
    }
    auto request = ReadLine(conn->get(), std::chrono::seconds(5));
    if (!request.ok() || request->rfind("take-over", 0) != 0) return;
    if (handover_ != HandOver::kNone || stopping_ || !ever_ready_) {
      (void)WriteLine(conn->get(),
                      "refused: this mount is stopping, starting or being handed "
                      "over already");
      return;
    }
    spdlog::info(
        "supervisor: {} asks for the mount; handing it over once the files open for "
        "writing are closed (at most {} s)",
        request->size() > 10 ? "ossmount " + request->substr(10) : "an ossmount",
        kHandOverWait.count());
    handover_conn_ = std::move(*conn);
    handover_ = HandOver::kWaitingForWriters;
    handover_deadline_ = std::chrono::steady_clock::now() + kHandOverWait;
  }

  // Stops the daemon for the hand-over once no file is open for writing, or at the deadline.
  std::optional<int> MaybeStopForHandOver() {
    const size_t writers = WritersOpen(state_dir_);
    const bool late = std::chrono::steady_clock::now() >= handover_deadline_;
    if (writers > 0 && !late) return std::nullopt;
    if (writers > 0) {
      spdlog::warn("supervisor: {} file(s) still open for writing after {} s; they get EIO",
                   writers, leaving_for_restart_ ? kRestartWait.count() : kHandOverWait.count());
    }
    handover_ = HandOver::kStopping;
    if (child_.pid > 0) {
      // Killed, not stopped: a stop would drain and abort the connection's requests, while
      // the requests it holds now are resent to the next daemon, like a crash's.
      kill(child_.pid, SIGKILL);
      return std::nullopt;
    }
    if (leaving_for_restart_) return LeaveForRestart();
    return SendHandOver();
  }

  std::optional<int> SendHandOver() {
    const std::string line = "handed " + std::to_string(restarts_) + " " +
                             std::to_string(take_overs_) + " " + std::to_string(longest_pause_ms_);
    if (Status st = WriteLine(handover_conn_.get(), line, device_->fd()); !st.ok()) {
      CancelHandOver(st.message());
      return std::nullopt;
    }
    handover_ = HandOver::kSent;
    spdlog::info("supervisor: handed the FUSE connection over; waiting for the new daemon");
    return std::nullopt;
  }

  // The new supervisor's "serving", or its end.
  std::optional<int> OnNewSupervisorMessage() {
    auto line = ReadLine(handover_conn_.get(), std::chrono::seconds(1));
    if (line.ok() && *line == "serving" && handover_ == HandOver::kSent) {
      spdlog::info("supervisor: the new ossmount serves {}; exiting", config_.daemon.mountpoint);
      device_->Release();  // the mount is theirs now, and so are the records and the socket
      return 0;
    }
    if (line.ok()) return std::nullopt;
    CancelHandOver("the new ossmount ended before it served (" + line.status().message() + ")");
    if (stopping_ && child_.pid < 0) return Finish(0);
    return std::nullopt;
  }

  void CancelHandOver(const std::string& why) {
    const HandOver was = handover_;
    handover_ = HandOver::kNone;
    handover_conn_.reset();
    if (was == HandOver::kNone) return;
    spdlog::warn("supervisor: no hand-over: {}", why);
    if (was != HandOver::kWaitingForWriters && child_.pid < 0 && !stopping_) {
      // This supervisor's daemon was stopped for it: serve again.
      ++restarts_;
      last_cause_ = "was stopped for a hand-over that did not happen";
      died_ns_ = MonotonicNs();
      start_at_ = std::chrono::steady_clock::now();
    }
  }

  int Fail(const std::string& message) {
    spdlog::error("{}", message);
    reporter_.Fail(message);
    return 1;
  }

  int GiveUp(const std::string& why) {
    spdlog::error("supervisor: {}; unmounting {}", why, config_.daemon.mountpoint);
    const int code = Finish(1);
    // After the unmount: whoever waits for the start (the background parent) then finds the
    // mount point as it was.
    if (!ever_ready_) reporter_.Fail(why);
    return code;
  }

  int Finish(int code) {
    if (took_over_) {
      // Not served yet: the supervisor it came from still holds the connection and serves
      // again once this one closes the socket.
      device_->Release();
      return code;
    }
    if (stored_in_systemd_) (void)RemoveStoredDescriptor(kStoredFuseName);
    if (device_) device_->Unmount();
    std::error_code ec;
    std::filesystem::remove_all(state_dir_, ec);
    if (listener_) unlink(SupervisorSocketPath(config_.daemon.mountpoint).c_str());
    return code;
  }
  // The child's StartupReporter lines: notes, then "OK" or "ERR message".
  void ReadReport() {
    char buf[4096];
    ssize_t n = read(child_.report.get(), buf, sizeof buf);
    if (n <= 0) {
      if (n == 0 || errno != EINTR) child_.report.reset();
      return;
    }
    child_.lines.append(buf, static_cast<size_t>(n));
    // Notes, one per line, then the verdict: "OK", or "ERR " and a message that may span
    // lines (the pipe's end closes it).
    std::string& lines = child_.lines;
    size_t end;
    while (lines.rfind("NOTE ", 0) == 0 && (end = lines.find('\n')) != std::string::npos) {
      if (!ever_ready_) reporter_.Note(lines.substr(5, end - 5));
      lines.erase(0, end + 1);
    }
    if (lines.rfind("OK", 0) == 0) {
      lines.clear();
      OnReady();
    } else if (lines.rfind("ERR ", 0) == 0) {
      child_.error = lines.substr(4);
    }
  }

  void OnReady() {
    child_.ready = true;
    child_.ready_at = std::chrono::steady_clock::now();
    if (!ever_ready_) {
      ever_ready_ = true;
      StoreInSystemd();
      if (took_over_) {
        (void)WriteLine(took_over_.get(), "serving");
        took_over_.reset();
        Listen();
        const int64_t pause_ms = (MonotonicNs() - died_ns_) / 1000000;
        longest_pause_ms_ = std::max(longest_pause_ms_, pause_ms);
        spdlog::info(
            "supervisor: took over; the mount is served again {} ms after the "
            "connection was handed over",
            pause_ms);
      }
      if (resumed_stored_mount_) LogResumedPause();
      if (stored_in_systemd_) SaveCounters(0);
      reporter_.Ready();
      return;
    }
    LogResumedPause();
    if (stored_in_systemd_) SaveCounters(0);
  }

  void LogResumedPause() {
    const int64_t pause_ms = (MonotonicNs() - died_ns_) / 1000000;
    longest_pause_ms_ = std::max(longest_pause_ms_, pause_ms);
    spdlog::info("supervisor: the mount is served again, {} ms after the daemon {}", pause_ms,
                 last_cause_);
  }

  // Reaps exited children; the exit status to return when the supervisor is done.
  std::optional<int> Reap() {
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      if (pid != child_.pid) continue;
      if (child_.report) {
        // Its last words (an ERR line written just before it exited).
        while (child_.report) ReadReport();
      }
      child_.pid = -1;
      child_.report.reset();
      if (std::optional<int> code = OnChildEnd(status)) return code;
    }
    return std::nullopt;
  }

  std::optional<int> OnChildEnd(int status) {
    const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    const std::string cause = DescribeEnd(status);
    if (handover_ == HandOver::kStopping) {
      child_ = Child{};
      if (leaving_for_restart_) return LeaveForRestart();
      return SendHandOver();
    }
    if (stopping_ || clean) {
      spdlog::info("supervisor: the daemon {}; unmounting", cause);
      if (!stopping_ && ever_ready_) reporter_.Stopping();  // an unmount ended it
      // The child's status, as a shell would report it (143 for a start ended by SIGTERM).
      return Finish(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
    if (!ever_ready_) {
      const int code = Finish(1);  // unmounted before the failure is reported, as above
      reporter_.Fail(child_.error.empty() ? "the daemon " + cause + " before the mount was ready"
                                          : child_.error);
      return code;
    }
    const bool steady =
        child_.ready && std::chrono::steady_clock::now() - child_.ready_at >= kSteadyRun;
    quick_deaths_ = steady ? 1 : quick_deaths_ + 1;
    last_cause_ = cause;
    died_ns_ = MonotonicNs();
    if (quick_deaths_ > kMaxQuickDeaths) {
      return GiveUp("the daemon died " + std::to_string(quick_deaths_) +
                    " times in a row, each within " + std::to_string(kSteadyRun.count()) +
                    " s of its start (the last " + cause + ")");
    }
    // The first restarts at once (the pause is what readers feel), then 100 ms doubling up to
    // 5 s.
    const int late = quick_deaths_ - kImmediateRestarts;
    const auto delay = std::chrono::milliseconds(
        late <= 0 ? 0 : std::min<int64_t>(int64_t{100} << std::min(late - 1, 6), 5000));
    ++restarts_;
    spdlog::warn("supervisor: the daemon {}{}; starting another on the same mount in {} ms", cause,
                 child_.error.empty() ? "" : " (" + child_.error + ")", delay.count());
    start_at_ = std::chrono::steady_clock::now() + delay;
    child_ = Child{};
    return std::nullopt;
  }

  const config::MountConfig& config_;
  StartupReporter& reporter_;
  const std::vector<std::string>& args_;
  std::string state_dir_;
  std::unique_ptr<fuse::MountedDevice> device_;
  const sigset_t child_mask_;
  UniqueFd stored_mount_;              // systemd's copy of the mount's descriptor, until adopted
  bool stored_in_systemd_ = false;     // systemd holds the descriptor for the unit's next start
  bool leaving_for_restart_ = false;   // systemd restarts the unit; the mount stays
  bool resumed_stored_mount_ = false;  // this supervisor started on the mount systemd kept
  UniqueFd signals_;
  Child child_;
  std::optional<std::chrono::steady_clock::time_point> start_at_;
  UniqueFd listener_;       // take-over requests
  UniqueFd handover_conn_;  // the supervisor taking this mount over
  HandOver handover_ = HandOver::kNone;
  std::chrono::steady_clock::time_point handover_deadline_;
  UniqueFd took_over_;  // the supervisor this one took over from, until its daemon serves
  bool resume_next_ = false;
  uint64_t take_overs_ = 0;
  bool ever_ready_ = false;
  bool stopping_ = false;
  int quick_deaths_ = 0;
  uint64_t restarts_ = 0;
  std::string last_cause_;
  int64_t died_ns_ = 0;
  int64_t longest_pause_ms_ = 0;
};

}  // namespace

sigset_t BlockSupervisorSignals() {
  const sigset_t handled = HandledSignals();
  sigset_t before;
  pthread_sigmask(SIG_BLOCK, &handled, &before);
  return before;
}

int RunSupervisor(const config::MountConfig& config, StartupReporter& reporter,
                  const std::vector<std::string>& args, const sigset_t& child_mask,
                  UniqueFd stored_mount) {
  Supervisor supervisor(config, reporter, args, child_mask, std::move(stored_mount));
  return supervisor.Run();
}

}  // namespace ossmount::daemon
