#include "control/control_server.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/crc64.h"

namespace ossmount::control {

namespace asio = boost::asio;
using Local = asio::local::stream_protocol;

// A client that connects and sends nothing is dropped after this long.
constexpr std::chrono::seconds kRequestDeadline{60};

struct ControlServer::State : std::enable_shared_from_this<ControlServer::State> {
  State(asio::io_context& io, std::string p, std::shared_ptr<CommandTable> c)
      : strand(asio::make_strand(io)),
        acceptor(strand),
        path(std::move(p)),
        commands(std::move(c)) {}

  asio::strand<asio::io_context::executor_type> strand;
  Local::acceptor acceptor;
  std::string path;
  std::shared_ptr<CommandTable> commands;
  std::atomic<bool> stopped{false};

  void Accept();
};

namespace {

std::string Errno(int e) { return std::strerror(e); }

// One connection: read a line, answer, close.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::shared_ptr<ControlServer::State> state, Local::socket socket)
      : state_(std::move(state)),
        socket_(std::move(socket)),
        buffer_(kMaxRequestBytes),
        timer_(socket_.get_executor()) {
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(socket_.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      peer_.pid = static_cast<int>(cred.pid);
      peer_.uid = cred.uid;
    }
  }

  void Start() {
    auto self = shared_from_this();
    timer_.expires_after(kRequestDeadline);
    timer_.async_wait([self](boost::system::error_code ec) {
      if (!ec) {
        boost::system::error_code ignored;
        self->socket_.close(ignored);
      }
    });
    asio::async_read_until(
        socket_, buffer_, '\n',
        [self](boost::system::error_code ec, std::size_t n) { self->OnRead(ec, n); });
  }

 private:
  void OnRead(boost::system::error_code ec, std::size_t n) {
    if (ec == asio::error::not_found) {
      Reply(ErrorReply("request refused: over " + std::to_string(kMaxRequestBytes >> 20) +
                       " MiB without a newline"));
      return;
    }
    if (ec) {  // the client went away, or the deadline closed the socket
      timer_.cancel();
      return;
    }
    std::string line(asio::buffers_begin(buffer_.data()),
                     asio::buffers_begin(buffer_.data()) + static_cast<std::ptrdiff_t>(n));
    buffer_.consume(n);
    auto self = shared_from_this();
    state_->commands->Answer(std::move(line), peer_, [self](std::string answer) {
      asio::post(self->socket_.get_executor(),
                 [self, answer = std::move(answer)]() mutable { self->Send(std::move(answer)); });
    });
  }

  void Reply(std::string text) {
    text.push_back('\n');
    Send(std::move(text));
  }

  // `text` ends with its newline.
  void Send(std::string text) {
    reply_ = std::move(text);
    auto self = shared_from_this();
    asio::async_write(socket_, asio::buffer(reply_),
                      [self](boost::system::error_code, std::size_t) {
                        boost::system::error_code ignored;
                        self->timer_.cancel();
                        self->socket_.shutdown(Local::socket::shutdown_both, ignored);
                        self->socket_.close(ignored);
                      });
  }

  std::shared_ptr<ControlServer::State> state_;
  Local::socket socket_;
  asio::streambuf buffer_;
  asio::steady_timer timer_;
  std::string reply_;
  Peer peer_;
};

// Creates `dir` (and, for /run/ossmount, its parent exists already) with mode 0700 and
// checks it is a directory we own that nobody else can write: the socket is only as
// private as its directory.
Status PrepareDirectory(const std::string& dir) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status(ErrorCode::kInvalidArgument,
                  "control socket directory " + dir + " cannot be created: " + Errno(errno));
  }
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) {
    return Status(ErrorCode::kInvalidArgument,
                  "control socket directory " + dir + ": " + Errno(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status(ErrorCode::kInvalidArgument,
                  "control socket directory " + dir + " is not a directory; remove it");
  }
  if (st.st_uid != geteuid()) {
    return Status(ErrorCode::kInvalidArgument,
                  "control socket directory " + dir + " belongs to another user; remove it");
  }
  if ((st.st_mode & 0077) != 0 && chmod(dir.c_str(), 0700) != 0) {
    return Status(ErrorCode::kInvalidArgument,
                  "control socket directory " + dir + " cannot be made private: " + Errno(errno));
  }
  return Status::Ok();
}

std::string Dirname(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return std::string(1, '/');
  return path.substr(0, slash);
}

}  // namespace

void ControlServer::State::Accept() {
  auto self = shared_from_this();
  acceptor.async_accept([self](boost::system::error_code ec, Local::socket socket) {
    if (self->stopped.load() || ec == asio::error::operation_aborted) return;
    if (!ec) {
      std::make_shared<Connection>(self, std::move(socket))->Start();
    } else {
      spdlog::warn("control socket {}: accept failed: {}", self->path, ec.message());
    }
    self->Accept();
  });
}

