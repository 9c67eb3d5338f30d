#include "object_api.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <pugixml.hpp>

#include "common/time_util.h"
#include "common/url.h"
#include "range.h"
#include "xml_writer.h"

namespace ossmount::testserver {

namespace http = boost::beast::http;

namespace {

constexpr const char* kXmlDecl = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

std::string HeaderValue(const HttpRequest& req, std::string_view name) {
  auto it = req.find(name);
  return it == req.end() ? std::string() : std::string(it->value());
}

bool HasHeader(const HttpRequest& req, std::string_view name) {
  return req.find(name) != req.end();
}

std::string Quoted(const std::string& etag) { return "\"" + etag + "\""; }

// If-Match / If-None-Match lists: "*" or comma-separated (quoted or bare) etags.
bool EtagListMatches(std::string_view list, const std::string& etag) {
  size_t start = 0;
  while (start < list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view item = list.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.substr(0, 2) == "W/") item.remove_prefix(2);
    if (item.size() >= 2 && item.front() == '"' && item.back() == '"') {
      item = item.substr(1, item.size() - 2);
    }
    if (item == "*" || (item.size() == etag.size() &&
                        std::equal(item.begin(), item.end(), etag.begin(), [](char a, char b) {
                          return std::toupper(static_cast<unsigned char>(a)) ==
                                 std::toupper(static_cast<unsigned char>(b));
                        }))) {
      return true;
    }
    start = comma + 1;
  }
  return false;
}

MetaList CollectUserMeta(const HttpRequest& req) {
  MetaList meta;
  for (const auto& f : req) {
    std::string name(f.name_string());
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const char* prefix : {"x-oss-meta-", "x-amz-meta-"}) {
      std::string_view p(prefix);
      if (name.rfind(p, 0) == 0) meta.emplace_back(name.substr(p.size()), std::string(f.value()));
    }
  }
  return meta;
}

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
      return Error(info, 409, "FileAlreadyExists", "The object you specified already exists.");
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
    case Op::kCompleteMultipart:
      return CompleteMultipart(info, req);
    case Op::kAbortMultipart:
      return AbortMultipart(info);
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
  if (auto md5 = HeaderValue(req, "Content-MD5"); !md5.empty() && md5 != Md5Base64(req.body())) {
    return Error(info, 400, "InvalidDigest", "The Content-MD5 you specified is not valid.");
  }
  PutOptions options;
  options.content_type = HeaderValue(req, "Content-Type");
  options.user_meta = CollectUserMeta(req);
  options.forbid_overwrite = HeaderValue(req, "x-oss-forbid-overwrite") == "true";
  auto put = store_.Put(info.bucket, info.key, std::move(req.body()), options);
  if (!put.ok()) return FromStatus(info, put.status());
  Response r;
  r.Add("ETag", Quoted(put.value()->etag));
  r.Add("x-oss-hash-crc64ecma", std::to_string(*put.value()->known_crc));
  if (!put.value()->content_md5.empty()) r.Add("Content-MD5", put.value()->content_md5);
  return r;
}

