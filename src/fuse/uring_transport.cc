#include "fuse/uring_transport.h"

#include <fuse_lowlevel.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "common/metrics.h"
#include "fuse/fuse_wire.h"
#include "fuse/uring_protocol.h"

namespace ossmount::fuse {
namespace {

constexpr uint64_t kEventTag = 1;      // user_data of the eventfd read; entries are pointers
constexpr size_t kHeaderStride = 512;  // RequestHeader (288 bytes) slots, cache-line aligned

metrics::Counter& RingRequests() {
  static metrics::Counter& c = metrics::Registry::Global().GetCounter(
      "ossmount_fuse_ring_requests_total",
      "FUSE requests that arrived through io_uring rings instead of /dev/fuse.");
  return c;
}

metrics::Gauge& RingQueues() {
  static metrics::Gauge& g = metrics::Registry::Global().GetGauge(
      "ossmount_fuse_ring_queues",
      "io_uring queues carrying FUSE requests (one per possible CPU); 0: /dev/fuse.");
  return g;
}

metrics::Gauge& RingEntries() {
  static metrics::Gauge& g = metrics::Registry::Global().GetGauge(
      "ossmount_fuse_ring_entries_per_queue",
      "Requests one CPU's callers can have with the daemon at once through its ring.");
  return g;
}

std::string RingErrno(int e) { return std::strerror(e < 0 ? -e : e); }

}  // namespace

struct UringTransport::Entry {
  Queue* queue = nullptr;
  uring::RequestHeader* header = nullptr;
  char* payload = nullptr;
  ::iovec iov[2]{};
  uint32_t command = uring::kCmdRegister;  // the command to (re)send for this entry
  uint64_t commit_id = 0;
  // Bytes of the payload buffer written so far (whole pages): what it holds resident.
  // Written only by whoever holds the entry (the queue's thread while dispatching, the
  // replying thread before it hands the entry back).
  size_t touched = 0;
  // The request this entry holds while the daemon answers it; 0 while the kernel has it.
  std::atomic<uint64_t> unique{0};
};

struct UringTransport::Queue {
  UringTransport* owner = nullptr;
  unsigned qid = 0;
  fuse_session* se = nullptr;
  int dev_fd = -1;
  size_t payload_size = 0;
  io_uring ring{};
  bool ring_open = false;
  int event_fd = -1;
  uint64_t event_value = 0;
  char* headers = nullptr;
  size_t headers_bytes = 0;
  std::vector<std::unique_ptr<Entry>> entries;
  std::vector<char> request;  // a request rebuilt in the /dev/fuse layout
  std::thread thread;
  std::atomic<bool> stopping{false};
  std::mutex mu;               // guards handed
  std::vector<Entry*> handed;  // entries other threads wrote replies into
  std::vector<Entry*> taken;   // the thread's own swap of `handed`

