// Fuzz target: control requests (control::CommandTable::Dispatch), which any user of an
// allow_other mount can send through an ioctl, and the bounded JSON parser under them
// (ParseBoundedJson).
//
// Invariants: every answer is a JSON object with a boolean "ok", and an error has a non-empty
// "error"; a request accepted is an object naming a registered command the peer may run; a
// text the bounded parser accepts is nested no deeper than its limit, and on any text it
// does not refuse for depth, it agrees with RapidJSON's recursive parser (same verdict, same
// document).
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/bounded_json.h"
#include "control/command_table.h"
#include "fuzz/fuzz_check.h"

using namespace ossmount;

namespace {

constexpr unsigned kOwner = 1000;
constexpr unsigned kStranger = 65534;

std::string Serialize(const rapidjson::Value& v) {
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> w(out);
  v.Accept(w);  // recursive, but only ever given documents within the depth limit
  return std::string(out.GetString(), out.GetSize());
}

// Arrays and objects nested in one another, counted without recursion.
std::size_t Depth(const rapidjson::Value& root) {
  std::vector<std::pair<const rapidjson::Value*, std::size_t>> todo = {{&root, 0}};
  std::size_t deepest = 0;
  while (!todo.empty()) {
    auto [v, above] = todo.back();
    todo.pop_back();
    if (v->IsArray()) {
      deepest = std::max(deepest, above + 1);
      for (const auto& e : v->GetArray()) todo.emplace_back(&e, above + 1);
    } else if (v->IsObject()) {
      deepest = std::max(deepest, above + 1);
      for (const auto& m : v->GetObject()) todo.emplace_back(&m.value, above + 1);
    }
  }
  return deepest;
}

// A table like the daemon's: commands for anyone (one reading a list of paths, as "hints"
// does) and one for the owner only, so valid requests reach the handlers.
control::CommandTable& Table() {
  static boost::asio::io_context io;  // never run: Dispatch answers on the calling thread
  static control::CommandTable* table = [] {
    spdlog::set_level(spdlog::level::off);
    auto* t = new control::CommandTable(io, kOwner);
    t->Register(
        "stats", [](const rapidjson::Document&) { return Result<std::string>("{\"files\":3}"); },
        control::Access::kAnyUser);
    t->RegisterWithPeer(
        "hints",
        [](const rapidjson::Document& request, const control::Peer& peer) -> Result<std::string> {
          auto paths = request.FindMember("paths");
          if (paths == request.MemberEnd() || !paths->value.IsArray()) {
            return Status(ErrorCode::kInvalidArgument, "\"paths\" must be an array of strings");
          }
          rapidjson::StringBuffer out;
          rapidjson::Writer<rapidjson::StringBuffer> w(out);
          w.StartObject();
          w.Key("directory");
          w.String(peer.directory.c_str(), static_cast<rapidjson::SizeType>(peer.directory.size()));
          w.Key("paths");
          w.StartArray();
          for (const auto& p : paths->value.GetArray()) {
            if (!p.IsString()) {
              return Status(ErrorCode::kInvalidArgument, "\"paths\" must be an array of strings");
            }
            w.String(p.GetString(), p.GetStringLength());
          }
          w.EndArray();
          w.EndObject();
          return std::string(out.GetString(), out.GetSize());
        },
        control::Access::kAnyUser);
    t->Register("cancel", [](const rapidjson::Document&) { return Result<std::string>("{}"); });
    return t;
  }();
  return *table;
}

void CheckDispatch(std::string_view text) {
  // Even-sized requests come from the owner, odd-sized ones from another user.
  const control::Peer peer{42, text.size() % 2 == 0 ? kOwner : kStranger, "data"};
  const std::string answer = Table().Dispatch(std::string(text), peer);

  rapidjson::Document reply;
  FUZZ_CHECK(ParseBoundedJson(answer, {control::kMaxRequestBytes}, &reply).ok());
  FUZZ_CHECK(reply.IsObject());
  auto ok = reply.FindMember("ok");
  FUZZ_CHECK(ok != reply.MemberEnd() && ok->value.IsBool());
  if (!ok->value.GetBool()) {
    auto error = reply.FindMember("error");
    FUZZ_CHECK(error != reply.MemberEnd() && error->value.IsString());
    FUZZ_CHECK(error->value.GetStringLength() > 0);
    return;
  }
  // Accepted: the request was an object within the limits, naming a command this peer may run.
  rapidjson::Document request;
  std::string_view json = text;
  if (!json.empty() && json.back() == '\n') json.remove_suffix(1);
  FUZZ_CHECK(ParseBoundedJson(json, {control::kMaxRequestBytes}, &request).ok());
  FUZZ_CHECK(request.IsObject());
  FUZZ_CHECK(Depth(request) <= kDefaultMaxJsonDepth);
  auto command = request.FindMember("command");
  FUZZ_CHECK(command != request.MemberEnd() && command->value.IsString());
  const std::string name = command->value.GetString();
  FUZZ_CHECK(name == "stats" || name == "hints" || (name == "cancel" && peer.uid == kOwner));
}

void CheckParser(std::string_view text) {
  constexpr std::size_t kDepth = 8;
  constexpr unsigned kFlags = rapidjson::kParseCommentsFlag | rapidjson::kParseTrailingCommasFlag;
  rapidjson::Document bounded;
  Status s = ParseBoundedJson(text, {1u << 20, kDepth}, &bounded, kFlags);
  if (!s.ok()) {
    FUZZ_CHECK(s.code() == ErrorCode::kInvalidArgument);
    FUZZ_CHECK(bounded.IsNull());
    const std::string& m = s.message();
    FUZZ_CHECK(m.starts_with("not valid JSON at ") || m.starts_with("nested deeper than 8 ") ||
               m.find("-byte limit") != std::string::npos);
    if (m.starts_with("nested deeper")) return;  // the recursive parser might not survive it
  } else {
    FUZZ_CHECK(Depth(bounded) <= kDepth);
  }
  // Within the depth limit up to where it stopped: RapidJSON's recursive parser recurses at
  // most kDepth levels on the same text, and must agree. It stops at a NUL byte silently,
  // where the bounded parser refuses what follows: compare only text without one.
  if (text.find('\0') != std::string_view::npos || text.size() > (1u << 20)) return;
  rapidjson::Document recursive;
  recursive.Parse<kFlags>(text.data(), text.size());
  FUZZ_CHECK(recursive.HasParseError() == !s.ok());
  if (s.ok()) FUZZ_CHECK(Serialize(recursive) == Serialize(bounded));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckDispatch(text);
  CheckParser(text);
  return 0;
}
