#include "object/request_builder.h"

#include <sys/stat.h>

#include "common/url.h"
#include "object/content_md5.h"
#include "object/content_types.h"
#include "object/headers.h"

namespace ossmount::object {

std::string EncodeQuery(const auth::Params& query) { return EncodeQueryString(query); }

WireRequest BuildWireRequest(const RequestSpec& spec, const Endpoint& endpoint,
                             const std::string& bucket, bool path_style) {
  WireRequest wire;
  auth::SignableRequest& s = wire.signable;
  s.method = spec.method;
  s.bucket = bucket;
  s.key = spec.key;
  s.query = spec.query;
  s.headers = spec.headers;
  s.additional_headers = spec.signed_headers;

  std::string host;
  std::string encoded_path;
  if (path_style) {
    host = endpoint.host;
    // Bucket-level requests go to "/bucket" (no trailing slash), object requests to
    // "/bucket/key".
    s.path = "/" + bucket + (spec.key.empty() ? "" : "/" + spec.key);
    encoded_path = "/" + PercentEncode(bucket) +
                   (spec.key.empty() ? "" : "/" + PercentEncode(spec.key, /*keep_slash=*/true));
  } else {
    host = bucket + "." + endpoint.host;
    s.path = "/" + spec.key;
    encoded_path = "/" + PercentEncode(spec.key, /*keep_slash=*/true);
  }
  SetHeader(s.headers, "Host", host);
  wire.url = endpoint.scheme + "://" + host + encoded_path;
  std::string query = EncodeQuery(spec.query);
  if (!query.empty()) wire.url += "?" + query;
  return wire;
}

RequestSpec ListSpec(const ListRequest& request) {
  RequestSpec spec;
  spec.method = "GET";
  spec.query.emplace_back("list-type", "2");
  if (!request.prefix.empty()) spec.query.emplace_back("prefix", request.prefix);
  if (!request.delimiter.empty()) spec.query.emplace_back("delimiter", request.delimiter);
  spec.query.emplace_back("max-keys", std::to_string(request.max_keys));
  if (!request.continuation_token.empty()) {
    spec.query.emplace_back("continuation-token", request.continuation_token);
  }
  spec.query.emplace_back("encoding-type", "url");
  return spec;
}

std::string RangeHeaderValue(uint64_t offset, std::optional<uint64_t> length) {
  if (offset == 0 && !length) return "";
  std::string value = "bytes=" + std::to_string(offset) + "-";
  if (length) value += std::to_string(offset + *length - 1);
  return value;
}

RequestSpec GetSpec(const GetRequest& request, const Dialect& dialect) {
  RequestSpec spec;
  spec.method = "GET";
  spec.key = request.key;
  std::string range = RangeHeaderValue(request.offset, request.length);
  if (!range.empty()) spec.headers.emplace_back("Range", range);
  if (dialect.send_range_behavior) spec.headers.emplace_back("x-oss-range-behavior", "standard");
  if (!request.if_match.empty()) spec.headers.emplace_back("If-Match", request.if_match);
  return spec;
}

RequestSpec HeadSpec(const std::string& key) {
  RequestSpec spec;
  spec.method = "HEAD";
  spec.key = key;
  return spec;
}

namespace {

void AddForbidOverwrite(RequestSpec& spec, const WriteOptions& options, const Dialect& dialect) {
  if (!options.forbid_overwrite) return;
  spec.headers.emplace_back(dialect.forbid_overwrite_header, dialect.forbid_overwrite_value);
  // x-oss-* headers are signed anyway; S3's If-None-Match only when named. A proxy that
  // dropped it would silently turn a no-replace write into a replacing one.
  if (dialect.protocol == Protocol::kS3) spec.signed_headers.push_back("if-none-match");
}

// The user metadata of `options` as x-oss-meta-* / x-amz-meta-* headers (signed).
void AddUserMeta(RequestSpec& spec, const WriteOptions& options, const Dialect& dialect) {
  if (!options.user_meta) return;
  const std::string prefix = dialect.protocol == Protocol::kS3 ? "x-amz-meta-" : "x-oss-meta-";
  for (const auto& [name, value] : *options.user_meta) {
    spec.headers.emplace_back(prefix + name, value);
    if (dialect.protocol == Protocol::kS3) spec.signed_headers.push_back(prefix + name);
  }
}

void AddBody(RequestSpec& spec, SharedBytes body, const Dialect& dialect) {
  spec.body = std::move(body);
  if (dialect.send_content_md5) {
    spec.headers.emplace_back("Content-MD5", ContentMd5(spec.body.view()));
  }
}

void AddCopySource(RequestSpec& spec, const CopySource& source, const Dialect& dialect) {
  const std::string header = dialect.copy_source_header;
  spec.headers.emplace_back(header, CopySourceValue(source.bucket, source.key));
  if (!source.etag.empty()) spec.headers.emplace_back(header + "-if-match", source.etag);
}

}  // namespace

RequestSpec PutSpec(const std::string& key, SharedBytes body, const WriteOptions& options,
                    const Dialect& dialect) {
  RequestSpec spec;
  spec.method = "PUT";
  spec.key = key;
  // Set explicitly: OSS V1 signs Content-Type, so the transport must not add its own.
  spec.headers.emplace_back("Content-Type", ContentTypeFor(key));
  AddBody(spec, std::move(body), dialect);
  AddForbidOverwrite(spec, options, dialect);
  AddUserMeta(spec, options, dialect);
  return spec;
}

RequestSpec InitiateMultipartSpec(const std::string& key, const WriteOptions& options,
                                  const Dialect& dialect) {
  RequestSpec spec;
  spec.method = "POST";
  spec.key = key;
  spec.query.emplace_back("uploads", "");
  // The object's Content-Type and metadata are the ones its upload was initiated with.
  spec.headers.emplace_back("Content-Type", ContentTypeFor(key));
  AddUserMeta(spec, options, dialect);
  return spec;
}

RequestSpec UploadPartSpec(const std::string& key, const std::string& upload_id, int part_number,
                           SharedBytes body, const Dialect& dialect) {
  RequestSpec spec;
  spec.method = "PUT";
  spec.key = key;
  spec.query.emplace_back("partNumber", std::to_string(part_number));
  spec.query.emplace_back("uploadId", upload_id);
  spec.headers.emplace_back("Content-Type", "application/octet-stream");
  AddBody(spec, std::move(body), dialect);
  return spec;
}

std::string CopySourceValue(const std::string& bucket, const std::string& key) {
  return "/" + bucket + "/" + PercentEncode(key, /*keep_slash=*/true);
}

RequestSpec UploadPartCopySpec(const std::string& key, const std::string& upload_id,
                               int part_number, const CopySource& source, uint64_t offset,
                               uint64_t length, const Dialect& dialect) {
  RequestSpec spec;
  spec.method = "PUT";
  spec.key = key;
  spec.query.emplace_back("partNumber", std::to_string(part_number));
  spec.query.emplace_back("uploadId", upload_id);
  AddCopySource(spec, source, dialect);
  spec.headers.emplace_back(std::string(dialect.copy_source_header) + "-range",
                            RangeHeaderValue(offset, length));
  return spec;
}

RequestSpec CompleteMultipartSpec(const std::string& key, const std::string& upload_id,
                                  const std::vector<PartInfo>& parts, const WriteOptions& options,
                                  const Dialect& dialect) {
  RequestSpec spec;
  spec.method = "POST";
  spec.key = key;
  spec.query.emplace_back("uploadId", upload_id);
  spec.headers.emplace_back("Content-Type", "application/xml");
  AddForbidOverwrite(spec, options, dialect);
  std::string xml = "<CompleteMultipartUpload>";
  for (const PartInfo& part : parts) {
    xml += "<Part><PartNumber>" + std::to_string(part.part_number) + "</PartNumber><ETag>" +
           XmlEscape(part.etag) + "</ETag></Part>";
  }
  xml += "</CompleteMultipartUpload>";
  spec.body = SharedBytes::FromString(std::move(xml));
  return spec;
}

RequestSpec AbortMultipartSpec(const std::string& key, const std::string& upload_id) {
  RequestSpec spec;
  spec.method = "DELETE";
  spec.key = key;
  spec.query.emplace_back("uploadId", upload_id);
  return spec;
}

RequestSpec ListMultipartUploadsSpec(const std::string& prefix, const std::string& key_marker,
                                     const std::string& upload_id_marker) {
  RequestSpec spec;
  spec.method = "GET";
  spec.query.emplace_back("uploads", "");
  if (!prefix.empty()) spec.query.emplace_back("prefix", prefix);
  if (!key_marker.empty()) spec.query.emplace_back("key-marker", key_marker);
  if (!upload_id_marker.empty()) spec.query.emplace_back("upload-id-marker", upload_id_marker);
  spec.query.emplace_back("max-uploads", "1000");
  spec.query.emplace_back("encoding-type", "url");
  return spec;
}

RequestSpec CopyObjectSpec(const CopySource& source, const std::string& dest_key,
                           const WriteOptions& options, const Dialect& dialect) {
  RequestSpec spec;
  spec.method = "PUT";
  spec.key = dest_key;
  AddCopySource(spec, source, dialect);
  AddForbidOverwrite(spec, options, dialect);
  if (options.user_meta) {
    // REPLACE drops every header of the source's: the type and metadata are all sent again.
    spec.headers.emplace_back(
        dialect.protocol == Protocol::kS3 ? "x-amz-metadata-directive" : "x-oss-metadata-directive",
        "REPLACE");
    if (dialect.protocol == Protocol::kS3)
      spec.signed_headers.push_back("x-amz-metadata-directive");
    spec.headers.emplace_back("Content-Type", options.content_type.empty()
                                                  ? ContentTypeFor(dest_key)
                                                  : options.content_type);
    AddUserMeta(spec, options, dialect);
  }
  return spec;
}

RequestSpec PutSymlinkSpec(const std::string& key, const std::string& target,
                           const WriteOptions& options, const Dialect& dialect) {
  RequestSpec spec;
  spec.method = "PUT";
  spec.key = key;
  spec.headers.emplace_back("Content-Type", kDefaultContentType);
  if (dialect.protocol == Protocol::kOss) {
    spec.query.emplace_back("symlink", "");
    spec.headers.emplace_back("x-oss-symlink-target", PercentEncode(target, /*keep_slash=*/true));
  } else {
    spec.headers.emplace_back("x-amz-meta-mode", std::to_string(S_IFLNK | 0777));
    spec.signed_headers.push_back("x-amz-meta-mode");
    AddBody(spec, SharedBytes::Copy(target), dialect);
  }
  AddForbidOverwrite(spec, options, dialect);
  return spec;
}

RequestSpec AppendSpec(const std::string& key, uint64_t position, SharedBytes body,
                       const Dialect& dialect) {
  RequestSpec spec;
  spec.method = "POST";
  spec.key = key;
  spec.query.emplace_back("append", "");
  spec.query.emplace_back("position", std::to_string(position));
  spec.headers.emplace_back("Content-Type", ContentTypeFor(key));
  AddBody(spec, std::move(body), dialect);
  return spec;
}

RequestSpec GetSymlinkSpec(const std::string& key, const Dialect& dialect) {
  RequestSpec spec;
  spec.method = "GET";
  spec.key = key;
  if (dialect.protocol == Protocol::kOss) spec.query.emplace_back("symlink", "");
  return spec;
}

RequestSpec DeleteSpec(const std::string& key) {
  RequestSpec spec;
  spec.method = "DELETE";
  spec.key = key;
  return spec;
}

RequestSpec DeleteMultipleSpec(const std::vector<std::string>& keys) {
  RequestSpec spec;
  spec.method = "POST";
  spec.query.emplace_back("delete", "");
  spec.headers.emplace_back("Content-Type", "application/xml");
  std::string xml = "<Delete><Quiet>true</Quiet>";
  for (const std::string& key : keys) xml += "<Object><Key>" + XmlEscape(key) + "</Key></Object>";
  xml += "</Delete>";
  spec.headers.emplace_back("Content-MD5", ContentMd5(xml));
  spec.body = SharedBytes::FromString(std::move(xml));
  return spec;
}

}  // namespace ossmount::object
