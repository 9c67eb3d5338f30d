#include "object_api.h"

#include <atomic>

#include "api_util.h"
#include "common/time_util.h"
#include "range.h"
#include "xml_writer.h"

namespace ossmount::testserver {

namespace http = boost::beast::http;

namespace {

void AddObjectHeaders(const RequestInfo& info, const ObjectInfo& obj, uint64_t crc, Response& r) {
  const bool s3 = info.dialect == Dialect::kS3;
  r.Add("Content-Type", obj.content_type);
  r.Add("ETag", Quoted(obj.etag));
  r.Add("Last-Modified", FormatRfc1123(obj.mtime));
  r.Add("Accept-Ranges", "bytes");
  r.Add("x-oss-hash-crc64ecma", std::to_string(crc));
  if (!s3) {
    r.Add("x-oss-object-type", obj.object_type);
    r.Add("x-oss-storage-class", "Standard");
    // As OSS tells it on HEAD and GET: where an append must start.
    if (obj.object_type == "Appendable") {
      r.Add("x-oss-next-append-position", std::to_string(obj.size));
    }
  }
  for (const auto& [name, value] : obj.user_meta) {
    r.Add((s3 ? "x-amz-meta-" : "x-oss-meta-") + name, value);
  }
}

std::atomic<uint64_t> g_request_counter{0};

}  // namespace

const char* ErrorCenterCode(const std::string& code) {
  if (code == "NoSuchKey") return "0026-00000001";
  if (code == "NoSuchBucket") return "0015-00000101";
  if (code == "AccessDenied") return "0003-00000001";
  if (code == "InvalidAccessKeyId") return "0002-00000005";
  if (code == "SignatureDoesNotMatch") return "0002-00000040";
  if (code == "RequestTimeTooSkewed") return "0002-00000504";
  if (code == "SecurityTokenExpired" || code == "InvalidSecurityToken") return "0002-00000707";
  if (code == "InvalidRange") return "0003-00001400";
  if (code == "PreconditionFailed") return "0026-00000005";
  if (code == "InvalidArgument") return "0017-00000001";
  if (code == "SlowDown" || code == "QpsLimitExceeded") return "0007-00000001";
  if (code == "PositionNotEqualToLength") return "0026-00000016";
  if (code == "SymlinkTargetNotExist") return "0026-00000012";
  if (code == "NotSymlink") return "0043-00000101";
  return "0000-00000000";
}

void ObjectApi::AddCommonHeaders(const RequestInfo& info, Response& r) {
  if (info.dialect == Dialect::kS3) {
    r.Add("x-amz-request-id", info.request_id);
    r.Add("x-amz-id-2", info.request_id);
    r.Add("Server", "ossmount-testserver");
  } else {
    r.Add("x-oss-request-id", info.request_id);
    r.Add("Server", "AliyunOSS");
  }
  r.Add("Date", FormatRfc1123(std::chrono::system_clock::now()));
}

Response ObjectApi::Error(const RequestInfo& info, unsigned status, const std::string& code,
                          const std::string& message, const std::string& key) {
  Response r;
  r.status = status;
  const bool oss = info.dialect == Dialect::kOss;
  if (oss) r.Add("x-oss-ec", ErrorCenterCode(code));
  if (info.method == "HEAD") {
    r.omit_body = true;
    return r;
  }
  std::string body = kXmlDecl;
  body += "<Error>";
  AppendElement(body, "Code", code);
  AppendElement(body, "Message", message);
  AppendElement(body, "RequestId", info.request_id);
  AppendElement(body, "HostId", info.host.empty() ? "localhost" : info.host);
  if (!key.empty()) AppendElement(body, "Key", key);
  if (!info.bucket.empty() && code == "NoSuchBucket")
    AppendElement(body, "BucketName", info.bucket);
  if (oss) AppendElement(body, "EC", ErrorCenterCode(code));
  body += "</Error>\n";
  r.SetText(std::move(body), "application/xml");
  return r;
}

Response ObjectApi::FromStatus(const RequestInfo& info, const Status& s) {
  std::string msg = s.message();
  std::string code;
  if (size_t colon = msg.find(": ");
      colon != std::string::npos && colon < 40 && msg.find(' ') > colon) {
    code = msg.substr(0, colon);
    msg = msg.substr(colon + 2);
  }
  switch (s.code()) {
    case ErrorCode::kNoSuchBucket:
      return Error(info, 404, "NoSuchBucket", "The specified bucket does not exist.");
    case ErrorCode::kNotFound:
      return Error(info, 404, code.empty() ? "NoSuchKey" : code, msg, info.key);
    case ErrorCode::kInvalidArgument:
      return Error(info, 400, code.empty() ? "InvalidArgument" : code, msg);
    case ErrorCode::kPreconditionFailed:
      return OverwriteRefused(info);
    default:
      return Error(info, 500, "InternalError", msg);
  }
}

Response ObjectApi::Handle(const RequestInfo& info, HttpRequest& req) {
  switch (info.op) {
    case Op::kGetObject:
      return GetOrHead(info, req, false);
    case Op::kHeadObject:
      return GetOrHead(info, req, true);
    case Op::kPutObject:
      return Put(info, req);
    case Op::kCopyObject:
      return Copy(info, req);
    case Op::kDeleteObject:
      return DeleteObject(info);
    case Op::kInitiateMultipart:
      return InitiateMultipart(info, req);
    case Op::kUploadPart:
      return UploadPart(info, req);
    case Op::kUploadPartCopy:
      return UploadPartCopy(info, req);
    case Op::kCompleteMultipart:
      return CompleteMultipart(info, req);
    case Op::kAbortMultipart:
      return AbortMultipart(info);
    case Op::kListMultipartUploads:
      return ListMultipartUploads(info);
    case Op::kListParts:
      return ListParts(info);
    case Op::kAppendObject:
      return AppendObject(info, req);
    case Op::kPutSymlink:
      return PutSymlink(info, req);
    case Op::kGetSymlink:
      return GetSymlink(info);
    case Op::kListObjectsV2:
      return ListObjects(info, true);
    case Op::kListObjectsV1:
      return ListObjects(info, false);
    case Op::kListBuckets:
      return ListBuckets(info);
    case Op::kDeleteMultiple:
      return DeleteMultiple(info, req);
    case Op::kHeadBucket:
    case Op::kGetBucketLocation:
    case Op::kCreateBucket:
    case Op::kDeleteBucket:
      return BucketOp(info, req);
    default:
      return Error(info, 501, "NotImplemented",
                   "This operation is not implemented by ossmount-testserver.");
  }
}

std::string NewRequestId() {
  uint64_t n = g_request_counter.fetch_add(1);
  unsigned char bytes[12];
  uint64_t t = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<unsigned char>(t >> (8 * i));
  for (int i = 0; i < 8; ++i) bytes[4 + i] = static_cast<unsigned char>(n >> (56 - 8 * i));
  return HexUpper(bytes, 12);
}

Response ObjectApi::GetOrHead(const RequestInfo& info, const HttpRequest& req, bool head) {
  ObjectPtr obj = store_.Find(info.bucket, info.key);
  if (!obj) {
    if (!store_.BucketExists(info.bucket)) {
      return Error(info, 404, "NoSuchBucket", "The specified bucket does not exist.");
    }
    return Error(info, 404, "NoSuchKey", "The specified key does not exist.", info.key);
  }
  if (obj->object_type == "Symlink") {
    // OSS follows the link: the target's bytes under the link's own type and metadata.
    auto followed = store_.FollowSymlink(info.bucket, obj);
    if (!followed.ok()) return FromStatus(info, followed.status());
    return ServeObject(info, req, followed.value(), head);
  }
  return ServeObject(info, req, obj, head);
}

Response ObjectApi::ServeObject(const RequestInfo& info, const HttpRequest& req,
                                const ObjectPtr& obj, bool head) {
  // Preconditions (RFC 7232 order: If-Match, If-Unmodified-Since, If-None-Match,
  // If-Modified-Since).
  if (auto v = HeaderValue(req, "If-Match"); !v.empty() && !EtagListMatches(v, obj->etag)) {
    return Error(info, 412, "PreconditionFailed",
                 "At least one of the pre-conditions you specified did not hold.");
  }
  auto obj_secs = std::chrono::system_clock::to_time_t(obj->mtime);
  if (auto v = HeaderValue(req, "If-Unmodified-Since"); !v.empty()) {
    auto t = ParseRfc1123(v);
    if (t.ok() && obj_secs > t.value()) {
      return Error(info, 412, "PreconditionFailed",
                   "At least one of the pre-conditions you specified did not hold.");
    }
  }
  bool not_modified = false;
  if (auto v = HeaderValue(req, "If-None-Match"); !v.empty()) {
    not_modified = EtagListMatches(v, obj->etag);
  } else if (auto v2 = HeaderValue(req, "If-Modified-Since"); !v2.empty()) {
    auto t = ParseRfc1123(v2);
    not_modified = t.ok() && obj_secs <= t.value();
  }
  auto crc = store_.Crc(obj);
  if (!crc.ok()) return FromStatus(info, crc.status());
  Response r;
  if (not_modified) {
    r.status = 304;
    r.Add("ETag", Quoted(obj->etag));
    r.Add("Last-Modified", FormatRfc1123(obj->mtime));
    r.omit_body = true;
    return r;
  }

  RangeResult range;
  if (!head) {
    if (auto v = HeaderValue(req, "Range"); !v.empty()) {
      RangeMode mode = RangeMode::kS3;
      if (info.dialect == Dialect::kOss) {
        std::string behavior = HeaderValue(req, "x-oss-range-behavior");
        mode = behavior == "standard" ? RangeMode::kOssStandard : RangeMode::kOssLegacy;
      }
      range = EvaluateRange(v, obj->size, mode);
    }
  }
  if (range.kind == RangeResult::Kind::kUnsatisfiable) {
    Response e =
        Error(info, 416, "InvalidRange", "The requested range cannot be satisfied.", info.key);
    e.Add("Content-Range", "bytes */" + std::to_string(obj->size));
    return e;
  }
  AddObjectHeaders(info, *obj, crc.value(), r);
  if (range.kind == RangeResult::Kind::kPartial) {
    r.status = 206;
    r.Add("Content-Range", "bytes " + std::to_string(range.first) + "-" +
                               std::to_string(range.last) + "/" + std::to_string(obj->size));
    r.body_offset = range.first;
    r.body_length = range.last - range.first + 1;
  } else {
    if (!obj->content_md5.empty()) r.Add("Content-MD5", obj->content_md5);
    r.body_offset = 0;
    r.body_length = obj->size;
  }
  if (head) {
    r.omit_body = true;
    return r;
  }
  auto content = store_.LoadContent(obj);
  if (!content.ok()) return FromStatus(info, content.status());
  if (content.value()) {
    if (content.value()->size() != obj->size) {
      return Error(info, 500, "InternalError", "object changed while being read");
    }
    r.body = content.value();
  } else {
    r.file_path = obj->disk_path;
    r.file_ino = obj->disk_ino;
    r.file_mtime_ns = obj->disk_mtime_ns;
    r.file_size = obj->size;
  }
  return r;
}

Response ObjectApi::Put(const RequestInfo& info, HttpRequest& req) {
  if (!HasHeader(req, "Content-Length")) {
    return Error(info, 411, "MissingContentLength",
                 "You must provide the Content-Length HTTP header.");
  }
  if (auto bad = CheckContentDigest(info, req, false)) return *bad;
  PutOptions options;
  options.content_type = HeaderValue(req, "Content-Type");
  options.user_meta = CollectUserMeta(req);
  options.forbid_overwrite = OverwriteForbidden(info, req, true);
  options.digests = info.body_digests;
  auto put = store_.Put(info.bucket, info.key, std::move(req.body()), options);
  if (!put.ok()) return FromStatus(info, put.status());
  Response r;
  r.Add("ETag", Quoted(put.value()->etag));
  r.Add("x-oss-hash-crc64ecma", std::to_string(*put.value()->known_crc));
  if (!put.value()->content_md5.empty()) r.Add("Content-MD5", put.value()->content_md5);
  return r;
}

Response ObjectApi::DeleteObject(const RequestInfo& info) {
  if (!store_.BucketExists(info.bucket)) {
    return Error(info, 404, "NoSuchBucket", "The specified bucket does not exist.");
  }
  store_.Delete(info.bucket, info.key);
  Response r;
  r.status = 204;
  return r;
}

}  // namespace ossmount::testserver
