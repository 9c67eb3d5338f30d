// Multipart operations of ObjectApi: InitiateMultipartUpload, UploadPart,
// CompleteMultipartUpload, AbortMultipartUpload, ListMultipartUploads and ListParts (the
// registry and its rules are in multipart.h; UploadPartCopy is in copy_api.cc).
#include <pugixml.hpp>

#include "api_util.h"
#include "common/url.h"
#include "object_api.h"
#include "xml_writer.h"

namespace ossmount::testserver {

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
  if (auto bad = CheckContentDigest(info, req, false)) return *bad;
  int part = 0;
  try {
    part = std::stoi(*info.Query("partNumber"));
  } catch (...) {
    part = 0;
  }
  auto result = uploads_.UploadPart(*info.Query("uploadId"), info.bucket, info.key, part,
                                    std::move(req.body()), info.body_digests);
  if (!result.ok()) return FromStatus(info, result.status());
  Response r;
  r.Add("ETag", Quoted(result.value().first));
  r.Add("x-oss-hash-crc64ecma", std::to_string(result.value().second));
  return r;
}

Response ObjectApi::CompleteMultipart(const RequestInfo& info, const HttpRequest& req) {
  if (auto bad = CheckContentDigest(info, req, false)) return *bad;
  pugi::xml_document doc;
  if (!doc.load_buffer(req.body().data(), req.body().size())) {
    return Error(info, 400, "MalformedXML", "The XML you provided was not well-formed.");
  }
  std::vector<std::pair<int, std::string>> parts;
  for (auto p : doc.child("CompleteMultipartUpload").children("Part")) {
    parts.emplace_back(p.child("PartNumber").text().as_int(), p.child("ETag").text().get());
  }
  const bool forbid = OverwriteForbidden(info, req, true);
  const std::string& upload_id = *info.Query("uploadId");
  // Refused before the upload is consumed, so the client can still abort it. (Only a racing
  // writer of the same key between here and the store below consumes it: the store's own
  // check then refuses, atomically.)
  if (forbid && uploads_.IsOpen(upload_id, info.bucket, info.key) &&
      store_.Find(info.bucket, info.key)) {
    return OverwriteRefused(info);
  }
  auto done = uploads_.Complete(upload_id, info.bucket, info.key, parts, options_.min_part_size);
  if (!done.ok()) return FromStatus(info, done.status());
  done.value().options.forbid_overwrite = forbid;
  done.value().options.digests.crc64 = done.value().crc;  // combined from the parts' CRCs
  auto put =
      store_.PutPieces(info.bucket, info.key, std::move(done.value().pieces), done.value().options);
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

Response ObjectApi::ListMultipartUploads(const RequestInfo& info) {
  if (!store_.BucketExists(info.bucket)) {
    return Error(info, 404, "NoSuchBucket", "The specified bucket does not exist.");
  }
  UploadListQuery q;
  q.prefix = QueryOr(info, "prefix");
  q.key_marker = QueryOr(info, "key-marker");
  q.upload_id_marker = q.key_marker.empty() ? "" : QueryOr(info, "upload-id-marker");
  auto max = QueryInt(info, "max-uploads", 1000, 1, 1000);
  if (!max) {
    return Error(info, 400, "InvalidArgument",
                 "Argument max-uploads must be an integer between 1 and 1000.");
  }
  q.max_uploads = *max;
  std::string encoding = QueryOr(info, "encoding-type");
  if (!encoding.empty() && encoding != "url") {
    return Error(info, 400, "InvalidArgument", "Invalid Encoding Method specified in Request");
  }
  const bool url = encoding == "url";
  auto enc = [&](const std::string& s) { return url ? PercentEncode(s, true) : s; };
  UploadListPage page = uploads_.List(info.bucket, q);

  std::string body = kXmlDecl;
  body += "<ListMultipartUploadsResult>";
  AppendElement(body, "Bucket", info.bucket);
  AppendElement(body, "KeyMarker", enc(q.key_marker));
  AppendElement(body, "UploadIdMarker", q.upload_id_marker);
  AppendElement(body, "NextKeyMarker", enc(page.next_key_marker));
  AppendElement(body, "NextUploadIdMarker", page.next_upload_id_marker);
  AppendElement(body, "Prefix", enc(q.prefix));
  AppendElement(body, "MaxUploads", std::to_string(q.max_uploads));
  AppendElement(body, "IsTruncated", page.truncated ? "true" : "false");
  if (url) AppendElement(body, "EncodingType", "url");
  for (const auto& u : page.uploads) {
    body += "<Upload>";
    AppendElement(body, "Key", enc(u.key));
    AppendElement(body, "UploadId", u.upload_id);
    AppendElement(body, "StorageClass", info.dialect == Dialect::kOss ? "Standard" : "STANDARD");
    AppendElement(body, "Initiated", IsoMillis(u.initiated));
    body += "</Upload>";
  }
  body += "</ListMultipartUploadsResult>\n";
  Response r;
  r.SetText(std::move(body), "application/xml");
  return r;
}

Response ObjectApi::ListParts(const RequestInfo& info) {
  auto max = QueryInt(info, "max-parts", 1000, 1, 1000);
  auto marker = QueryInt(info, "part-number-marker", 0, 0, 10000);
  if (!max || !marker) {
    return Error(info, 400, "InvalidArgument",
                 "max-parts must be in [1, 1000] and part-number-marker in [0, 10000].");
  }
  const std::string& upload_id = *info.Query("uploadId");
  auto page = uploads_.ListParts(upload_id, info.bucket, info.key, *marker, *max);
  if (!page.ok()) return FromStatus(info, page.status());
  const bool oss = info.dialect == Dialect::kOss;
  std::string body = kXmlDecl;
  body += "<ListPartsResult>";
  AppendElement(body, "Bucket", info.bucket);
  AppendElement(body, "Key", info.key);
  AppendElement(body, "UploadId", upload_id);
  AppendElement(body, "PartNumberMarker", std::to_string(*marker));
  AppendElement(body, "NextPartNumberMarker", std::to_string(page.value().next_marker));
  AppendElement(body, "MaxParts", std::to_string(*max));
  AppendElement(body, "IsTruncated", page.value().truncated ? "true" : "false");
  for (const auto& p : page.value().parts) {
    body += "<Part>";
    AppendElement(body, "PartNumber", std::to_string(p.number));
    AppendElement(body, "LastModified", IsoMillis(p.mtime));
    AppendElement(body, "ETag", Quoted(p.etag));
    if (oss) AppendElement(body, "HashCrc64ecma", std::to_string(p.crc));
    AppendElement(body, "Size", std::to_string(p.size));
    body += "</Part>";
  }
  body += "</ListPartsResult>\n";
  Response r;
  r.SetText(std::move(body), "application/xml");
  return r;
}

}  // namespace ossmount::testserver