  bool Setup(std::string* why);
  void Close();
  void Free();  // the buffers and the eventfd; after Close(), once no reply can come
  void Run();
  void PrepareCommand(Entry* e);
  void ArmEvent();
  void Dispatch(Entry* e);
  void CommitHanded();
  void Wake();
  // Notes that `bytes` of e's payload were written; the new pages count in the budget.
  void Touch(Entry* e, size_t bytes);
};

namespace {
// The queue whose thread this is, and the entry whose request it is dispatching: a reply
// written while dispatching is most often that entry's.
thread_local UringTransport::Queue* t_queue = nullptr;
thread_local UringTransport::Entry* t_current = nullptr;
}  // namespace

UringTransport::UringTransport(std::string off_reason, unsigned entries_per_queue,
                               std::function<void(uint64_t)> count_buffers)
    : wanted_(off_reason.empty()),
      entries_per_queue_(std::max(1u, entries_per_queue)),
      count_buffers_(std::move(count_buffers)),
      off_reason_(std::move(off_reason)) {
  if (!wanted_) spdlog::info("FUSE over io_uring off: {}", off_reason_);
}

UringTransport::~UringTransport() {
  Stop();
  for (auto& q : queues_) q->Free();
}

unsigned UringTransport::EntriesPerQueue(unsigned cpus) {
  return std::clamp(32u / std::max(1u, cpus), 8u, 32u);
}

unsigned UringTransport::CountCpuList(const std::string& ranges) {
  // "0-3,8-11": 8 CPUs. The kernel's queue count is num_possible_cpus(), the CPUs listed
  // (it files a caller on CPU 8 or above here under queue 0).
  unsigned count = 0;
  auto number = [](const std::string& t) {
    return !t.empty() && t.size() < 10 && std::all_of(t.begin(), t.end(), ::isdigit);
  };
  for (size_t pos = 0; pos < ranges.size();) {
    size_t end = ranges.find(',', pos);
    if (end == std::string::npos) end = ranges.size();
    const std::string part = ranges.substr(pos, end - pos);
    const size_t dash = part.find('-');
    const std::string first = part.substr(0, dash);
    const std::string last = dash == std::string::npos ? part : part.substr(dash + 1);
    if (number(first) && number(last) && std::stoul(last) >= std::stoul(first)) {
      count += static_cast<unsigned>(std::stoul(last) - std::stoul(first) + 1);
    }
    pos = end + 1;
  }
  return count;
}

unsigned UringTransport::PossibleCpus() {
  std::ifstream in("/sys/devices/system/cpu/possible");
  std::string ranges;
  unsigned count = 0;
  if (in >> ranges) count = CountCpuList(ranges);
  if (count == 0) count = static_cast<unsigned>(std::max(1L, sysconf(_SC_NPROCESSORS_CONF)));
  return count;
}

void UringTransport::NoteInitRequest(uint32_t flags, uint32_t flags2) {
  offered_ = (flags & wire::kInitExt) != 0 && (flags2 & wire::kOverIoUringFlags2) != 0;
}

void UringTransport::AmendInitReply(char* out, size_t size) {
  if (!wanted_) return;
  if (!offered_) {
    return TurnOff(
        "the kernel did not offer it (Linux 6.14+ with CONFIG_FUSE_IO_URING and the fuse "
        "module's parameter enable_uring on)");
  }
  if (size < wire::kInitOutFlags2 + 4) return TurnOff("the INIT reply is too short to carry it");
  if (!(wire::LoadU32(out + wire::kInitOutFlags) & wire::kInitExt)) {
    return TurnOff("libfuse's INIT reply has no second flag word");
  }
  if (std::string why; !ProbeRing(&why)) return TurnOff(why);
  wire::StoreU32(out + wire::kInitOutFlags2,
                 wire::LoadU32(out + wire::kInitOutFlags2) | wire::kOverIoUringFlags2);
  payload_size_ =
      uring::PayloadSizeOfInitReply(out, size, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  amended_ = true;
}

void UringTransport::TurnOff(const std::string& why) {
  {
    std::lock_guard lock(mu_);
    if (!off_reason_.empty()) return;
    off_reason_ = why;
  }
  active_.store(false, std::memory_order_release);
  RingQueues().Set(0);
  spdlog::info("FUSE over io_uring off: {}; requests go through /dev/fuse", why);
}

std::string UringTransport::fatal() const {
  std::lock_guard lock(mu_);
  return fatal_;
}

std::string UringTransport::off_reason() const {
  std::lock_guard lock(mu_);
  return off_reason_;
}

void UringTransport::Start(fuse_session* se, int dev_fd) {
  if (!amended_ || !queues_.empty()) return;
  std::string why;
  if (!SetupQueues(se, dev_fd, &why)) {
    for (auto& q : queues_) {
      q->Close();
      q->Free();
    }
    queues_.clear();  // no reply looks at them: queues_ready_ was never set
    // The kernel agreed to the rings in INIT and now holds every new request until each
    // queue has registered an entry: /dev/fuse would never see them. End the session, so
    // callers get an error (ENOTCONN) instead of a mount that never answers.
    spdlog::error(
        "FUSE over io_uring was agreed with the kernel but its rings could not be set up "
        "({}); unmounting. Start again with --fuse-io-uring off",
        why);
    TurnOff(why);
    {
      std::lock_guard lock(mu_);
      fatal_ = why;
    }
    if (on_fatal_) on_fatal_();
    return;
  }
  // Published before any thread can dispatch a request whose reply TryReply must find.
  queues_ready_.store(true, std::memory_order_release);
  for (auto& q : queues_) {
    Queue* raw = q.get();
    q->thread = std::thread([raw] { raw->Run(); });
  }
}

void UringTransport::QueueRegistered() {
  if (registered_.fetch_add(1) + 1 != queues_.size()) return;
  // Every queue has its entries: the kernel sends requests through the rings from now on.
  active_.store(true, std::memory_order_release);
  RingQueues().Set(static_cast<int64_t>(queues_.size()));
  RingEntries().Set(entries_per_queue_);
  spdlog::info("FUSE over io_uring on: {} queue(s) of {} entries, {} KiB per entry", queues_.size(),
               entries_per_queue_, payload_size_ / 1024);
}

bool UringTransport::ProbeRing(std::string* why) {
  // The flags the queues use (Queue::Setup): a kernel or policy that refuses any of them
  // refuses the queues.
  io_uring_params params{};
  params.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER |
                 IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED;
  params.cq_entries = 4;
  io_uring ring{};
  if (int rc = io_uring_queue_init_params(2, &ring, &params); rc != 0) {
    *why = "this process may not create an io_uring (" + RingErrno(rc) +
           "; a container's seccomp profile or kernel.io_uring_disabled refuses it)";
    return false;
  }
  io_uring_queue_exit(&ring);
  return true;
}

bool UringTransport::SetupQueues(fuse_session* se, int dev_fd, std::string* why) {
  const unsigned count = PossibleCpus();
  for (unsigned qid = 0; qid < count; ++qid) {
    auto q = std::make_unique<Queue>();
    q->owner = this;
    q->qid = qid;
    q->se = se;
    q->dev_fd = dev_fd;
    q->payload_size = payload_size_;
    for (unsigned i = 0; i < entries_per_queue_; ++i) {
      auto e = std::make_unique<Entry>();
      e->queue = q.get();
      q->entries.push_back(std::move(e));
    }
    queues_.push_back(std::move(q));
    if (!queues_.back()->Setup(why)) return false;
  }
  return true;
}

bool UringTransport::Queue::Setup(std::string* why) {
  const unsigned depth = static_cast<unsigned>(entries.size());
  io_uring_params params{};
  // Single issuer with deferred task work: the kernel copies a request into an entry only
  // when this queue's thread waits on its ring, so no other thread is ever interrupted for
  // it. Created disabled: a single-issuer ring belongs to the thread that enables it.
  params.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER |
                 IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED;
  params.cq_entries = 2 * (depth + 1);
  if (int rc = io_uring_queue_init_params(depth + 1, &ring, &params); rc != 0) {
    *why = "setting up an io_uring failed: " + RingErrno(rc);
    return false;
  }
  ring_open = true;
  // The ring keeps its own reference to the device: libfuse closes the session's fd at
  // unmount, while replies still owed (answered EIO by Drain) go through the ring.
  if (int rc = io_uring_register_files(&ring, &dev_fd, 1); rc != 0) {
    *why = "registering /dev/fuse with an io_uring failed: " + RingErrno(rc);
    return false;
  }
  event_fd = eventfd(0, EFD_CLOEXEC);
  if (event_fd < 0) {
    *why = "eventfd: " + RingErrno(errno);
    return false;
  }
  headers_bytes = (entries.size() * kHeaderStride + 4095) / 4096 * 4096;
  void* h =
      mmap(nullptr, headers_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (h == MAP_FAILED) {
    *why = "mapping ring headers: " + RingErrno(errno);
    return false;
  }
  headers = static_cast<char*>(h);
  for (size_t i = 0; i < entries.size(); ++i) {
    Entry* e = entries[i].get();
    e->header = reinterpret_cast<uring::RequestHeader*>(headers + i * kHeaderStride);
    // Reserved, not committed: only the bytes replies are copied into become resident.
    void* p = mmap(nullptr, payload_size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      *why = "mapping ring buffers: " + RingErrno(errno);
      return false;
    }
    e->payload = static_cast<char*>(p);
    e->iov[0] = {e->header, sizeof(uring::RequestHeader)};
    e->iov[1] = {e->payload, payload_size};
  }
  request.resize(uring::kInHeaderSize + sizeof(uring::RequestHeader::op_in) + payload_size);
  return true;
}

void UringTransport::Queue::Close() {
  // Closing the ring cancels the commands the kernel still holds (their entries go away
  // with the connection). The eventfd stays open until the transport is destroyed: a
  // reply racing with Stop() may still write to it.
  if (ring_open) io_uring_queue_exit(&ring);
  ring_open = false;
}

void UringTransport::Queue::Touch(Entry* e, size_t bytes) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t pages = (bytes + page - 1) / page * page;
  if (pages <= e->touched) return;
  const size_t grown = pages - e->touched;
  e->touched = pages;
  if (owner->count_buffers_) owner->count_buffers_(grown);
}

void UringTransport::Queue::Free() {
  if (event_fd >= 0) close(event_fd);
  event_fd = -1;
  for (auto& e : entries) {
    if (e->payload != nullptr) munmap(e->payload, payload_size);
    e->payload = nullptr;
  }
  if (headers != nullptr) munmap(headers, headers_bytes);
  headers = nullptr;
}

void UringTransport::Queue::PrepareCommand(Entry* e) {
  // At most one command per entry is ever outstanding, and the ring has one slot more for
  // the eventfd read: there is always a free SQE.
  io_uring_sqe* sqe = io_uring_get_sqe(&ring);
  if (sqe == nullptr) {  // cannot happen (see above); hand what is queued to the kernel
    io_uring_submit(&ring);
    sqe = io_uring_get_sqe(&ring);
    if (sqe == nullptr) {
      spdlog::error("fuse ring {}: no free submission slot; an entry is lost", qid);
      return;
    }
  }
  std::memset(sqe, 0, 2 * sizeof(io_uring_sqe));  // SQE128: the command area follows
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->fd = 0;  // the ring's registered /dev/fuse
  sqe->flags = IOSQE_FIXED_FILE;
  sqe->cmd_op = e->command;
  sqe->user_data = reinterpret_cast<uint64_t>(e);
  uring::CommandRequest cmd{};
  cmd.qid = static_cast<uint16_t>(qid);
  if (e->command == uring::kCmdRegister) {
    sqe->addr = reinterpret_cast<uint64_t>(e->iov);
    sqe->len = 2;
  } else {
    cmd.commit_id = e->commit_id;
  }
  std::memcpy(sqe->cmd, &cmd, sizeof(cmd));
}

void UringTransport::Queue::ArmEvent() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring);
  if (sqe == nullptr) {
    io_uring_submit(&ring);
    sqe = io_uring_get_sqe(&ring);
    if (sqe == nullptr) return;  // cannot happen: one slot is kept for it
  }
  io_uring_prep_read(sqe, event_fd, &event_value, sizeof(event_value), 0);
  sqe->user_data = kEventTag;
}

