#include "object/write_support.h"

#include "object/headers.h"
#include "object/response_parsers.h"

namespace ossmount::object {

std::function<GetTarget()> XmlReplyTarget(std::shared_ptr<std::vector<char>> body) {
  return [body = std::move(body)] {
    body->clear();
    return GetTarget::Growable(body.get(), kMaxXmlResponseBytes);
  };
}

std::string HeaderOr(const http::Response& r, std::string_view name) {
  const std::string* v = FindHeader(r.headers, name);
  return v ? *v : std::string();
}

Status CheckUploadCrc(const http::Response& r, const Dialect& dialect, uint64_t local_crc,
                      const std::string& what) {
  auto server = ResponseCrc64(r.headers, dialect);
  if (server && *server != local_crc) {
    return Status(ErrorCode::kIntegrity,
                  what + ": the server stored different bytes (CRC-64 " + std::to_string(*server) +
                      ", sent " + std::to_string(local_crc) + ")",
                  true);
  }
  return Status::Ok();
}

bool MayBeOwnEarlierAttempt(const MappedError& e, int attempt, bool completing,
                            bool forbid_overwrite) {
  // NoSuchUpload from a Complete may answer the client's own earlier attempt even on what it
  // counts as the first: libcurl sends a request again on a fresh connection when the
  // reused one was reset before any answer, and the first copy may have completed the
  // upload. The HEAD that follows tells.
  if (completing && e.status.service().code == "NoSuchUpload") return true;
  if (attempt < 2) return false;  // the first attempt's refusal is the truth
  return forbid_overwrite && e.status.code() == ErrorCode::kAlreadyExists;
}

Operation HeadOperation(const ClientContext& ctx, const std::string& key, bool data_path,
                        std::shared_ptr<ObjectInfo> into) {
  Operation op;
  op.spec = HeadSpec(key);
  op.data_path = data_path;
  op.error_context.operation = "HEAD";
  op.error_context.key = key;
  op.accept = [into = std::move(into), key, &dialect = ctx.dialect](const http::Response& r) {
    auto parsed = ParseHeadResponse(key, r.headers, dialect);
    if (!parsed.ok()) return parsed.status();
    *into = std::move(parsed.value());
    return Status::Ok();
  };
  return op;
}

void SettleLostAnswer(std::shared_ptr<ClientContext> ctx, const std::string& key,
                      ExpectedObject expected, Status refusal, const std::string& what,
                      PutHandler handler) {
  auto found = std::make_shared<ObjectInfo>();
  // The main endpoint: an accelerator may not have seen the write yet.
  Operation op = HeadOperation(*ctx, key, /*data_path=*/false, found);
  RunOperation(ctx, std::move(op),
               [found, expected = std::move(expected), refusal = std::move(refusal), what, key,
                handler = std::move(handler)](Status s) {
                 if (!s.ok()) {
                   const std::string why =
                       s.code() == ErrorCode::kNotFound
                           ? "there is no object at '" + key + "'"
                           : "checking the object at '" + key + "' failed: " + s.message();
                   return handler(Status(ErrorCode::kIntegrity,
                                         what +
                                             ": the answer was lost and the outcome of the "
                                             "upload is unknown: " +
                                             why,
                                         false));
                 }
                 Status check = CheckFoundObject(*found, expected, what);
                 if (check.ok()) return handler(PutResult{found->etag, found->crc64});
                 // "Already exists", and the object there is not ours: the refusal stands.
                 if (refusal.code() == ErrorCode::kAlreadyExists) return handler(refusal);
                 handler(check);
               });
}

}  // namespace ossmount::object
