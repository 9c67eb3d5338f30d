// FUSE over io_uring (Linux 6.14+, CONFIG_FUSE_IO_URING, the fuse module's enable_uring
// parameter): instead of reading requests from /dev/fuse, the daemon registers ring
// entries on one queue per possible CPU, and a reply is committed together with the fetch
// of the next request in one io_uring command. A request goes to the queue of the CPU its
// caller runs on and is answered by that queue's thread, pinned to that CPU: one system
// call per request instead of a read and a writev, and no wake-up of another CPU
// (docs/BENCHMARKS.md has what that saved).
//
// libfuse 3.14 (Debian 12) has no ring support, so this class runs the rings itself and
// feeds each request to libfuse's dispatcher (fuse_session_process_buf) rebuilt in the
// /dev/fuse layout (uring_protocol.h); replies come back through libfuse's writev hook
// (DeviceHooks), which hands them to TryReply. /dev/fuse stays in use for what the kernel
// never sends through a ring (FORGET, INTERRUPT), for notifications, and for everything
// until every queue is registered.
//
// Threads: one per queue, pinned to its CPU, all signals blocked. A request answered while
// it is being dispatched (the file system answers from its caches: most of them) is
// committed by that thread with its next wait. A reply from another thread (an answer that
// waited for the network) is copied into its entry there and handed to the queue's thread
// through an eventfd: only that thread touches its ring (single issuer, and the kernel's
// task work runs only when the thread waits).
//
// Memory: each entry has a payload buffer as large as the connection's largest request or
// reply (1 MiB here), mapped untouched; only the bytes replies were copied into become
// resident, and those count in the data budget (count_buffers). EntriesPerQueue() bounds
// the entries: at most entries x queues x the payload size.
//
// Thread-safety: TryReply, active() and off_reason() may be called from any thread; the
// others from the device hooks' INIT handling and the server's start and stop, one at a
// time.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct fuse_session;

namespace ossmount::fuse {

class UringTransport {
 public:
  // `off_reason` non-empty: never offered to the kernel, and the log says why.
  // `entries_per_queue`: requests one CPU's callers can have with the daemon at once (more
  // wait in the kernel until an entry is free). `count_buffers` (may be empty) is told each
  // time the entries' buffers grow resident (a request or reply larger than any that entry
  // held before: the new pages), so that they count in the data budget; from any thread.
  UringTransport(std::string off_reason, unsigned entries_per_queue,
                 std::function<void(uint64_t bytes)> count_buffers = {});
  ~UringTransport();
  UringTransport(const UringTransport&) = delete;
  UringTransport& operator=(const UringTransport&) = delete;

  // Entries per queue for `cpus` possible CPUs: 32 in all, at least 8 per queue.
  static unsigned EntriesPerQueue(unsigned cpus);
  // The kernel's queue count: the number of possible CPUs (/sys/devices/system/cpu/possible).
  static unsigned PossibleCpus();
  // The CPUs in a kernel CPU list ("0-3,8-11": 8); 0 for none or a malformed one.
  static unsigned CountCpuList(const std::string& ranges);
  // Whether this process may create a ring with the queues' flags; else why not.
  static bool ProbeRing(std::string* why);

  // From the INIT request: whether the kernel offers the rings.
  void NoteInitRequest(uint32_t flags, uint32_t flags2);
  // Adds FUSE_OVER_IO_URING to a successful INIT reply (struct fuse_init_out at `out`)
  // when wanted and offered, and when this process may create a ring at all (a container's
  // seccomp profile or kernel.io_uring_disabled refuses it: then /dev/fuse, and the log
  // says why), and takes the entries' payload size from it.
  void AmendInitReply(char* out, size_t size);
  // After the INIT reply reached the kernel (only if it was amended): sets up the queues
  // and starts their threads, which register the entries. Once the kernel agreed to the
  // rings it holds every request until they are registered, so a failure here ends the
  // session (logged, with the way out: --fuse-io-uring off) instead of hanging the mount.
  void Start(fuse_session* se, int dev_fd);
  // Called (from the thread that delivered the INIT reply) when Start failed after the
  // kernel agreed to the rings: the owner ends the session. Set before the mount.
  void set_on_fatal(std::function<void()> on_fatal) { on_fatal_ = std::move(on_fatal); }
  // Why the rings failed after the kernel agreed to them; empty while they did not.
  std::string fatal() const;
  // Stops the threads and closes the rings. Replies after this are dropped: call it once
  // nothing is owed, or when the connection is going away. Idempotent.
  void Stop();

  // A reply as libfuse hands it to its writev hook (a fuse_out_header, then the
  // arguments). If it answers a request that came through a ring, it is copied into that
  // request's entry and committed, and true is returned; false for every other reply
  // (those go to /dev/fuse).
  bool TryReply(const ::iovec* iov, int count);

  // Whether every queue registered its entries (the kernel then sends requests through
  // the rings) and none failed since.
  bool active() const { return active_.load(std::memory_order_acquire); }
  // Why the rings are not in use ("" while they are, or before INIT).
  std::string off_reason() const;
  unsigned queues() const { return static_cast<unsigned>(queues_.size()); }
  unsigned entries_per_queue() const { return entries_per_queue_; }

  struct Queue;  // one CPU's ring, entries and thread (uring_transport.cc)
  struct Entry;

 private:
  friend struct Queue;
  void TurnOff(const std::string& why);
  void QueueRegistered();  // from each queue's thread, once its entries were accepted
  bool SetupQueues(fuse_session* se, int dev_fd, std::string* why);

  const bool wanted_;
  const unsigned entries_per_queue_;
  const std::function<void(uint64_t)> count_buffers_;
  bool offered_ = false;
  bool amended_ = false;
  std::function<void()> on_fatal_;
  std::string fatal_;  // guarded by mu_
  size_t payload_size_ = 0;
  std::atomic<bool> active_{false};
  std::atomic<bool> stopped_{false};
  // Set once queues_ is complete; queues_ is never changed after (until destruction).
  std::atomic<bool> queues_ready_{false};
  std::atomic<size_t> registered_{0};
  std::vector<std::unique_ptr<Queue>> queues_;
  mutable std::mutex mu_;  // guards off_reason_
  std::string off_reason_;
};

}  // namespace ossmount::fuse
