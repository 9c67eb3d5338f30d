// RequestInfo: what a request addresses (bucket, key, operation) and which protocol dialect
// (OSS or S3) it speaks, derived from the request line and headers only.
//
// Addressing: virtual-hosted when the Host's first label names an existing bucket and the
// host is not an IP literal or "localhost"; path style (/bucket/key) otherwise. The control
// API lives under /_ossmount/ in path style. Dialect: from the Authorization header
// ("OSS ", "OSS4-HMAC-SHA256" -> OSS; "AWS4-HMAC-SHA256", "AWS " -> S3), presigned query
// parameters, or, for unsigned requests, any x-amz-* header (S3) versus OSS by default.
#pragma once

#include <boost/beast/http.hpp>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "faults.h"
#include "object_store.h"
#include "ossmount/status.h"
#include "stats.h"

namespace ossmount::testserver {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;

enum class Dialect { kOss, kS3 };
enum class AuthScheme { kNone, kOssV1, kOssV4, kAwsV4, kAwsV2, kPresigned };

enum class Op {
  kControl,
  kListBuckets,
  kListObjectsV2,
  kListObjectsV1,
  kHeadBucket,
  kGetBucketLocation,
  kCreateBucket,
  kDeleteBucket,
  kDeleteMultiple,
  kGetObject,
  kHeadObject,
  kPutObject,
  kCopyObject,
  kDeleteObject,
  kInitiateMultipart,
  kUploadPart,
  kUploadPartCopy,
  kCompleteMultipart,
  kAbortMultipart,
  kListMultipartUploads,
  kListParts,
  // OSS only (S3 has no such operations: there these requests are what they were before).
  kAppendObject,  // POST /key?append&position=N
  kPutSymlink,    // PUT /key?symlink
  kGetSymlink,    // GET /key?symlink
  kUnsupported,
};

struct RequestInfo {
  Dialect dialect = Dialect::kOss;
  AuthScheme auth = AuthScheme::kNone;
  std::string method;
  std::string path;                                        // decoded URL path as sent
  std::vector<std::pair<std::string, std::string>> query;  // decoded, in order
  std::string host;
  bool virtual_hosted = false;
  std::string bucket;
  std::string key;
  Op op = Op::kUnsupported;
  std::string request_id;
  // Digests of the body, when the session computed them while it arrived (PutObject,
  // UploadPart and AppendObject bodies with a Content-Length); absent ones are computed from
  // the body.
  KnownDigests body_digests;

  const std::string* Query(std::string_view name) const;
  bool HasQuery(std::string_view name) const { return Query(name) != nullptr; }
};

// Parses the target and headers. kInvalidArgument for a malformed target (bad escapes).
Result<RequestInfo> ClassifyRequest(const HttpRequest& req,
                                    const std::function<bool(const std::string&)>& bucket_exists);

StatOp StatOpFor(Op op);
FaultOp FaultOpFor(Op op);
// Operations that change the bucket (or an upload): the scope of the write faults.
bool IsWriteOp(Op op);

}  // namespace ossmount::testserver
