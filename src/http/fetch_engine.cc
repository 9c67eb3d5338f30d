// FetchEngine implementation: libcurl's multi-socket API on a Boost.Asio io_context.
//
// Serialisation: every curl_multi_* / curl_easy_* call on the multi handle, and every
// libcurl callback (socket, timer, open/close socket), runs while holding mu_, and -- except
// in Shutdown(), which runs on the destroying thread -- from a handler on strand_. The
// strand keeps engine work from occupying more than one io thread at a time; the mutex
// only exists so that the destructor can tear the multi handle down synchronously from any
// thread. No user code runs under mu_: completed responses are collected in ready_ and
// posted to the io_context after the lock is released.
//
// Sockets: libcurl opens its TCP sockets through OnOpenSocket, which wraps each in an
// asio::ip::tcp::socket owned by the engine (closed in OnCloseSocket). Descriptors libcurl
// creates itself (the threaded resolver's wake-up socketpair) are waited on through a
// dup() wrapped in a posix::stream_descriptor, so the engine never registers a descriptor
// number it does not own with the reactor.
//
// Lost-edge guard: Asio's epoll reactor is edge-triggered and does not re-check readiness
// when an async_wait is started. Readiness that arrived before the wait was registered
// (libcurl stopped reading at EAGAIN, then more data came in before we re-armed) would
// never be reported. After registering a wait, Arm() therefore polls the descriptor once
// with a zero timeout and, if it is already ready, posts a socket action right away.
#include "http/fetch_engine.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "http/curl_global.h"
#include "http/transfer.h"

namespace ossmount::http {

namespace asio = boost::asio;
using internal::Transfer;
using tcp = asio::ip::tcp;

namespace {

// How often queued and in-flight requests with a CancelFlag are checked.
constexpr auto kCancelPollInterval = std::chrono::milliseconds(20);
// Easy handles kept for reuse (their connections live in the multi handle's cache anyway).
constexpr size_t kMaxIdleHandles = 64;
constexpr int kNumPriorities = 3;

constexpr int kRead = 0;
constexpr int kWrite = 1;

struct SocketState {
  uint64_t id = 0;  // distinguishes a reused descriptor number from its predecessor
  std::unique_ptr<tcp::socket> owned;                      // opened by OnOpenSocket
  std::unique_ptr<asio::posix::stream_descriptor> mirror;  // dup() of a curl-internal fd
  int want = 0;                                            // CURL_POLL_IN / CURL_POLL_OUT bits
  bool pending[2] = {false, false};                        // async_wait outstanding