// Reads a whole object into memory (copy source).
static Result<std::string> ReadAll(ObjectStore& store, const ObjectPtr& obj) {
  auto content = store.LoadContent(obj);
  if (!content.ok()) return content.status();
  if (content.value()) return std::string(*content.value());
  std::string data(obj->size, '\0');
  int fd = ::open(obj->disk_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(ErrorCode::kNotFound, "NoSuchKey: The specified key does not exist.");
  uint64_t done = 0;
  while (done < obj->size) {
    ssize_t n = ::pread(fd, data.data() + done, obj->size - done, static_cast<off_t>(done));
    if (n <= 0) break;
    done += static_cast<uint64_t>(n);
  }
  ::close(fd);
  if (done != obj->size) return Status(ErrorCode::kInternal, "copy source changed while read");
  return data;
}

Response ObjectApi::Copy(const RequestInfo& info, const HttpRequest& req) {
  std::string source = HeaderValue(req, "x-oss-copy-source");
  if (source.empty()) source = HeaderValue(req, "x-amz-copy-source");
  auto decoded = PercentDecode(source.substr(0, source.find('?')));
  if (!decoded.ok()) return Error(info, 400, "InvalidArgument", "Malformed copy source.");
  std::string src = decoded.value();
  if (!src.empty() && src[0] == '/') src = src.substr(1);
  size_t slash = src.find('/');
  if (slash == std::string::npos)
    return Error(info, 400, "InvalidArgument", "Malformed copy source.");
  std::string src_bucket = src.substr(0, slash), src_key = src.substr(slash + 1);
  ObjectPtr obj = store_.Find(src_bucket, src_key);
  if (!obj) return Error(info, 404, "NoSuchKey", "The specified key does not exist.", src_key);
  auto data = ReadAll(store_, obj);
  if (!data.ok()) return FromStatus(info, data.status());
  PutOptions options;
  std::string directive = HeaderValue(req, "x-oss-metadata-directive");
  if (directive.empty()) directive = HeaderValue(req, "x-amz-metadata-directive");
  if (directive == "REPLACE") {
    options.content_type = HeaderValue(req, "Content-Type");
    options.user_meta = CollectUserMeta(req);
  } else {
    options.content_type = obj->content_type;
    options.user_meta = obj->user_meta;
  }
  auto put = store_.Put(info.bucket, info.key, std::move(data.value()), options);
  if (!put.ok()) return FromStatus(info, put.status());
  Response r;
  std::string body = kXmlDecl;
  body += "<CopyObjectResult>";
  AppendElement(body, "LastModified", FormatIso8601(put.value()->mtime));
  AppendElement(body, "ETag", Quoted(put.value()->etag));
  body += "</CopyObjectResult>\n";
  r.SetText(std::move(body), "application/xml");
  r.Add("ETag", Quoted(put.value()->etag));
  r.Add("x-oss-hash-crc64ecma", std::to_string(*put.value()->known_crc));
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

Response ObjectApi::InitiateMultipart(const RequestInfo& info, const HttpRequest& req) {
  if (!store_.BucketExists(info.bucket)) {
    return Error(info, 404, "NoSuchBucket", "The specified bucket does not exist.");
  }
  PutOptions options;
  options.content_type = HeaderValue(req, "Content-Type");
  options.user_meta = CollectUserMeta(req);
  std::string id = uploads_.Initiate(info.bucket, info.key, std::move(options));
  std::string body = kXmlDecl;
  body += "<InitiateMultipartUploadResult>";
  AppendElement(body, "Bucket", info.bucket);
  AppendElement(body, "Key", info.key);
  AppendElement(body, "UploadId", id);
  body += "</InitiateMultipartUploadResult>\n";
  Response r;
  r.SetText(std::move(body), "application/xml");
  return r;
}

Response ObjectApi::UploadPart(const RequestInfo& info, HttpRequest& req) {
  if (!HasHeader(req, "Content-Length")) {
    return Error(info, 411, "MissingContentLength",
                 "You must provide the Content-Length HTTP header.");
  }
  int part = 0;
  try {
    part = std::stoi(*info.Query("partNumber"));
  } catch (...) {
    part = 0;
  }
  auto result = uploads_.UploadPart(*info.Query("uploadId"), info.bucket, info.key, part,
                                    std::move(req.body()));
  if (!result.ok()) return FromStatus(info, result.status());
  Response r;
  r.Add("ETag", Quoted(result.value().first));
  r.Add("x-oss-hash-crc64ecma", std::to_string(result.value().second));
  return r;
}

Response ObjectApi::CompleteMultipart(const RequestInfo& info, const HttpRequest& req) {
  pugi::xml_document doc;
  if (!doc.load_buffer(req.body().data(), req.body().size())) {
    return Error(info, 400, "MalformedXML", "The XML you provided was not well-formed.");
  }
  std::vector<std::pair<int, std::string>> parts;
  for (auto p : doc.child("CompleteMultipartUpload").children("Part")) {
    parts.emplace_back(p.child("PartNumber").text().as_int(), p.child("ETag").text().get());
  }
  auto done = uploads_.Complete(*info.Query("uploadId"), info.bucket, info.key, parts,
                                options_.min_part_size);
  if (!done.ok()) return FromStatus(info, done.status());
  auto put = store_.Put(info.bucket, info.key, std::move(done.value().data), done.value().options);
  if (!put.ok()) return FromStatus(info, put.status());
  std::string body = kXmlDecl;
  body += "<CompleteMultipartUploadResult>";
  AppendElement(body, "Location", "http://" + info.host + "/" + info.bucket + "/" + info.key);
  AppendElement(body, "Bucket", info.bucket);
  AppendElement(body, "Key", info.key);
  AppendElement(body, "ETag", Quoted(put.value()->etag));
  body += "</CompleteMultipartUploadResult>\n";
  Response r;
  r.SetText(std::move(body), "application/xml");
  r.Add("ETag", Quoted(put.value()->etag));
  r.Add("x-oss-hash-crc64ecma", std::to_string(*put.value()->known_crc));
  return r;
}

Response ObjectApi::AbortMultipart(const RequestInfo& info) {
  Status s = uploads_.Abort(*info.Query("uploadId"), info.bucket, info.key);
  if (!s.ok()) return FromStatus(info, s);
  Response r;
  r.status = 204;
  return r;
}

}  // namespace ossmount::testserver
