// Bucket-level operations of ObjectApi: listings, ListBuckets, HEAD/location/create/delete
// bucket and DeleteMultipleObjects.
#include <pugixml.hpp>

#include "api_util.h"
#include "common/time_util.h"
#include "common/url.h"
#include "listing.h"
#include "object_api.h"
#include "xml_writer.h"

namespace ossmount::testserver {

Response ObjectApi::ListObjects(const RequestInfo& info, bool v2) {
  ListQuery q;
  q.prefix = QueryOr(info, "prefix");
  q.delimiter = QueryOr(info, "delimiter");
  q.max_keys = info.dialect == Dialect::kS3 ? 1000 : 100;
  if (const std::string* mk = info.Query("max-keys")) {
    try {
      size_t used = 0;
      long long v = std::stoll(*mk, &used);
      if (used != mk->size() || v < 0) throw std::invalid_argument("max-keys");
      q.max_keys = static_cast<int>(std::min<long long>(v, 1000));
    } catch (...) {
      return Error(info, 400, "InvalidArgument",
                   "Argument max-keys must be an integer between 0 and 1000.");
    }
  }
  std::string encoding = QueryOr(info, "encoding-type");
  if (!encoding.empty() && encoding != "url") {
    return Error(info, 400, "InvalidArgument", "Invalid Encoding Method specified in Request");
  }
  const bool url = encoding == "url";
  auto enc = [&](const std::string& s) { return url ? PercentEncode(s, true) : s; };
  if (v2) {
    q.start_after = QueryOr(info, "start-after");
    q.continuation_token = QueryOr(info, "continuation-token");
  } else {
    q.marker = QueryOr(info, "marker");
  }
  // A looping listing (FaultSettings::list_loop_prefix): its own tokens list from the start.
  const std::string loop_prefix = faults_ ? faults_->settings().list_loop_prefix : "";
  const bool loop =
      v2 && !loop_prefix.empty() && q.prefix.compare(0, loop_prefix.size(), loop_prefix) == 0;
  const std::string loop_token = q.continuation_token;
  if (loop && (loop_token == "loop-A" || loop_token == "loop-B")) q.continuation_token.clear();
  Result<ListPage> page = Status(ErrorCode::kInternal, "listing did not run");
  const FaultSettings settings = faults_ ? faults_->settings() : FaultSettings();
  if (v2 && !settings.synthetic_prefix.empty() &&
      q.prefix.compare(0, settings.synthetic_prefix.size(), settings.synthetic_prefix) == 0) {
    page = SyntheticPage(q, settings.synthetic_prefix, settings.synthetic_count);
  } else {
    Status s = store_.WithIndex(info.bucket,
                                [&](const ObjectIndex& index) { page = ListIndex(index, q); });
    if (!s.ok()) return Error(info, 404, "NoSuchBucket", "The specified bucket does not exist.");
  }
  if (!page.ok()) return Error(info, 400, "InvalidArgument", page.status().message());
  if (loop) {
    page.value().truncated = true;
    page.value().next_token = loop_token == "loop-A" ? "loop-B" : "loop-A";
  }
  const ListPage& p = page.value();
  const bool fetch_owner = !v2 || QueryOr(info, "fetch-owner") == "true";

  std::string body = kXmlDecl;
  body.reserve(256 + p.contents.size() * 300);
  body += "<ListBucketResult>";
  AppendElement(body, "Name", info.bucket);
  AppendElement(body, "Prefix", enc(q.prefix));
  if (v2) {
    if (!q.start_after.empty()) AppendElement(body, "StartAfter", enc(q.start_after));
    if (!q.continuation_token.empty())
      AppendElement(body, "ContinuationToken", enc(q.continuation_token));
  } else {
    AppendElement(body, "Marker", enc(q.marker));
  }
  AppendElement(body, "MaxKeys", std::to_string(q.max_keys));
  if (!q.delimiter.empty()) AppendElement(body, "Delimiter", enc(q.delimiter));
  AppendElement(body, "IsTruncated", p.truncated ? "true" : "false");
  if (p.truncated) {
    if (v2) {
      AppendElement(body, "NextContinuationToken", enc(p.next_token));
    } else {
      AppendElement(body, "NextMarker", enc(p.next_marker));
    }
  }
  if (url) AppendElement(body, "EncodingType", "url");
  if (v2) {
    AppendElement(body, "KeyCount", std::to_string(p.contents.size() + p.common_prefixes.size()));
  }
  for (const auto& obj : p.contents) {
    body += "<Contents>";
    AppendElement(body, "Key", enc(obj->key));
    AppendElement(body, "LastModified", IsoMillis(obj->mtime));
    AppendElement(body, "ETag", "\"" + obj->etag + "\"");
    if (info.dialect == Dialect::kOss) AppendElement(body, "Type", obj->object_type);
    AppendElement(body, "Size", std::to_string(obj->size));
    AppendElement(body, "StorageClass", info.dialect == Dialect::kOss ? "Standard" : "STANDARD");
    if (fetch_owner) {
      body += "<Owner><ID>ossmount</ID><DisplayName>ossmount</DisplayName></Owner>";
    }
    body += "</Contents>";
  }
  for (const auto& cp : p.common_prefixes) {
    body += "<CommonPrefixes>";
    AppendElement(body, "Prefix", enc(cp));
    body += "</CommonPrefixes>";
  }
  body += "</ListBucketResult>\n";
  Response r;
  r.SetText(std::move(body), "application/xml");
  return r;
}

Response ObjectApi::ListBuckets(const RequestInfo& info) {
  std::string body = kXmlDecl;
  body +=
      "<ListAllMyBucketsResult><Owner><ID>ossmount</ID><DisplayName>ossmount</DisplayName></"
      "Owner><Buckets>";
  for (const auto& name : store_.Buckets()) {
    body += "<Bucket>";
    AppendElement(body, "Name", name);
    AppendElement(body, "CreationDate", "2024-01-01T00:00:00.000Z");
    if (info.dialect == Dialect::kOss) {
      AppendElement(body, "Location", "oss-" + options_.region);
      AppendElement(body, "Region", options_.region);
      AppendElement(body, "StorageClass", "Standard");
    }
    body += "</Bucket>";
  }
  body += "</Buckets></ListAllMyBucketsResult>\n";
  Response r;
  r.SetText(std::move(body), "application/xml");
  return r;
}

Response ObjectApi::BucketOp(const RequestInfo& info, const HttpRequest&) {
  Response r;
  switch (info.op) {
    case Op::kHeadBucket:
      if (!store_.BucketExists(info.bucket)) return Error(info, 404, "NoSuchBucket", "");
      r.omit_body = true;
      return r;
    case Op::kGetBucketLocation: {
      if (!store_.BucketExists(info.bucket)) {
        return Error(info, 404, "NoSuchBucket", "The specified bucket does not exist.");
      }
      std::string body = kXmlDecl;
      std::string loc = info.dialect == Dialect::kOss ? "oss-" + options_.region : options_.region;
      body += "<LocationConstraint>" + loc + "</LocationConstraint>\n";
      r.SetText(std::move(body), "application/xml");
      return r;
    }
    case Op::kCreateBucket: {
      Status s = store_.CreateBucket(info.bucket);
      if (!s.ok()) return Error(info, 400, "InvalidBucketName", s.message());
      return r;
    }
    case Op::kDeleteBucket: {
      Status s = store_.DeleteBucket(info.bucket);
      if (s.code() == ErrorCode::kNoSuchBucket) {
        return Error(info, 404, "NoSuchBucket", "The specified bucket does not exist.");
      }
      if (!s.ok()) {
        return Error(info, 409, "BucketNotEmpty", "The bucket you tried to delete is not empty.");
      }
      r.status = 204;
      return r;
    }
    default:
      return Error(info, 501, "NotImplemented", "Not implemented.");
  }
}

Response ObjectApi::DeleteMultiple(const RequestInfo& info, const HttpRequest& req) {
  if (!store_.BucketExists(info.bucket)) {
    return Error(info, 404, "NoSuchBucket", "The specified bucket does not exist.");
  }
  // OSS and S3 both require the body's digest here (a truncated key list must not delete).
  if (auto bad = CheckContentDigest(info, req, true)) return *bad;
  pugi::xml_document doc;
  if (!doc.load_buffer(req.body().data(), req.body().size())) {
    return Error(info, 400, "MalformedXML", "The XML you provided was not well-formed.");
  }
  auto del = doc.child("Delete");
  if (!del) return Error(info, 400, "MalformedXML", "The XML you provided was not well-formed.");
  const bool quiet = std::string(del.child("Quiet").text().get()) == "true";
  const bool url = QueryOr(info, "encoding-type") == "url";
  std::string body = kXmlDecl;
  body += "<DeleteResult>";
  // Counted before any key is deleted: an over-long list deletes nothing.
  const auto objects = del.children("Object");
  const auto count = std::distance(objects.begin(), objects.end());
  if (count > 1000) return Error(info, 400, "MalformedXML", "More than 1000 keys.");
  if (stats_) stats_->AddDeletedKeys(static_cast<uint64_t>(count));
  for (auto o : del.children("Object")) {
    std::string key = o.child("Key").text().get();
    if (url) {
      auto d = PercentDecode(key);
      if (d.ok()) key = d.value();
    }
    store_.Delete(info.bucket, key);
    if (!quiet) {
      body += "<Deleted>";
      AppendElement(body, "Key", url ? PercentEncode(key, true) : key);
      body += "</Deleted>";
    }
  }
  if (url) AppendElement(body, "EncodingType", "url");
  body += "</DeleteResult>\n";
  Response r;
  r.SetText(std::move(body), "application/xml");
  return r;
}

}  // namespace ossmount::testserver
