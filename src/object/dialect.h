// Dialect: the few wire differences between the OSS API and the S3 API that the shared
// client code has to know about. Everything else (URLs, XML, status codes) is the same.
#pragma once

#include "ossmount/client_options.h"

namespace ossmount::object {

struct Dialect {
  Protocol protocol;
  const char* request_id_header;     // where the server puts its request id
  const char* storage_class_header;  // HEAD response
  // OSS only: "x-oss-range-behavior: standard" makes an out-of-bounds range a 416 instead
  // of a 200 with the whole object.
  bool send_range_behavior;
  // OSS only: the whole-object CRC-64/XZ header. S3's x-amz-checksum-crc64nvme is a
  // different polynomial and is deliberately ignored. nullptr when the protocol has none.
  const char* crc64_header;
  // How a write says "do not replace an existing object": x-oss-forbid-overwrite: true
  // (409 FileAlreadyExists) on OSS, If-None-Match: * (412) on S3.
  const char* forbid_overwrite_header;
  const char* forbid_overwrite_value;
  // The server-side copy headers: <prefix>, <prefix>-range, <prefix>-if-match.
  const char* copy_source_header;
  // S3 only: every PUT/UploadPart body carries Content-MD5, the one end-to-end body check S3
  // offers (OSS has the CRC-64 of the reply instead). DeleteMultiple sends it on both.
  bool send_content_md5;

  static const Dialect& For(Protocol protocol) {
    static const Dialect kOss{Protocol::kOss, "x-oss-request-id",     "x-oss-storage-class",
                              true,           "x-oss-hash-crc64ecma", "x-oss-forbid-overwrite",
                              "true",         "x-oss-copy-source",    false};
    static const Dialect kS3{Protocol::kS3,
                             "x-amz-request-id",
                             "x-amz-storage-class",
                             false,
                             nullptr,
                             "If-None-Match",
                             "*",
                             "x-amz-copy-source",
                             true};
    return protocol == Protocol::kOss ? kOss : kS3;
  }
};

}  // namespace ossmount::object