void UringTransport::Queue::Wake() {
  const uint64_t one = 1;
  ssize_t ignored = write(event_fd, &one, sizeof(one));
  (void)ignored;
}

void UringTransport::Queue::Run() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  pthread_setname_np(pthread_self(), ("fuse-ring-" + std::to_string(qid)).c_str());
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(qid, &cpus);
  if (sched_setaffinity(0, sizeof(cpus), &cpus) != 0) {
    // Outside the daemon's cpuset (a container's): the queue still needs a thread.
    spdlog::debug("fuse ring {}: not pinned to CPU {}: {}", qid, qid, RingErrno(errno));
  }
  t_queue = this;
  // liburing 2.3 declares io_uring_enable_rings but does not export it.
  if (syscall(__NR_io_uring_register, ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, nullptr, 0) !=
      0) {
    owner->TurnOff("enabling an io_uring failed: " + RingErrno(errno));
    return;
  }
  for (auto& e : entries) PrepareCommand(e.get());
  ArmEvent();
  // A registration the kernel accepts stays pending (until a request comes); a refused one
  // completes at once, with its error (handled in the loop below).
  io_uring_submit(&ring);
  if (io_uring_cq_ready(&ring) == 0) owner->QueueRegistered();
  while (!stopping.load(std::memory_order_acquire)) {
    const int rc = io_uring_submit_and_wait(&ring, 1);
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
      spdlog::error("fuse ring {}: io_uring_enter failed: {}", qid, RingErrno(rc));
      break;
    }
    unsigned head;
    unsigned seen = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(&ring, head, cqe) {
      ++seen;
      if (cqe->user_data == kEventTag) {
        ArmEvent();
        continue;
      }
      auto* e = reinterpret_cast<Entry*>(cqe->user_data);
      if (cqe->res == -EAGAIN || cqe->res == -EINTR) {
        PrepareCommand(e);  // not taken yet (the connection still starting): again
      } else if (cqe->res < 0) {
        // ENOTCONN: the connection is ending, and the entry with it. Anything else on a
        // registration leaves the kernel on /dev/fuse (it gives up on the rings).
        if (cqe->res != -ENOTCONN) {
          if (e->command == uring::kCmdRegister) {
            owner->TurnOff("the kernel refused a ring entry: " + RingErrno(cqe->res));
          } else {
            // The kernel no longer knew the request (it gave up on it); its entry stays
            // with the request in the kernel, so the buffers come back as a new entry.
            spdlog::warn(
                "fuse ring {}: committing a reply failed: {}; registering the entry "
                "again",
                qid, RingErrno(cqe->res));
            e->command = uring::kCmdRegister;
            PrepareCommand(e);
          }
        }
      } else {
        Dispatch(e);
      }
    }
    io_uring_cq_advance(&ring, seen);
    CommitHanded();
  }
  t_queue = nullptr;
}

