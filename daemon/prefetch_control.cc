#include "prefetch_control.h"

#include <poll.h>
#include <rapidjson/document.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <cerrno>
#include <csignal>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/unique_fd.h"
#include "prefetch_status_json.h"

namespace ossmount::daemon {

namespace {

Status Bad(const std::string& message) { return Status(ErrorCode::kInvalidArgument, message); }

// NormalizeRequestPath into `out` (cleared first), reusing its buffer: a hint list may hold
// millions of paths.
Status NormalizeInto(std::string_view path, std::string& out) {
  out.clear();
  if (!path.empty() && path[0] == '/') {
    return Bad("path '" + std::string(path) + "' is absolute; give it relative to the mount point");
  }
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    const std::string_view part = path.substr(i, j - i);
    if (part == "..") return Bad("path '" + std::string(path) + "' contains '..'");
    if (!part.empty() && part != ".") {
      if (!out.empty()) out += '/';
      out += part;
    }
    i = j + 1;
  }
  return Status::Ok();
}

// `path` (normalised) named from the daemon's root: under the directory the request came
// through.
void JoinInto(const std::string& directory, const std::string& path, std::string& out) {
  out.clear();
  if (directory.empty()) {
    out = path;
  } else if (path.empty()) {
    out = directory;
  } else {
    out.reserve(directory.size() + 1 + path.size());
    out += directory;
    out += '/';
    out += path;
  }
}

prefetch::Requester RequesterOf(const control::Peer& peer, unsigned owner_uid) {
  prefetch::Requester by;
  by.uid = peer.uid;
  by.owner = peer.uid == owner_uid || peer.uid == 0;
  return by;
}

// The "paths" array of strings of a request, normalised and named from the daemon's root:
// each is relative to the directory the request came through (peer.directory).
Result<std::vector<std::string>> Paths(const rapidjson::Document& request,
                                       const control::Peer& peer, bool allow_empty) {
  auto it = request.FindMember("paths");
  if (it == request.MemberEnd() || !it->value.IsArray()) {
    return Bad("\"paths\" must be an array of paths relative to the mount point");
  }
  std::vector<std::string> out;
  out.reserve(it->value.Size());
  for (const auto& v : it->value.GetArray()) {
    if (!v.IsString()) return Bad("\"paths\" must hold strings only");
    auto p = NormalizeRequestPath(std::string(v.GetString(), v.GetStringLength()));
    if (!p.ok()) return p.status();
    if (peer.directory.empty()) {
      out.push_back(std::move(*p));
    } else {
      out.push_back(p->empty() ? peer.directory : peer.directory + "/" + *p);
    }
  }
  if (out.empty() && !allow_empty) return Bad("\"paths\" is empty: give at least one path");
  return out;
}

}  // namespace

prefetch::HintSender HintSenderOf(const control::Peer& peer, const rapidjson::Document& request) {
  prefetch::HintSender sender;
  sender.pid = peer.pid;
  if (peer.pid <= 0) {  // not visible from here: counts as running, named by its client
    auto name = request.FindMember("sender");
    if (name != request.MemberEnd() && name->value.IsString()) {
      sender.name.assign(name->value.GetString(),
                         std::min<size_t>(name->value.GetStringLength(), kMaxSenderName));
    }
    return sender;
  }
  // A pidfd names this very process, so a later process that reuses the pid is not
  // mistaken for the sender; it becomes readable when the process exits.
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, peer.pid, 0)));
  if (pidfd) {
    auto fd = std::make_shared<UniqueFd>(std::move(pidfd));
    sender.alive = [fd] {
      pollfd p{fd->get(), POLLIN, 0};
      return poll(&p, 1, 0) == 0;
    };
  } else if (errno == ESRCH) {
    sender.alive = [] { return false; };  // sent its list and exited already
  } else {
    const int pid = peer.pid;  // no pidfd (an old kernel): ask by pid
    sender.alive = [pid] { return kill(pid, 0) == 0 || errno == EPERM; };
  }
  return sender;
}

Result<std::string> NormalizeRequestPath(const std::string& path) {
  std::string out;
  if (Status st = NormalizeInto(path, out); !st.ok()) return st;
  return out;
}