ControlServer::ControlServer(std::shared_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<ControlServer>> ControlServer::Start(
    asio::io_context& io, std::string socket_path, std::shared_ptr<CommandTable> commands) {
  if (socket_path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return Status(ErrorCode::kInvalidArgument,
                  "control socket path " + socket_path + " is too long for a Unix socket");
  }
  if (Status st = PrepareDirectory(Dirname(socket_path)); !st.ok()) return st;

  struct stat st {};
  if (lstat(socket_path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return Status(ErrorCode::kInvalidArgument,
                    "control socket path " + socket_path + " exists and is not a socket");
    }
    // A live daemon answers a connect; a dead one's socket refuses it and is replaced.
    asio::io_context probe_io;
    Local::socket probe(probe_io);
    boost::system::error_code ec;
    probe.connect(Local::endpoint(socket_path), ec);
    if (!ec) {
      return Status(ErrorCode::kInvalidArgument,
                    "another ossmount daemon already answers on control socket " + socket_path);
    }
    if (unlink(socket_path.c_str()) != 0 && errno != ENOENT) {
      return Status(ErrorCode::kInvalidArgument,
                    "stale control socket " + socket_path + " cannot be removed: " + Errno(errno));
    }
  }

  auto state = std::make_shared<State>(io, socket_path, std::move(commands));
  boost::system::error_code ec;
  state->acceptor.open(Local(), ec);
  if (!ec) state->acceptor.bind(Local::endpoint(socket_path), ec);
  if (!ec && chmod(socket_path.c_str(), 0600) != 0) {
    ec = boost::system::error_code(errno, boost::system::system_category());
  }
  if (!ec) state->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    unlink(socket_path.c_str());
    return Status(ErrorCode::kInvalidArgument,
                  "control socket " + socket_path + " cannot be opened: " + ec.message());
  }
  asio::post(state->strand, [state] { state->Accept(); });
  return std::unique_ptr<ControlServer>(new ControlServer(std::move(state)));
}

const std::string& ControlServer::path() const { return state_->path; }

ControlServer::~ControlServer() {
  state_->stopped = true;
  unlink(state_->path.c_str());
  // The acceptor belongs to the strand; close it there (a no-op if the io_context no longer
  // runs: the process is then about to exit).
  asio::post(state_->strand, [state = state_] {
    boost::system::error_code ignored;
    state->acceptor.close(ignored);
  });
}

std::string SocketDirectory() {
  uid_t uid = geteuid();
  if (uid == 0) return "/run/ossmount";
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  if (xdg != nullptr && xdg[0] == '/') {
    struct stat st {};
    if (stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid) {
      return std::string(xdg) + "/ossmount";
    }
  }
  return "/tmp/ossmount-" + std::to_string(uid);
}

std::string SocketPathForMountpoint(const std::string& absolute_mountpoint_in) {
  // Lexically normal ("/a/./b/../c/" -> "/a/c"), so spellings of one path agree. Symlinks
  // are not resolved: a dead mount cannot be stat'ed.
  std::string absolute_mountpoint =
      std::filesystem::path(absolute_mountpoint_in).lexically_normal().string();
  while (absolute_mountpoint.size() > 1 && absolute_mountpoint.back() == '/') {
    absolute_mountpoint.pop_back();
  }
  std::string dir = SocketDirectory();
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx",
                static_cast<unsigned long long>(
                    Crc64(0, absolute_mountpoint.data(), absolute_mountpoint.size())));
  std::string readable;
  for (char c : absolute_mountpoint) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
    if (plain) {
      readable.push_back(c);
    } else if (!readable.empty() && readable.back() != '-') {
      readable.push_back('-');
    }
  }
  while (!readable.empty() && readable.back() == '-') readable.pop_back();
  // dir + "/" + readable + "-" + 16 hex + ".sock" within 107 bytes.
  constexpr std::size_t kLimit = sizeof(sockaddr_un{}.sun_path) - 1;
  std::size_t fixed = dir.size() + 1 + 1 + 16 + 5;
  std::size_t room = fixed < kLimit ? kLimit - fixed : 0;
  if (readable.size() > room) readable = readable.substr(readable.size() - room);
  return dir + "/" + readable + (readable.empty() ? "" : "-") + hash + ".sock";
}

Result<std::string> Call(const std::string& socket_path, const std::string& request_json,
                         std::chrono::milliseconds timeout) {
  asio::io_context io;
  Local::socket socket(io);
  boost::system::error_code result = asio::error::timed_out;
  const char* stage = "connect";
  asio::streambuf reply(kMaxRequestBytes);
  std::string request = request_json + "\n";
  std::size_t reply_bytes = 0;

  socket.async_connect(Local::endpoint(socket_path), [&](boost::system::error_code ec) {
    if (ec) {
      result = ec;
      return;
    }
    stage = "send";
    asio::async_write(socket, asio::buffer(request),
                      [&](boost::system::error_code ec, std::size_t) {
                        if (ec) {
                          result = ec;
                          return;
                        }
                        stage = "reply";
                        asio::async_read_until(socket, reply, '\n',
                                               [&](boost::system::error_code ec, std::size_t n) {
                                                 result = ec;
                                                 reply_bytes = n;
                                               });
                      });
  });
  io.run_for(timeout);
  boost::system::error_code ignored;
  socket.close(ignored);
  io.run();  // let cancelled handlers finish; they only assign to locals

  if (!result) {
    std::string text(
        asio::buffers_begin(reply.data()),
        asio::buffers_begin(reply.data()) + static_cast<std::ptrdiff_t>(reply_bytes) - 1);
    return text;
  }
  if (std::string(stage) == "connect") {
    if (result == asio::error::not_found || result.value() == ENOENT ||
        result == asio::error::connection_refused) {
      return Status(ErrorCode::kNotFound, "no ossmount daemon answers on control socket " +
                                              socket_path + " (" + result.message() +
                                              "); is it mounted by ossmount?");
    }
    if (result.value() == EACCES || result.value() == EPERM) {
      return Status(ErrorCode::kAccessDenied,
                    "control socket " + socket_path +
                        " refuses this user (permission denied); run as the mount's owner");
    }
  }
  if (result == asio::error::timed_out || result == asio::error::operation_aborted) {
    return Status(ErrorCode::kTimeout, std::string("the ossmount daemon on control socket ") +
                                           socket_path + " did not answer within " +
                                           std::to_string(timeout.count()) + " ms (" + stage + ")");
  }
  return Status(ErrorCode::kNetwork, std::string("control socket ") + socket_path + ": " + stage +
                                         " failed: " + result.message());
}

}  // namespace ossmount::control