void UringTransport::Queue::Dispatch(Entry* e) {
  RingRequests().Add();
  e->commit_id = e->header->ent_in_out.commit_id;
  e->command = uring::kCmdCommitAndFetch;
  char* buf = request.data();
  const size_t len =
      uring::RebuildRequest(*e->header, e->payload, payload_size, buf, request.size());
  uint64_t unique;
  std::memcpy(&unique, e->header->in_out + 8, sizeof(unique));  // fuse_in_header.unique
  if (len == 0) {
    uint32_t opcode;
    std::memcpy(&opcode, e->header->in_out + 4, sizeof(opcode));
    spdlog::error("fuse ring {}: malformed request (opcode {}); answering EIO", qid, opcode);
    struct {
      uint32_t len;
      int32_t error;
      uint64_t unique;
    } out{static_cast<uint32_t>(uring::kOutHeaderSize), -EIO, unique};
    ::iovec iov{&out, sizeof(out)};
    uring::WriteReply(&iov, 1, e->header, e->payload, payload_size);
    PrepareCommand(e);
    return;
  }
  Touch(e, e->header->ent_in_out.payload_sz);  // the kernel wrote the request's arguments
  // Published before libfuse sees the request: its reply may come from another thread
  // before fuse_session_process_buf returns.
  e->unique.store(unique, std::memory_order_release);
  t_current = e;
  fuse_buf fb{};
  fb.mem = buf;
  fb.size = len;
  fuse_session_process_buf(se, &fb);
  t_current = nullptr;
}