  int wait_fd() const { return owned ? owned->native_handle() : mirror->native_handle(); }
};

struct Ready {
  ResponseHandler handler;
  Response response;
};

bool SameOpenFile(int a, int b) {
  struct stat sa, sb;
  if (fstat(a, &sa) != 0 || fstat(b, &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

class FetchEngine::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(asio::io_context& io, EngineOptions options)
      : io_(io),
        options_(std::move(options)),
        strand_(asio::make_strand(io)),
        curl_timer_(io),
        cancel_timer_(io) {
    options_.max_in_flight = std::max(1, options_.max_in_flight);
    options_.max_connections_per_host = std::max(1, options_.max_connections_per_host);
  }

  // Creates the multi handle. Returns false when libcurl cannot be initialised; every
  // request then fails with kInternal.
  bool Init();
  void Execute(Request request, ResponseHandler done);
  void Shutdown();
  EngineStats Stats() const;

 private:
  // --- entry points (each takes mu_, then posts what became ready) ---
  void Enqueue(std::unique_ptr<Transfer> transfer);
  void OnSocketReady(curl_socket_t fd, uint64_t id, int dir, bool kick,
                     const boost::system::error_code& ec);
  void OnTimer(uint64_t generation, const boost::system::error_code& ec);
  void OnCancelPoll(const boost::system::error_code& ec);

  // --- REQUIRES mu_ held ---
  void StartQueued();
  void DrainMessages();
  void FinishRunning(CURL* easy, CURLcode code, const Status* forced);
  void Deliver(std::unique_ptr<Transfer> transfer, Response response);
  void Reject(std::unique_ptr<Transfer> transfer, Status status);
  void ArmCancelPoll();
  void Arm(curl_socket_t fd, SocketState& state, int dir);
  void RearmWanted(curl_socket_t fd, uint64_t id);
  void SocketAction(curl_socket_t fd, int events);
  // A handle for the next transfer: an idle one when there is one (reused=true), else new.
  CURL* AcquireHandle(bool& reused);
  // Keeps a handle whose transfer libcurl saw through to its end for reuse (or frees it
  // when enough are idle). Never called for a handle that may hold a transfer's state.
  void ReleaseHandle(CURL* easy);
  std::vector<Ready> TakeReady() { return std::exchange(ready_, {}); }

  // libcurl callbacks: run inside curl calls, so mu_ is already held.
  static int CurlSocketCb(CURL* easy, curl_socket_t fd, int what, void* userp, void* socketp);
  static int CurlTimerCb(CURLM* multi, long timeout_ms, void* userp);
  static curl_socket_t OpenSocketCb(void* userp, curlsocktype purpose, curl_sockaddr* addr);
  static int CloseSocketCb(void* userp, curl_socket_t fd);
  int OnCurlSocket(curl_socket_t fd, int what);
  int OnCurlTimer(long timeout_ms);
  void ArmWakeup(std::chrono::steady_clock::time_point when, bool now);
  curl_socket_t OnOpenSocket(curlsocktype purpose, curl_sockaddr* addr);
  int OnCloseSocket(curl_socket_t fd);

  void Post(std::vector<Ready> ready);

  asio::io_context& io_;
  EngineOptions options_;
  asio::strand<asio::io_context::executor_type> strand_;

  mutable std::mutex mu_;  // see the file comment; guards everything below
  CURLM* multi_ = nullptr;
  bool shut_down_ = false;
  asio::steady_timer curl_timer_;
  // libcurl's pending deadline, and the single live wake-up for it (see OnCurlTimer).
  std::optional<std::chrono::steady_clock::time_point> curl_deadline_;
  std::optional<std::chrono::steady_clock::time_point> live_wakeup_;
  uint64_t wakeup_generation_ = 0;
  asio::steady_timer cancel_timer_;
  bool cancel_poll_armed_ = false;
  int with_cancel_flag_ = 0;  // queued + running transfers that carry a CancelFlag
  std::unordered_map<curl_socket_t, SocketState> sockets_;
  uint64_t next_socket_id_ = 1;
  std::deque<std::unique_ptr<Transfer>> queues_[kNumPriorities];
  std::unordered_map<CURL*, std::unique_ptr<Transfer>> running_;
  std::vector<CURL*> idle_handles_;
  std::vector<Ready> ready_;

  // Counters readable without mu_.
  std::atomic<uint64_t> started_{0};
  std::atomic<uint64_t> completed_{0};
  std::atomic<uint64_t> transport_errors_{0};
  std::atomic<int> in_flight_{0};
  std::atomic<int> queued_{0};
};

bool FetchEngine::Impl::Init() {
  if (!internal::EnsureCurlGlobalInit()) return false;
  multi_ = curl_multi_init();
  if (multi_ == nullptr) return false;
  curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &Impl::CurlSocketCb);
  curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &Impl::CurlTimerCb);
  curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_NOTHING));
  curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS,
                    static_cast<long>(options_.max_connections_per_host));
  // Keep as many idle connections as can be busy at once, so bursts reuse them.
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS,
                    static_cast<long>(std::max(options_.max_in_flight, 16)));
  return true;
}

void FetchEngine::Impl::Post(std::vector<Ready> ready) {
  for (Ready& r : ready) {
    if (!r.handler) continue;
    asio::post(io_, [handler = std::move(r.handler), response = std::move(r.response)]() mutable {
      handler(std::move(response));
    });
  }
}

void FetchEngine::Impl::Execute(Request request, ResponseHandler done) {
  auto transfer = std::make_unique<Transfer>(std::move(request), std::move(done));
  asio::post(strand_, [self = shared_from_this(), t = std::move(transfer)]() mutable {
    self->Enqueue(std::move(t));
  });
}

void FetchEngine::Impl::Enqueue(std::unique_ptr<Transfer> t) {
  std::vector<Ready> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_down_) {
      Reject(std::move(t), Status(ErrorCode::kCancelled, "the fetch engine was shut down"));
    } else if (multi_ == nullptr) {
      Reject(std::move(t), Status(ErrorCode::kInternal, "libcurl failed to initialise"));
    } else if (t->cancel_requested()) {
      Reject(std::move(t), Status(ErrorCode::kCancelled, "request cancelled"));
    } else {
      if (t->has_cancel_flag()) {
        t->counted_for_cancel = true;
        ++with_cancel_flag_;
      }
      int priority = std::clamp(static_cast<int>(t->priority()), 0, kNumPriorities - 1);
      queues_[priority].push_back(std::move(t));
      queued_.fetch_add(1, std::memory_order_relaxed);
      StartQueued();
      ArmCancelPoll();
    }
    ready = TakeReady();
  }
  Post(std::move(ready));
}

