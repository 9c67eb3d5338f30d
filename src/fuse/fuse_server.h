// FuseServer: one FUSE mount of an fs::Filesystem, served by libfuse's multi-threaded
// low-level loop. The only public entry point of src/fuse (fuse_lowlevel.h stays inside).
//
// Life cycle (daemon/mount_session.cc):
//   auto server = FuseServer::Mount(fs, hooks, options);  // mounted, not yet served
//   server->InstallSignalHandlers();  // SIGINT/SIGTERM/SIGHUP -> RequestExit
//   server->Run();         // serves until RequestExit(), a signal, or `fusermount3 -u`
//   server->Unmount();     // lazy unmount (no-op if already unmounted)
//   server->Drain(grace);  // waits for in-flight replies, then answers the rest EIO
//   hooks->EndSession();   // releases the handles the kernel never released
//   (tear down the Filesystem and io_context: dropped handlers reply EIO)
//   server.reset();        // destroys the session (or leaks it if replies are still owed)
//
// Mount options: fsname=<options.fsname>, subtype=ossmount, ro (rw when the Filesystem
// writes), default_permissions, plus allow_other / allow_root when asked. Ops never block: each
// starts an asynchronous Filesystem call and returns. Run() wakes its own thread with SIGUSR1 (a
// no-op handler installed by Mount): callers must not repurpose SIGUSR1, and other threads should
// block the termination signals (BlockTerminationSignals).
//
// Thread-safety: RequestExit() may be called from any thread (and from a signal handler);
// the other methods from one controlling thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "fs/filesystem.h"
#include "fs/session_hooks.h"
#include "ossmount/status.h"

namespace ossmount::fuse {

// Who sent a control request, as the FUSE request says (pid 0: not visible from the
// daemon's pid namespace).
struct ControlCaller {
  int pid = 0;
  unsigned uid = 0;
  std::string directory;  // the directory the ioctl was sent on, relative to the root
};

// Answers one control request (its JSON text) that arrived by ioctl on a directory of the
// mount (ossmount/control_ioctl.h); calls `done` exactly once with the answer, from any
// thread.
using ControlAnswerer = std::function<void(std::string request, ControlCaller caller,
                                           std::function<void(std::string answer)> done)>;

// How requests reach the daemon (fuse/uring_transport.h).
enum class FuseRingMode {
  kAuto,  // through io_uring rings when the kernel's switch is on, else /dev/fuse
  kOn,    // the same, but turn the switch on first (root), and fail the mount if it cannot be
  kOff,   // /dev/fuse only
};

// A connection that outlives the process serving it: a supervisor mounted it and holds its
// descriptor, and a process that starts after one died resumes it (fuse/device_hooks.h).
struct ResumableConnection {
  int device_fd = -1;       // the mounted /dev/fuse descriptor, inherited from the supervisor
  std::string init_record;  // where the connection's INIT is recorded
  bool resume = false;      // another process served it before: replay INIT, resend requests
};

struct FuseServerOptions {
  std::string mountpoint;           // absolute path of an existing directory
  std::string fsname = "ossmount";  // shown in mount(8) and /proc/mounts
  bool allow_other = false;
  bool allow_root = false;
  bool read_only = true;       // mounted "ro" (the kernel refuses writes itself); false: "rw"
  bool debug = false;          // libfuse prints every request to stderr
  bool cache_readdir = false;  // the kernel may cache listings (metadata TTL indefinite)
  unsigned max_idle_threads = 16;
  unsigned max_background = 128;
  unsigned congestion_threshold = 96;
  // FUSE passthrough for files whose bytes the disk cache holds, where the kernel offers it
  // (fuse/passthrough.h), unless this says why not (logged).
  std::string no_passthrough_reason;
  // Control requests by ioctl on a directory of the mount; without it, such ioctls get
  // ENOTTY like any other.
  ControlAnswerer control;
  // FUSE over io_uring, and the kernel's switch for it (fuse/uring_switch.h; another path
  // only in tests).
  FuseRingMode io_uring = FuseRingMode::kAuto;
  std::string uring_switch_path = "/sys/module/fuse/parameters/enable_uring";
  // Served on a supervisor's descriptor rather than mounted here. Every worker then reads that
  // one descriptor (a request read through a clone of it would end with ECONNABORTED when this
  // process dies, instead of being resent), and no io_uring rings are used (a request a dead
  // process's ring entry held would be neither answered nor resent).
  std::optional<ResumableConnection> resumable;
};

class FuseServer {
 public:
  // Creates the session and mounts it. Nothing is served until Run(). Errors say what to
  // check (permissions, /dev/fuse, user_allow_other). `hooks` (required, usually the
  // Filesystem itself) get passthrough wishes, transport buffers and control requests'
  // directories.
  static Result<std::unique_ptr<FuseServer>> Mount(std::shared_ptr<fs::Filesystem> fs,
                                                   std::shared_ptr<fs::SessionHooks> hooks,
                                                   FuseServerOptions options);
  ~FuseServer();
  FuseServer(const FuseServer&) = delete;
  FuseServer& operator=(const FuseServer&) = delete;

  // Installs process-wide handlers (the daemon then re-points SIGHUP at reopening its log
  // files, daemon/logging.h): SIGINT, SIGTERM and SIGHUP end Run(); SIGPIPE is
  // ignored. Only one FuseServer per process may install them.
  void InstallSignalHandlers();

  // Serves requests until asked to stop or the file system is unmounted. Returns OK for a
  // normal end (exit request, signal, fusermount3 -u).
  Status Run();

  // Ends Run() soon. Safe from any thread and from a signal handler; idempotent.
  void RequestExit();

  // Unmounts (lazily) and closes the session's device fd. With FUSE over io_uring the
  // rings are stopped first, so their requests still owed are failed by the kernel
  // (ENOTCONN) once the device closes, as requests queued in /dev/fuse are. Idempotent.
  void Unmount();

  // After Run() and Unmount(): waits up to `grace` for the Filesystem to answer what is
  // still owed. Whatever remains is answered EIO here (and the connection is aborted via
  // fusectl when it is mounted), so no caller stays blocked; the Filesystem's own late
  // replies become no-ops. True when everything was answered by the Filesystem in time.
  bool Drain(std::chrono::milliseconds grace);

  // Requests accepted but not yet answered.
  int64_t outstanding() const;

  // Resuming: whether the kernel accepted to resend what the process before left unanswered.
  bool resend_sent() const;

  // Waits (while Run() serves) until the kernel has the INIT reply, up to `timeout`: how a
  // mount on a passed descriptor (/dev/fd/N, no path to stat) knows it serves. True once it
  // does.
  bool WaitForInit(std::chrono::milliseconds timeout) const;

  const std::string& mountpoint() const;

 private:
  struct Impl;
  explicit FuseServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Blocks SIGINT, SIGTERM, SIGHUP and SIGUSR1 in the calling thread (call it at the start of
// worker threads, or before creating them: new threads inherit the mask).
void BlockTerminationSignals();

}  // namespace ossmount::fuse