void UringTransport::Queue::CommitHanded() {
  {
    std::lock_guard lock(mu);
    taken.swap(handed);
  }
  for (Entry* e : taken) PrepareCommand(e);
  taken.clear();
}

bool UringTransport::TryReply(const ::iovec* iov, int count) {
  if (!queues_ready_.load(std::memory_order_acquire) || count < 1 ||
      iov[0].iov_len < uring::kOutHeaderSize) {
    return false;
  }
  uint64_t unique;
  std::memcpy(&unique, static_cast<const char*>(iov[0].iov_base) + 8, sizeof(unique));
  if (unique == 0) return false;  // a notification: /dev/fuse
  Entry* e = nullptr;
  if (t_current != nullptr && t_current->unique.load(std::memory_order_relaxed) == unique) {
    e = t_current;
  } else {
    for (auto& q : queues_) {
      for (auto& candidate : q->entries) {
        if (candidate->unique.load(std::memory_order_acquire) == unique) {
          e = candidate.get();
          break;
        }
      }
      if (e != nullptr) break;
    }
  }
  if (e == nullptr) return false;  // a request that came through /dev/fuse
  if (stopped_.load(std::memory_order_acquire)) return true;  // the rings are gone
  Queue* q = e->queue;
  if (!uring::WriteReply(iov, count, e->header, e->payload, q->payload_size)) {
    spdlog::error("fuse ring {}: a reply is larger than the entry's {} bytes; answering EIO",
                  q->qid, q->payload_size);
  }
  q->Touch(e, e->header->ent_in_out.payload_sz);
  e->unique.store(0, std::memory_order_release);
  if (t_queue == q) {
    q->PrepareCommand(e);  // submitted with this thread's next wait
    return true;
  }
  bool first;
  {
    std::lock_guard lock(q->mu);
    q->handed.push_back(e);
    first = q->handed.size() == 1;
  }
  if (first) q->Wake();  // later ones ride on the same wake-up
  return true;
}

void UringTransport::Stop() {
  if (stopped_.exchange(true)) return;
  active_.store(false, std::memory_order_release);
  for (auto& q : queues_) {
    q->stopping.store(true, std::memory_order_release);
    if (q->event_fd >= 0) q->Wake();
  }
  for (auto& q : queues_) {
    if (q->thread.joinable()) q->thread.join();
    q->Close();
  }
  if (!queues_.empty()) RingQueues().Set(0);
}

}  // namespace ossmount::fuse