void FetchEngine::Impl::Deliver(std::unique_ptr<Transfer> t, Response response) {
  if (t->counted_for_cancel) --with_cancel_flag_;
  completed_.fetch_add(1, std::memory_order_relaxed);
  if (!response.transport.ok() && response.transport.code() != ErrorCode::kCancelled) {
    transport_errors_.fetch_add(1, std::memory_order_relaxed);
  }
  ready_.push_back(Ready{t->TakeHandler(), std::move(response)});
}

void FetchEngine::Impl::Reject(std::unique_ptr<Transfer> t, Status status) {
  Response response = t->Fail(std::move(status));
  Deliver(std::move(t), std::move(response));
}

CURL* FetchEngine::Impl::AcquireHandle(bool& reused) {
  reused = !idle_handles_.empty();
  if (reused) {
    CURL* easy = idle_handles_.back();
    idle_handles_.pop_back();
    return easy;
  }
  return curl_easy_init();
}

void FetchEngine::Impl::ReleaseHandle(CURL* easy) {
  if (idle_handles_.size() < kMaxIdleHandles) {
    curl_easy_reset(easy);
    idle_handles_.push_back(easy);
  } else {
    curl_easy_cleanup(easy);
  }
}

void FetchEngine::Impl::StartQueued() {
  while (in_flight_.load(std::memory_order_relaxed) < options_.max_in_flight) {
    std::unique_ptr<Transfer> t;
    for (auto& queue : queues_) {
      if (!queue.empty()) {
        t = std::move(queue.front());
        queue.pop_front();
        break;
      }
    }
    if (!t) return;
    queued_.fetch_sub(1, std::memory_order_relaxed);
    if (t->cancel_requested()) {
      Reject(std::move(t), Status(ErrorCode::kCancelled, "request cancelled"));
      continue;
    }
    const auto configure = [&](CURL* easy) {
      return easy != nullptr ? t->Configure(easy, options_)
                             : Status(ErrorCode::kInternal, "curl_easy_init failed", true);
    };
    bool reused = false;
    CURL* easy = AcquireHandle(reused);
    Status configured = configure(easy);
    if (!configured.ok() && reused) {
      // A reused handle that refuses an option carries state from its last transfer that
      // curl_easy_reset does not clear; a new handle must not fail this request for it.
      curl_easy_cleanup(easy);
      easy = curl_easy_init();
      configured = configure(easy);
    }
    if (configured.ok()) {
      curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, &Impl::OpenSocketCb);
      curl_easy_setopt(easy, CURLOPT_OPENSOCKETDATA, this);
      curl_easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, &Impl::CloseSocketCb);
      curl_easy_setopt(easy, CURLOPT_CLOSESOCKETDATA, this);
      CURLMcode added = curl_multi_add_handle(multi_, easy);
      if (added != CURLM_OK) {
        configured = Status(ErrorCode::kInternal,
                            std::string("curl_multi_add_handle: ") + curl_multi_strerror(added));
      }
    }
    if (!configured.ok()) {
      curl_easy_cleanup(easy);  // not back to the pool (it may refuse the next request too)
      Reject(std::move(t), configured);
      continue;
    }
    running_.emplace(easy, std::move(t));
    in_flight_.fetch_add(1, std::memory_order_relaxed);
    started_.fetch_add(1, std::memory_order_relaxed);
  }
}

void FetchEngine::Impl::FinishRunning(CURL* easy, CURLcode code, const Status* forced) {
  auto it = running_.find(easy);
  if (it == running_.end()) return;
  std::unique_ptr<Transfer> t = std::move(it->second);
  running_.erase(it);
  // Before removal: Finish() reads CURLINFO values. Removing an unfinished transfer closes
  // its connection (through OnCloseSocket).
  Response response = forced ? t->Fail(*forced) : t->Finish(code);
  const CURLMcode removed = curl_multi_remove_handle(multi_, easy);
  if (forced == nullptr && removed == CURLM_OK) {
    ReleaseHandle(easy);
  } else {
    // Not reused: libcurl 7.88 keeps the receive buffer of a transfer removed while it
    // waited for a connection (CURLMOPT_MAX_HOST_CONNECTIONS), and then refuses
    // CURLOPT_BUFFERSIZE on that handle even after curl_easy_reset. Reusing it made every
    // request that took it from the pool fail. A new handle costs an allocation; the
    // connections stay in the multi handle's cache either way.
    curl_easy_cleanup(easy);
  }
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
  Deliver(std::move(t), std::move(response));
}

