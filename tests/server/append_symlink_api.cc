// The OSS-only object operations of ObjectApi: AppendObject (POST /key?append&position=N),
// PutSymlink (PUT /key?symlink) and GetSymlink (GET /key?symlink). S3 has none of them: its
// requests with these sub-resources are classified as before (request_info.cc).
//
// The rules (what is refused, the object types, where bytes live) are ObjectStore's
// (object_store.h Append, PutSymlink, FollowSymlink); this file maps them onto OSS answers.
#include <charconv>

#include "api_util.h"
#include "common/time_util.h"
#include "common/url.h"
#include "object_api.h"

namespace ossmount::testserver {

namespace {

constexpr size_t kMaxKeyBytes = 1023;  // OSS's longest object key

// A decimal uint64 with nothing around it.
bool ParseDecimal(std::string_view text, uint64_t& out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

Response ObjectApi::AppendObject(const RequestInfo& info, HttpRequest& req) {
  if (!HasHeader(req, "Content-Length")) {
    return Error(info, 411, "MissingContentLength",
                 "You must provide the Content-Length HTTP header.");
  }
  const std::string* position = info.Query("position");
  if (position == nullptr) {
    return Error(info, 400, "MissingArgument", "Missing Some Required Arguments: position.");
  }
  AppendOptions options;
  if (!ParseDecimal(*position, options.position)) {
    return Error(info, 400, "InvalidArgument", "position is not a non-negative integer.");
  }
  if (auto bad = CheckContentDigest(info, req, false)) return *bad;
  options.max_size = options_.append_object_limit;
  options.content_type = HeaderValue(req, "Content-Type");
  options.user_meta = CollectUserMeta(req);
  options.digests = info.body_digests;
  auto appended = store_.Append(info.bucket, info.key, std::move(req.body()), options);
  if (!appended.ok()) return FromStatus(info, appended.status());
  const AppendResult& result = appended.value();
  const std::string next = std::to_string(result.next_position);
  using Outcome = AppendResult::Outcome;
  switch (result.outcome) {
    case Outcome::kNotAppendable:
      return Error(info, 409, "ObjectNotAppendable", "The object is not appendable", info.key);
    case Outcome::kPositionMismatch: {
      // The header tells the client where to resume (e.g. after its earlier append's answer
      // was lost and the append had been applied).
      Response r = Error(info, 409, "PositionNotEqualToLength",
                         "Position is not equal to file length", info.key);
      r.Add("x-oss-next-append-position", next);
      return r;
    }
    case Outcome::kTooLarge:
      // OSS documents the 5 GB limit but not its error code: InvalidArgument is our choice.
      return Error(
          info, 400, "InvalidArgument",
          "An appendable object cannot grow past " + std::to_string(options.max_size) + " bytes.",
          info.key);
    case Outcome::kAppended:
      break;
  }
  Response r;
  r.Add("ETag", Quoted(result.object->etag));
  r.Add("x-oss-next-append-position", next);
  r.Add("x-oss-hash-crc64ecma", std::to_string(*result.object->known_crc));
  return r;
}

Response ObjectApi::PutSymlink(const RequestInfo& info, const HttpRequest& req) {
  if (!HasHeader(req, "x-oss-symlink-target")) {
    return Error(info, 400, "MissingArgument",
                 "Missing Some Required Arguments: x-oss-symlink-target.");
  }
  // The SDKs send the target percent-encoded (it is a key, and may hold any byte).
  auto target = PercentDecode(HeaderValue(req, "x-oss-symlink-target"));
  if (!target.ok() || target.value().empty() || target.value().size() > kMaxKeyBytes) {
    return Error(info, 400, "InvalidArgument", "The symlink target is not a valid object key.");
  }
  PutOptions options;
  options.content_type = HeaderValue(req, "Content-Type");
  options.user_meta = CollectUserMeta(req);
  options.forbid_overwrite = OverwriteForbidden(info, req, false);
  auto put = store_.PutSymlink(info.bucket, info.key, target.value(), options);
  if (!put.ok()) return FromStatus(info, put.status());
  Response r;
  r.Add("ETag", Quoted(put.value()->etag));
  return r;
}

Response ObjectApi::GetSymlink(const RequestInfo& info) {
  ObjectPtr obj = store_.Find(info.bucket, info.key);
  if (!obj) {
    if (!store_.BucketExists(info.bucket)) {
      return Error(info, 404, "NoSuchBucket", "The specified bucket does not exist.");
    }
    return Error(info, 404, "NoSuchKey", "The specified key does not exist.", info.key);
  }
  if (obj->object_type != "Symlink") {
    return Error(info, 400, "NotSymlink", "The specified object is not a symlink.", info.key);
  }
  Response r;
  r.Add("x-oss-symlink-target", PercentEncode(obj->symlink_target));
  r.Add("ETag", Quoted(obj->etag));
  r.Add("Last-Modified", FormatRfc1123(obj->mtime));
  return r;
}

}  // namespace ossmount::testserver
