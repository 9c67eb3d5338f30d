#include "control/command_table.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <cstdlib>
#include <map>
#include <mutex>

#include "common/bounded_json.h"
#include "common/read_file.h"
#include "common/thread_group.h"

namespace ossmount::control {

namespace asio = boost::asio;

struct CommandTable::State {
  State(asio::io_context& io, unsigned owner) : strand(asio::make_strand(io)), owner_uid(owner) {}

  struct Entry {
    PeerHandler handler;
    Access access = Access::kOwner;
  };

  std::string Dispatch(const std::string& text, const Peer& peer);

  asio::strand<asio::io_context::executor_type> strand;
  const unsigned owner_uid;
  std::mutex mu;  // guards commands
  std::map<std::string, Entry> commands;
};

std::string CommandTable::State::Dispatch(const std::string& text, const Peer& peer) {
  rapidjson::Document request;
  std::string_view json(text);
  if (!json.empty() && json.back() == '\n') json.remove_suffix(1);
  // Any user of an allow_other mount can send a request: its nesting and size are bounded
  // (a million '[' would otherwise overflow the stack), and the table keeps serving.
  Status parsed = ParseBoundedJson(
      json, {.max_bytes = kMaxRequestBytes, .max_values = kMaxRequestValues}, &request);
  if (!parsed.ok()) return ErrorReply("the request is not a JSON object: " + parsed.message());
  if (!request.IsObject()) return ErrorReply("the request is not a JSON object");
  auto command = request.FindMember("command");
  if (command == request.MemberEnd() || !command->value.IsString()) {
    return ErrorReply("the request has no \"command\" string");
  }
  const std::string name = command->value.GetString();
  Entry entry;
  {
    std::lock_guard lock(mu);
    auto it = commands.find(name);
    if (it == commands.end()) {
      std::string known;
      for (const auto& [k, v] : commands) known += (known.empty() ? "" : ", ") + k;
      return ErrorReply("unknown command '" + name +
                        "' (known: " + (known.empty() ? "none" : known) + ")");
    }
    entry = it->second;
  }
  if (entry.access == Access::kOwner && peer.uid != owner_uid && peer.uid != 0) {
    return ErrorReply("command '" + name + "' is for the mount's owner (uid " +
                      std::to_string(owner_uid) + ") and root only; this request came from uid " +
                      std::to_string(peer.uid));
  }
  Result<std::string> result = Status(ErrorCode::kInternal, "no result");
  try {
    result = entry.handler(request, peer);
  } catch (const std::exception& e) {
    return ErrorReply("command '" + name + "' failed: " + e.what());
  }
  if (!result.ok()) return ErrorReply(result.status().message());
  auto reply = OkReply(*result);
  if (!reply.ok()) {
    spdlog::error("control command '{}': {}", name, reply.status().message());
    return ErrorReply("command '" + name + "' produced a malformed result (a bug)");
  }
  return *reply;
}

CommandTable::CommandTable(asio::io_context& io, unsigned owner_uid)
    : state_(std::make_shared<State>(io, owner_uid)) {}

CommandTable::~CommandTable() = default;

void CommandTable::Register(std::string command, Handler handler, Access access) {
  RegisterWithPeer(
      std::move(command),
      [handler = std::move(handler)](const rapidjson::Document& request, const Peer&) {
        return handler(request);
      },
      access);
}

void CommandTable::RegisterWithPeer(std::string command, PeerHandler handler, Access access) {
  std::lock_guard lock(state_->mu);
  state_->commands[std::move(command)] = State::Entry{std::move(handler), access};
}

void CommandTable::Answer(std::string request, Peer peer,
                          std::function<void(std::string answer)> done) {
  // The handler holds the state, so an answer queued when the table goes is still given.
  asio::post(state_->strand,
             [state = state_, request = std::move(request), peer, done = std::move(done)] {
               std::string answer = state->Dispatch(request, peer);
               answer.push_back('\n');
               done(std::move(answer));
             });
}

std::string CommandTable::Dispatch(const std::string& request, const Peer& peer) {
  return state_->Dispatch(request, peer);
}

int ProcessOfThread(int tid) { return ossmount::ProcessOfThread(tid); }

std::string ErrorReply(const std::string& message) {
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> w(out);
  w.StartObject();
  w.Key("ok");
  w.Bool(false);
  w.Key("error");
  w.String(message.data(), static_cast<rapidjson::SizeType>(message.size()));
  w.EndObject();
  return out.GetString();
}

Result<std::string> OkReply(const std::string& fields) {
  rapidjson::Document doc;
  // A handler's own output, but bounded like any JSON parsed here: it costs nothing.
  if (!ParseBoundedJson(fields, {kMaxRequestBytes}, &doc).ok() || !doc.IsObject()) {
    return Status(ErrorCode::kInternal, "a handler result is not a JSON object");
  }
  if (doc.HasMember("ok")) {
    return Status(ErrorCode::kInternal, "a handler result must not contain \"ok\"");
  }
  if (doc.MemberCount() == 0) return std::string(R"({"ok":true})");
  auto open = fields.find('{');
  return std::string(R"({"ok":true,)") + fields.substr(open + 1);
}

}  // namespace ossmount::control
