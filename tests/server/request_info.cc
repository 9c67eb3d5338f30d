#include "request_info.h"

#include "common/url.h"

namespace ossmount::testserver {

namespace http = boost::beast::http;

const std::string* RequestInfo::Query(std::string_view name) const {
  for (const auto& [k, v] : query) {
    if (k == name) return &v;
  }
  return nullptr;
}

namespace {

bool IsIpLiteralOrLocal(std::string_view host) {
  if (host.empty() || host.front() == '[' || host == "localhost") return true;
  for (char c : host) {
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.')) return false;
  }
  return true;
}

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  }
  return true;
}

Op ObjectOp(const RequestInfo& r, const HttpRequest& req) {
  const std::string& m = r.method;
  const bool copy =
      req.find("x-oss-copy-source") != req.end() || req.find("x-amz-copy-source") != req.end();
  const bool oss = r.dialect == Dialect::kOss;
  if (m == "GET") {
    if (r.HasQuery("uploadId")) return Op::kListParts;
    return oss && r.HasQuery("symlink") ? Op::kGetSymlink : Op::kGetObject;
  }
  if (m == "HEAD") return Op::kHeadObject;
  if (m == "PUT") {
    if (r.HasQuery("partNumber") && r.HasQuery("uploadId")) {
      return copy ? Op::kUploadPartCopy : Op::kUploadPart;
    }
    if (oss && r.HasQuery("symlink")) return Op::kPutSymlink;
    return copy ? Op::kCopyObject : Op::kPutObject;
  }
  if (m == "POST") {
    if (r.HasQuery("uploads")) return Op::kInitiateMultipart;
    if (r.HasQuery("uploadId")) return Op::kCompleteMultipart;
    if (oss && r.HasQuery("append")) return Op::kAppendObject;
    return Op::kUnsupported;
  }
  if (m == "DELETE") return r.HasQuery("uploadId") ? Op::kAbortMultipart : Op::kDeleteObject;
  return Op::kUnsupported;
}

Op BucketOp(const RequestInfo& r) {
  const std::string& m = r.method;
  if (m == "GET") {
    if (r.HasQuery("location")) return Op::kGetBucketLocation;
    if (r.HasQuery("uploads")) return Op::kListMultipartUploads;
    const std::string* lt = r.Query("list-type");
    if (lt && *lt == "2") return Op::kListObjectsV2;
    return Op::kListObjectsV1;
  }
  if (m == "HEAD") return Op::kHeadBucket;
  if (m == "PUT" && r.query.empty()) return Op::kCreateBucket;
  if (m == "DELETE" && r.query.empty()) return Op::kDeleteBucket;
  if (m == "POST" && r.HasQuery("delete")) return Op::kDeleteMultiple;
  return Op::kUnsupported;
}

}  // namespace

Result<RequestInfo> ClassifyRequest(const HttpRequest& req,
                                    const std::function<bool(const std::string&)>& bucket_exists) {
  RequestInfo r;
  r.method = std::string(req.method_string());
  std::string_view target = req.target();
  size_t qpos = target.find('?');
  auto path = PercentDecode(target.substr(0, qpos));
  if (!path.ok()) return Status(ErrorCode::kInvalidArgument, "malformed URL path");
  r.path = std::move(path.value());
  if (r.path.empty() || r.path[0] != '/')
    return Status(ErrorCode::kInvalidArgument, "URL path must start with /");
  if (qpos != std::string_view::npos) {
    std::string_view q = target.substr(qpos + 1);
    size_t start = 0;
    while (start <= q.size()) {
      size_t amp = q.find('&', start);
      if (amp == std::string_view::npos) amp = q.size();
      std::string_view part = q.substr(start, amp - start);
      if (!part.empty()) {
        size_t eq = part.find('=');
        auto name = PercentDecode(part.substr(0, eq));
        auto value = PercentDecode(eq == std::string_view::npos ? "" : part.substr(eq + 1));
        if (!name.ok() || !value.ok())
          return Status(ErrorCode::kInvalidArgument, "malformed query");
        r.query.emplace_back(std::move(name.value()), std::move(value.value()));
      }
      start = amp + 1;
    }
  }

  std::string_view host;
  if (auto it = req.find(http::field::host); it != req.end()) host = it->value();
  if (size_t colon = host.rfind(':');
      colon != std::string_view::npos && host.find(']') == std::string_view::npos) {
    host = host.substr(0, colon);
  } else if (host.size() && host.front() == '[') {
    host = host.substr(0, host.find(']') + 1);
  }
  r.host = std::string(host);

  // Dialect and signature scheme.
  std::string_view authz;
  if (auto it = req.find(http::field::authorization); it != req.end()) authz = it->value();
  if (StartsWithNoCase(authz, "OSS4-HMAC-SHA256")) {
    r.auth = AuthScheme::kOssV4;
  } else if (StartsWithNoCase(authz, "OSS ")) {
    r.auth = AuthScheme::kOssV1;
  } else if (StartsWithNoCase(authz, "AWS4-HMAC-SHA256")) {
    r.auth = AuthScheme::kAwsV4;
    r.dialect = Dialect::kS3;
  } else if (StartsWithNoCase(authz, "AWS ")) {
    r.auth = AuthScheme::kAwsV2;
    r.dialect = Dialect::kS3;
  } else if (r.HasQuery("OSSAccessKeyId") || r.HasQuery("x-oss-signature")) {
    r.auth = AuthScheme::kPresigned;
  } else if (r.HasQuery("X-Amz-Signature") || r.HasQuery("AWSAccessKeyId")) {
    r.auth = AuthScheme::kPresigned;
    r.dialect = Dialect::kS3;
  } else {
    for (const auto& f : req) {
      if (StartsWithNoCase(f.name_string(), "x-amz-")) {
        r.dialect = Dialect::kS3;
        break;
      }
    }
  }

  // Addressing.
  size_t dot = r.host.find('.');
  if (!IsIpLiteralOrLocal(r.host) && dot != std::string::npos && dot > 0 &&
      bucket_exists(r.host.substr(0, dot))) {
    r.virtual_hosted = true;
    r.bucket = r.host.substr(0, dot);
    r.key = r.path.substr(1);
  } else if (r.path.rfind("/_ossmount/", 0) == 0) {
    r.op = Op::kControl;
    return r;
  } else {
    size_t slash = r.path.find('/', 1);
    r.bucket = r.path.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
    if (slash != std::string::npos) r.key = r.path.substr(slash + 1);
  }
  if (r.bucket.empty()) {
    r.op = r.method == "GET" ? Op::kListBuckets : Op::kUnsupported;
  } else if (r.key.empty()) {
    r.op = BucketOp(r);
  } else {
    r.op = ObjectOp(r, req);
  }
  return r;
}

