// ObjectApi: executes OSS/S3 object-API requests against an ObjectStore.
//
// Every method returns a complete Response (errors as the dialect's XML error body; HEAD
// errors without a body). The session adds nothing but Content-Length and Connection; the
// common headers (request id, Date, Server) come from AddCommonHeaders().
//
// Thread-safety: Handle() may run concurrently; state lives in the store and upload registry.
#pragma once

#include <cstdint>
#include <string>

#include "faults.h"
#include "multipart.h"
#include "object_store.h"
#include "request_info.h"
#include "response.h"
#include "stats.h"

namespace ossmount::testserver {

struct ApiOptions {
  uint64_t min_part_size = 100 * 1024;  // OSS: every part but the last >= 100 KB
  // CopyObject refuses larger sources (400); such copies must use UploadPartCopy. OSS
  // documents 1 GB for copies that must rewrite the data.
  uint64_t copy_object_limit = 1ull << 30;
  // AppendObject refuses to grow an object past this (400). OSS documents 5 GB.
  uint64_t append_object_limit = 5ull << 30;
  std::string region = "cn-hangzhou";  // GetBucketLocation
};

class ObjectApi {
 public:
  ObjectApi(ObjectStore& store, MultipartUploads& uploads, ApiOptions options)
      : store_(store), uploads_(uploads), options_(std::move(options)) {}

  Response Handle(const RequestInfo& info, HttpRequest& req);
  // GetObject or HeadObject (`head`) of an object the caller found (the accelerator's held
  // copy): preconditions, Range, headers and body as Handle gives them for a stored object.
  Response ServeObject(const RequestInfo& info, const HttpRequest& req, const ObjectPtr& obj,
                       bool head);
  // Where listings read their faults (list_loop_prefix); null: none. Must outlive this.
  void set_faults(const FaultInjector* faults) { faults_ = faults; }
  // Where DeleteMultipleObjects counts its keys; null: nowhere. Must outlive this.
  void set_stats(ServerStats* stats) { stats_ = stats; }

  // The dialect's error response: OSS <Error> with Code, Message, RequestId, HostId, EC (and
  // Key when given); S3 the same without EC. HEAD requests get the status and no body.
  static Response Error(const RequestInfo& info, unsigned status, const std::string& code,
                        const std::string& message, const std::string& key = "");
  // x-oss-request-id (or x-amz-request-id and x-amz-id-2), Date, Server.
  static void AddCommonHeaders(const RequestInfo& info, Response& r);

 private:
  Response GetOrHead(const RequestInfo& info, const HttpRequest& req, bool head);
  Response Put(const RequestInfo& info, HttpRequest& req);
  Response DeleteObject(const RequestInfo& info);
  // copy_api.cc
  Response Copy(const RequestInfo& info, const HttpRequest& req);
  Response UploadPartCopy(const RequestInfo& info, const HttpRequest& req);
  // append_symlink_api.cc (OSS only)
  Response AppendObject(const RequestInfo& info, HttpRequest& req);
  Response PutSymlink(const RequestInfo& info, const HttpRequest& req);
  Response GetSymlink(const RequestInfo& info);
  // multipart_api.cc
  Response InitiateMultipart(const RequestInfo& info, const HttpRequest& req);
  Response UploadPart(const RequestInfo& info, HttpRequest& req);
  Response CompleteMultipart(const RequestInfo& info, const HttpRequest& req);
  Response AbortMultipart(const RequestInfo& info);
  Response ListMultipartUploads(const RequestInfo& info);
  Response ListParts(const RequestInfo& info);
  // bucket_api.cc
  Response ListObjects(const RequestInfo& info, bool v2);
  Response ListBuckets(const RequestInfo& info);
  Response BucketOp(const RequestInfo& info, const HttpRequest& req);
  Response DeleteMultiple(const RequestInfo& info, const HttpRequest& req);

  // A failed multipart/store Status as an error response ("Code: message" messages).
  static Response FromStatus(const RequestInfo& info, const Status& s);

  ObjectStore& store_;
  MultipartUploads& uploads_;
  const ApiOptions options_;
  const FaultInjector* faults_ = nullptr;
  ServerStats* stats_ = nullptr;
};

// A fresh 24-hex-digit request id.
std::string NewRequestId();

// The EC of an OSS error code. OSS documents NoSuchKey's 0026-00000001 and the values of
// PositionNotEqualToLength, SymlinkTargetNotExist and NotSymlink; the others are illustrative.
const char* ErrorCenterCode(const std::string& code);

}  // namespace ossmount::testserver