void RegisterPrefetchCommands(control::CommandTable& commands, boost::asio::io_context& io,
                              std::shared_ptr<prefetch::DatasetPrefetcher> prefetcher,
                              unsigned owner_uid) {
  auto lists = std::make_shared<boost::asio::strand<boost::asio::io_context::executor_type>>(
      boost::asio::make_strand(io));
  // Warm-up and hints only fetch what the caller could read, and its status only reports:
  // any user of the mount may ask, within the control memory's limits for other users (see
  // DatasetPrefetcher). Cancelling stops everyone's warm-ups: the owner's call.
  commands.RegisterWithPeer(
      "warmup",
      [prefetcher, owner_uid](const rapidjson::Document& request,
                              const control::Peer& peer) -> Result<std::string> {
        auto paths = Paths(request, peer, /*allow_empty=*/false);
        if (!paths.ok()) return paths.status();
        int concurrency = 0;
        if (auto c = request.FindMember("concurrency"); c != request.MemberEnd()) {
          if (!c->value.IsInt() || c->value.GetInt() < 1 || c->value.GetInt() > 4096) {
            return Bad("\"concurrency\" must be an integer between 1 and 4096");
          }
          concurrency = c->value.GetInt();
        }
        auto id = prefetcher->StartWarmupFor(RequesterOf(peer, owner_uid), std::move(*paths),
                                             concurrency);
        if (!id.ok()) return id.status();
        return "{\"job\":" + std::to_string(*id) + "}";
      },
      control::Access::kAnyUser);
  commands.Register(
      "warmup-status",
      [prefetcher](const rapidjson::Document&) -> Result<std::string> {
        return PrefetchStatusJson(prefetcher->Status(), prefetcher->options());
      },
      control::Access::kAnyUser);
  commands.Register("warmup-cancel",
                    [prefetcher](const rapidjson::Document&) -> Result<std::string> {
                      return "{\"cancelled\":" + std::to_string(prefetcher->CancelWarmups()) + "}";
                    });
  commands.RegisterWithPeer(
      "hints",
      [prefetcher, lists, owner_uid](const rapidjson::Document& request,
                                     const control::Peer& peer) -> Result<std::string> {
        auto it = request.FindMember("paths");
        if (it == request.MemberEnd() || !it->value.IsArray()) {
          return Bad("\"paths\" must be an array of paths relative to the mount point");
        }
        const auto& array = it->value;
        // First the size of the list, checked against the control memory before anything
        // is built; then the list, straight into its compact form (no vector of strings).
        std::string path, joined;
        uint64_t bytes = 0;
        for (const auto& v : array.GetArray()) {
          if (!v.IsString()) return Bad("\"paths\" must hold strings only");
          Status st = NormalizeInto(std::string_view(v.GetString(), v.GetStringLength()), path);
          if (!st.ok()) return st;
          JoinInto(peer.directory, path, joined);
          bytes += joined.size();
        }
        bool append = false;
        if (auto a = request.FindMember("append"); a != request.MemberEnd()) {
          if (!a->value.IsBool()) return Bad("\"append\" must be true or false");
          append = a->value.GetBool();
        }
        const size_t n = array.Size();
        prefetch::HintSender sender = HintSenderOf(peer, request);
        sender.by = RequesterOf(peer, owner_uid);
        auto reservation = prefetcher->ReserveHints(sender, n, bytes, append);
        if (!reservation.ok()) return reservation.status();
        prefetch::HintPaths list;
        list.Reserve(n, bytes);
        for (const auto& v : array.GetArray()) {
          (void)NormalizeInto(std::string_view(v.GetString(), v.GetStringLength()), path);
          JoinInto(peer.directory, path, joined);
          list.Add(joined);
        }
        // Indexing millions of paths takes a moment: not on the control connection's turn,
        // but in the order the requests came (a list's pieces follow its start).
        boost::asio::post(
            *lists, [prefetcher, append, list = std::move(list), sender = std::move(sender),
                     reservation = std::move(*reservation)]() mutable {
              if (append) {
                prefetcher->AppendHints(std::move(list), std::move(sender), std::move(reservation));
              } else {
                prefetcher->SetHints(std::move(list), std::move(sender), std::move(reservation));
              }
            });
        return "{\"files\":" + std::to_string(n) + "}";
      },
      control::Access::kAnyUser);
}

}  // namespace ossmount::daemon
