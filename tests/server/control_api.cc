#include "server_context.h"

#include <optional>
#include <stdexcept>

namespace ossmount::testserver {

namespace {
Response Json(unsigned status, std::string body) {
  Response r;
  r.status = status;
  r.SetText(std::move(body) + "\n", "application/json");
  return r;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}
}  // namespace

Response HandleControl(const RequestInfo& info, ServerContext& ctx) {
  const std::string what = info.path.substr(std::string("/_ossmount/").size());
  if (what == "stats" && info.method == "GET") {
    return Json(200, ctx.stats.ToJson({{"open_multipart_uploads", ctx.uploads.open_count()}}));
  }
  if (what == "uploads" && info.method == "GET") {
    // Every open multipart upload: what a test names when one was left behind.
    auto all = ctx.uploads.All();
    std::string body = "{\"open\":" + std::to_string(all.size()) + ",\"uploads\":[";
    for (size_t i = 0; i < all.size(); ++i) {
      body += (i ? ",{" : "{");
      body += "\"bucket\":" + JsonString(all[i].bucket) + ",\"key\":" + JsonString(all[i].key) +
              ",\"upload_id\":" + JsonString(all[i].upload_id) +
              ",\"parts\":" + std::to_string(all[i].parts) +
              ",\"bytes\":" + std::to_string(all[i].bytes) + "}";
    }
    return Json(200, body + "]}");
  }
  if (what == "health" && info.method == "GET") return Json(200, "{\"ok\":true}");
  if (what == "object-gets" && info.method == "GET") return Json(200, ctx.object_gets.ToJson());
  if (what == "accelerator" && info.method == "GET" && ctx.accelerator) {
    return Json(200, ctx.accelerator->ToJson());
  }
  if (what == "accelerator-drop" && info.method == "POST" && ctx.accelerator) {
    ctx.accelerator->Drop();
    return Json(200, "{\"ok\":true}");
  }
  if (what == "reset" && info.method == "POST") {
    ctx.stats.Reset();
    ctx.object_gets.Reset();
    if (ctx.accelerator) ctx.accelerator->ResetCounts();
    return Json(200, "{\"ok\":true}");
  }
  if (what == "faults" && info.method == "GET") return Json(200, ctx.faults.settings().ToJson());
  if (what == "faults" && info.method == "POST") {
    FaultSettings s = ctx.faults.settings();
    for (const auto& [name, value] : info.query) {
      if (name == "clear") {
        s = FaultSettings();
        continue;
      }
      Status st = s.Set(name, value);
      if (!st.ok()) return Json(400, "{\"error\":" + JsonString(st.message()) + "}");
    }
    ctx.faults.set_settings(s);
    return Json(200, s.ToJson());
  }
  if (what == "sts" && info.method == "POST") {
    // POST /_ossmount/sts?token=T[&expires_at=UNIX]: accept T too (STS rotation). The
    // token is never echoed back.
    const std::string* token = info.Query("token");
    if (token == nullptr || token->empty()) return Json(400, "{\"error\":\"token is required\"}");
    std::optional<int64_t> expires_at;
    if (const std::string* e = info.Query("expires_at")) {
      try {
        size_t used = 0;
        expires_at = std::stoll(*e, &used);
        if (used != e->size()) throw std::invalid_argument("trailing");
      } catch (const std::exception&) {
        return Json(400, "{\"error\":\"expires_at is not unix seconds\"}");
      }
    }
    ctx.auth.AddStsToken(*token, expires_at);
    return Json(200, "{\"ok\":true}");
  }
  if (what == "rescan" && info.method == "POST") {
    Status st = ctx.store.Scan();
    if (!st.ok()) return Json(500, "{\"error\":" + JsonString(st.message()) + "}");
    return Json(200, "{\"ok\":true}");
  }
  return Json(404, "{\"error\":\"unknown control request\"}");
}

}  // namespace ossmount::testserver