void FetchEngine::Impl::DrainMessages() {
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
    if (msg->msg != CURLMSG_DONE) continue;
    CURL* easy = msg->easy_handle;
    CURLcode code = msg->data.result;
    FinishRunning(easy, code, nullptr);
  }
}

void FetchEngine::Impl::SocketAction(curl_socket_t fd, int events) {
  int running = 0;
  curl_multi_socket_action(multi_, fd, events, &running);
  DrainMessages();
}

// ---------------------------------------------------------------------------------------
// Sockets

void FetchEngine::Impl::Arm(curl_socket_t fd, SocketState& st, int dir) {
  st.pending[dir] = true;
  auto handler = asio::bind_executor(strand_, [self = shared_from_this(), fd, id = st.id,
                                               dir](const boost::system::error_code& ec) {
    self->OnSocketReady(fd, id, dir, /*kick=*/false, ec);
  });
  if (st.owned) {
    st.owned->async_wait(dir == kRead ? tcp::socket::wait_read : tcp::socket::wait_write,
                         std::move(handler));
  } else {
    using Descriptor = asio::posix::stream_descriptor;
    st.mirror->async_wait(dir == kRead ? Descriptor::wait_read : Descriptor::wait_write,
                          std::move(handler));
  }
  // Lost-edge guard (file comment): the wait is registered now, so anything that arrives
  // from here on is reported by the reactor; anything already there is seen by poll().
  pollfd p{st.wait_fd(), static_cast<short>(dir == kRead ? POLLIN : POLLOUT), 0};
  if (::poll(&p, 1, 0) > 0 && p.revents != 0) {
    asio::post(strand_, [self = shared_from_this(), fd, id = st.id, dir] {
      self->OnSocketReady(fd, id, dir, /*kick=*/true, {});
    });
  }
}

void FetchEngine::Impl::RearmWanted(curl_socket_t fd, uint64_t id) {
  auto it = sockets_.find(fd);
  if (it == sockets_.end() || it->second.id != id) return;
  SocketState& st = it->second;
  if ((st.want & CURL_POLL_IN) && !st.pending[kRead]) Arm(fd, st, kRead);
  if ((st.want & CURL_POLL_OUT) && !st.pending[kWrite]) Arm(fd, st, kWrite);
}

void FetchEngine::Impl::OnSocketReady(curl_socket_t fd, uint64_t id, int dir, bool kick,
                                      const boost::system::error_code& ec) {
  std::vector<Ready> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_down_) return;
    auto it = sockets_.find(fd);
    if (it == sockets_.end() || it->second.id != id) return;  // closed or replaced
    if (!kick) it->second.pending[dir] = false;
    const int bit = dir == kRead ? CURL_POLL_IN : CURL_POLL_OUT;
    if (ec != asio::error::operation_aborted && (it->second.want & bit)) {
      int events = ec ? CURL_CSELECT_ERR : (dir == kRead ? CURL_CSELECT_IN : CURL_CSELECT_OUT);
      SocketAction(fd, events);  // may close fd or change what libcurl wants
    }
    RearmWanted(fd, id);
    StartQueued();
    ArmCancelPoll();
    ready = TakeReady();
  }
  Post(std::move(ready));
}

int FetchEngine::Impl::CurlSocketCb(CURL*, curl_socket_t fd, int what, void* userp, void*) {
  return static_cast<Impl*>(userp)->OnCurlSocket(fd, what);
}