StatOp StatOpFor(Op op) {
  switch (op) {
    case Op::kControl:
      return StatOp::kControl;
    case Op::kListBuckets:
    case Op::kGetBucketLocation:
    case Op::kCreateBucket:
    case Op::kDeleteBucket:
      return StatOp::kBucket;
    case Op::kListObjectsV2:
    case Op::kListObjectsV1:
      return StatOp::kList;
    case Op::kHeadBucket:
    case Op::kHeadObject:
      return StatOp::kHead;
    case Op::kDeleteMultiple:
      return StatOp::kDeleteMultiple;
    case Op::kGetObject:
      return StatOp::kGet;
    case Op::kPutObject:
      return StatOp::kPut;
    case Op::kCopyObject:
      return StatOp::kCopy;
    case Op::kDeleteObject:
      return StatOp::kDelete;
    case Op::kInitiateMultipart:
      return StatOp::kInitiateMultipart;
    case Op::kUploadPart:
      return StatOp::kUploadPart;
    case Op::kUploadPartCopy:
      return StatOp::kUploadPartCopy;
    case Op::kCompleteMultipart:
      return StatOp::kCompleteMultipart;
    case Op::kAbortMultipart:
      return StatOp::kAbortMultipart;
    case Op::kListMultipartUploads:
      return StatOp::kListMultipartUploads;
    case Op::kListParts:
      return StatOp::kListParts;
    case Op::kAppendObject:
      return StatOp::kAppend;
    case Op::kPutSymlink:
      return StatOp::kPutSymlink;
    case Op::kGetSymlink:
      return StatOp::kGetSymlink;
    case Op::kUnsupported:
      return StatOp::kOther;
  }
  return StatOp::kOther;
}

FaultOp FaultOpFor(Op op) {
  switch (op) {
    case Op::kGetObject:
      return FaultOp::kGet;
    case Op::kHeadObject:
    case Op::kHeadBucket:
    case Op::kGetSymlink:  // metadata only, no body: a HEAD in all but name
      return FaultOp::kHead;
    case Op::kListObjectsV1:
    case Op::kListObjectsV2:
    case Op::kListMultipartUploads:
    case Op::kListParts:
      return FaultOp::kList;
    case Op::kPutObject:
    case Op::kCopyObject:
    case Op::kInitiateMultipart:
    case Op::kUploadPart:
    case Op::kUploadPartCopy:
    case Op::kCompleteMultipart:
    case Op::kAbortMultipart:
    case Op::kPutSymlink:
      return FaultOp::kPut;
    case Op::kAppendObject:
      return FaultOp::kAppend;
    case Op::kDeleteObject:
    case Op::kDeleteMultiple:
      return FaultOp::kDelete;
    default:
      return FaultOp::kOther;
  }
}

bool IsWriteOp(Op op) {
  switch (op) {
    case Op::kPutObject:
    case Op::kCopyObject:
    case Op::kDeleteObject:
    case Op::kDeleteMultiple:
    case Op::kInitiateMultipart:
    case Op::kUploadPart:
    case Op::kUploadPartCopy:
    case Op::kCompleteMultipart:
    case Op::kAbortMultipart:
    case Op::kAppendObject:
    case Op::kPutSymlink:
      return true;
    default:
      return false;
  }
}

}  // namespace ossmount::testserver