int FetchEngine::Impl::OnCurlSocket(curl_socket_t fd, int what) {
  auto it = sockets_.find(fd);
  if (what == CURL_POLL_REMOVE) {
    if (it == sockets_.end()) return 0;
    if (it->second.mirror) {
      sockets_.erase(it);  // closes our dup; its pending waits end as operation_aborted
    } else {
      it->second.want = 0;  // outstanding waits are ignored when they complete
    }
    return 0;
  }
  if (it != sockets_.end() && it->second.mirror &&
      !SameOpenFile(fd, it->second.mirror->native_handle())) {
    sockets_.erase(it);  // libcurl closed the old descriptor and reused its number
    it = sockets_.end();
  }
  if (it == sockets_.end()) {
    // A descriptor libcurl created itself (e.g. the resolver's socketpair): wait on a dup.
    // Returning -1 would make libcurl declare the whole multi handle dead, so when the
    // descriptor cannot be watched (out of descriptors) the transfer is left to its own
    // deadlines (connect timeout) instead.
    int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return 0;
    SocketState st;
    st.id = next_socket_id_++;
    st.mirror = std::make_unique<asio::posix::stream_descriptor>(io_);
    boost::system::error_code ec;
    st.mirror->assign(copy, ec);
    if (ec) {
      ::close(copy);
      return 0;
    }
    it = sockets_.emplace(fd, std::move(st)).first;
  }
  it->second.want = what & (CURL_POLL_IN | CURL_POLL_OUT);
  RearmWanted(fd, it->second.id);
  return 0;
}

curl_socket_t FetchEngine::Impl::OpenSocketCb(void* userp, curlsocktype purpose,
                                              curl_sockaddr* addr) {
  return static_cast<Impl*>(userp)->OnOpenSocket(purpose, addr);
}

curl_socket_t FetchEngine::Impl::OnOpenSocket(curlsocktype purpose, curl_sockaddr* addr) {
  const bool tcp_ip = purpose == CURLSOCKTYPE_IPCXN &&
                      (addr->family == AF_INET || addr->family == AF_INET6) &&
                      addr->socktype == SOCK_STREAM;
  int fd = ::socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
  if (fd < 0) return CURL_SOCKET_BAD;
  // A mirror entry under this number belongs to a descriptor libcurl has since closed.
  sockets_.erase(fd);
  if (!tcp_ip) return fd;  // not ours to wrap (closed by OnCloseSocket with ::close)
  auto socket = std::make_unique<tcp::socket>(io_);
  boost::system::error_code ec;
  socket->assign(addr->family == AF_INET ? tcp::v4() : tcp::v6(), fd, ec);
  if (ec) {
    ::close(fd);
    return CURL_SOCKET_BAD;
  }
  SocketState st;
  st.id = next_socket_id_++;
  st.owned = std::move(socket);
  sockets_.emplace(fd, std::move(st));
  return fd;
}

int FetchEngine::Impl::CloseSocketCb(void* userp, curl_socket_t fd) {
  return static_cast<Impl*>(userp)->OnCloseSocket(fd);
}

int FetchEngine::Impl::OnCloseSocket(curl_socket_t fd) {
  auto it = sockets_.find(fd);
  if (it != sockets_.end() && it->second.owned) {
    boost::system::error_code ec;
    it->second.owned->close(ec);  // pending waits complete with operation_aborted
    sockets_.erase(it);
    return 0;
  }
  if (it != sockets_.end()) sockets_.erase(it);
  ::close(fd);
  return 0;
}

// ---------------------------------------------------------------------------------------
// Timers

int FetchEngine::Impl::CurlTimerCb(CURLM*, long timeout_ms, void* userp) {
  return static_cast<Impl*>(userp)->OnCurlTimer(timeout_ms);
}

// libcurl reports its earliest deadline through this callback and does not repeat a
// deadline it already reported, so a wake-up must happen at or after every deadline it
// gives (never only before it). Waking earlier than needed is harmless, so a live wake-up
// that is already due no later than the new deadline is kept: moving the asio timer costs
// a timerfd_settime() and libcurl moves its deadline on nearly every state change.
int FetchEngine::Impl::OnCurlTimer(long timeout_ms) {
  if (shut_down_) return 0;
  if (timeout_ms < 0) {
    curl_deadline_.reset();  // a live wake-up finds nothing due and does nothing
    return 0;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  curl_deadline_ = deadline;
  if (!live_wakeup_ || *live_wakeup_ > deadline) ArmWakeup(deadline, timeout_ms == 0);
  return 0;
}

void FetchEngine::Impl::ArmWakeup(std::chrono::steady_clock::time_point when, bool now) {
  const uint64_t generation = ++wakeup_generation_;  // older wake-ups become no-ops
  live_wakeup_ = when;
  auto handler = [self = shared_from_this(), generation](const boost::system::error_code& ec) {
    self->OnTimer(generation, ec);
  };
  if (now) {
    asio::post(strand_, [handler] { handler({}); });
  } else {
    curl_timer_.expires_at(when);
    curl_timer_.async_wait(asio::bind_executor(strand_, handler));
  }
}

void FetchEngine::Impl::OnTimer(uint64_t generation, const boost::system::error_code& ec) {
  if (ec == asio::error::operation_aborted) return;
  std::vector<Ready> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_down_ || generation != wakeup_generation_) return;
    live_wakeup_.reset();
    if (!curl_deadline_) return;
    if (std::chrono::steady_clock::now() < *curl_deadline_) {
      ArmWakeup(*curl_deadline_, false);  // woke early for a deadline that moved later
      return;
    }
    curl_deadline_.reset();
    SocketAction(CURL_SOCKET_TIMEOUT, 0);  // reports the next deadline, if any
    StartQueued();
    ArmCancelPoll();
    ready = TakeReady();
  }
  Post(std::move(ready));
}

void FetchEngine::Impl::ArmCancelPoll() {
  if (cancel_poll_armed_ || with_cancel_flag_ == 0 || shut_down_) return;
  cancel_poll_armed_ = true;
  cancel_timer_.expires_after(kCancelPollInterval);
  cancel_timer_.async_wait(asio::bind_executor(
      strand_, [self = shared_from_this()](const boost::system::error_code& ec) {
        self->OnCancelPoll(ec);
      }));
}

void FetchEngine::Impl::OnCancelPoll(const boost::system::error_code&) {
  std::vector<Ready> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancel_poll_armed_ = false;
    if (shut_down_) return;
    const Status cancelled(ErrorCode::kCancelled, "request cancelled");
    for (auto& queue : queues_) {
      for (auto it = queue.begin(); it != queue.end();) {
        if ((*it)->cancel_requested()) {
          std::unique_ptr<Transfer> t = std::move(*it);
          it = queue.erase(it);
          queued_.fetch_sub(1, std::memory_order_relaxed);
          Reject(std::move(t), cancelled);
        } else {
          ++it;
        }
      }
    }
    // libcurl's progress callback also aborts cancelled transfers, but only when libcurl
    // gets to run them; this catches transfers waiting on a silent server.
    std::vector<CURL*> aborted;
    for (auto& [easy, t] : running_) {
      if (t->cancel_requested()) aborted.push_back(easy);
    }
    for (CURL* easy : aborted) FinishRunning(easy, CURLE_OK, &cancelled);
    StartQueued();
    ArmCancelPoll();
    ready = TakeReady();
  }
  Post(std::move(ready));
}

// ---------------------------------------------------------------------------------------
// Shutdown and stats

void FetchEngine::Impl::Shutdown() {
  std::vector<Ready> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_down_) return;
    shut_down_ = true;
    const Status cancelled(ErrorCode::kCancelled, "the fetch engine was shut down");
    std::vector<CURL*> running;
    for (auto& [easy, t] : running_) running.push_back(easy);
    for (CURL* easy : running) FinishRunning(easy, CURLE_OK, &cancelled);
    for (auto& queue : queues_) {
      while (!queue.empty()) {
        std::unique_ptr<Transfer> t = std::move(queue.front());
        queue.pop_front();
        queued_.fetch_sub(1, std::memory_order_relaxed);
        Reject(std::move(t), cancelled);
      }
    }
    for (CURL* easy : idle_handles_) curl_easy_cleanup(easy);
    idle_handles_.clear();
    if (multi_ != nullptr) curl_multi_cleanup(multi_);  // closes cached connections
    multi_ = nullptr;
    curl_timer_.cancel();
    cancel_timer_.cancel();
    sockets_.clear();
    ready = TakeReady();
  }
  Post(std::move(ready));
}

EngineStats FetchEngine::Impl::Stats() const {
  EngineStats s;
  s.started = started_.load(std::memory_order_relaxed);
  s.completed = completed_.load(std::memory_order_relaxed);
  s.transport_errors = transport_errors_.load(std::memory_order_relaxed);
  s.in_flight = in_flight_.load(std::memory_order_relaxed);
  s.queued = queued_.load(std::memory_order_relaxed);
  return s;
}

// ---------------------------------------------------------------------------------------

FetchEngine::FetchEngine(boost::asio::io_context& io, EngineOptions options)
    : impl_(std::make_shared<Impl>(io, std::move(options))) {
  impl_->Init();
}

FetchEngine::~FetchEngine() { impl_->Shutdown(); }

void FetchEngine::Execute(Request request, ResponseHandler done) {
  impl_->Execute(std::move(request), std::move(done));
}

EngineStats FetchEngine::Stats() const { return impl_->Stats(); }

}  // namespace ossmount::http
