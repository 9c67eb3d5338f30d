// Multipart uploads: initiate, parts (uploaded and copied), complete with the lost-answer
// rule, abort, and the listing of open uploads (write_operations.h).
#include <algorithm>

#include "common/crc64.h"
#include "object/response_parsers.h"
#include "object/write_operations.h"
#include "object/write_support.h"

namespace ossmount::object {
namespace {

Status CheckPartNumber(int part_number, const char* operation) {
  if (part_number >= 1 && part_number <= 10000) return Status::Ok();
  return Status(
      ErrorCode::kInvalidArgument,
      std::string(operation) + ": part numbers are 1..10000, got " + std::to_string(part_number));
}

// The listing of open uploads, page after page.
struct UploadsListing {
  std::shared_ptr<ClientContext> ctx;
  std::string prefix;
  UploadsHandler handler;
  std::vector<OpenUpload> uploads;
  std::string key_marker;
  std::string upload_id_marker;
  int pages = 0;
  size_t bytes = 0;
};

void NextUploadsPage(std::shared_ptr<UploadsListing> listing) {
  auto body = std::make_shared<std::vector<char>>();
  auto page = std::make_shared<UploadsPage>();
  Operation op;
  op.spec =
      ListMultipartUploadsSpec(listing->prefix, listing->key_marker, listing->upload_id_marker);
  op.error_context.operation = "ListMultipartUploads";
  op.prepare_target = XmlReplyTarget(body);
  op.accept = [body, page](const http::Response&) {
    auto parsed = ParseListMultipartUploadsXml(View(*body));
    if (!parsed.ok()) return parsed.status();
    *page = std::move(parsed.value());
    return Status::Ok();
  };
  auto ctx = listing->ctx;
  RunOperation(ctx, std::move(op), [listing, body, page](Status s) {
    if (!s.ok()) return listing->handler(std::move(s));
    ++listing->pages;
    listing->bytes += body->size();
    for (OpenUpload& u : page->uploads) listing->uploads.push_back(std::move(u));
    if (!page->truncated) {
      // The server lists by key, then by time; the contract is oldest first.
      std::stable_sort(listing->uploads.begin(), listing->uploads.end(),
                       [](const OpenUpload& a, const OpenUpload& b) {
                         return a.initiated_sec < b.initiated_sec;
                       });
      return listing->handler(std::move(listing->uploads));
    }
    auto refuse = [&](const std::string& why) {
      listing->handler(Status(ErrorCode::kProtocol,
                              "ListMultipartUploads of prefix '" + listing->prefix + "': " + why));
    };
    if (page->next_key_marker == listing->key_marker &&
        page->next_upload_id_marker == listing->upload_id_marker) {
      return refuse("the server's next page starts where this one did (a loop); refused");
    }
    if (listing->pages >= kMaxUploadListPages || listing->bytes > kMaxUploadListBytes) {
      return refuse("more than " + std::to_string(listing->pages) + " pages (" +
                    std::to_string(listing->bytes) +
                    " bytes) of open uploads, far more than a real bucket holds; refused");
    }
    listing->key_marker = page->next_key_marker;
    listing->upload_id_marker = page->next_upload_id_marker;
    NextUploadsPage(listing);
  });
}

}  // namespace

void StartInitiateMultipart(std::shared_ptr<ClientContext> ctx, const std::string& key,
                            const WriteOptions& options, InitiateHandler handler) {
  if (key.empty()) {
    return PostFailure(*ctx, std::move(handler),
                       Status(ErrorCode::kInvalidArgument, "multipart: empty key"));
  }
  auto body = std::make_shared<std::vector<char>>();
  auto upload_id = std::make_shared<std::string>();
  Operation op;
  op.spec = InitiateMultipartSpec(key, options, ctx->dialect);
  op.error_context.operation = "InitiateMultipartUpload";
  op.error_context.key = key;
  op.prepare_target = XmlReplyTarget(body);
  op.accept = [body, upload_id](const http::Response&) {
    auto id = ParseInitiateMultipartXml(View(*body));
    if (!id.ok()) return id.status();
    *upload_id = std::move(id.value());
    return Status::Ok();
  };
  RunOperation(ctx, std::move(op), [handler = std::move(handler), upload_id](Status s) {
    if (!s.ok()) return handler(std::move(s));
    handler(std::move(*upload_id));
  });
}

void StartUploadPart(std::shared_ptr<ClientContext> ctx, const std::string& key,
                     const std::string& upload_id, int part_number, SharedBytes body,
                     PartHandler handler) {
  Status valid = CheckPartNumber(part_number, "UploadPart");
  if (valid.ok() && (key.empty() || upload_id.empty())) {
    valid = Status(ErrorCode::kInvalidArgument, "UploadPart: empty key or upload id");
  }
  if (!valid.ok()) return PostFailure(*ctx, std::move(handler), std::move(valid));
  auto part = std::make_shared<PartInfo>();
  part->part_number = part_number;
  part->size = body.size();
  part->crc64 = Crc64(0, body.data(), body.size());
  Operation op;
  op.spec = UploadPartSpec(key, upload_id, part_number, std::move(body), ctx->dialect);
  op.error_context.operation = "UploadPart " + std::to_string(part_number);
  op.error_context.key = key;
  op.error_context.upload_id = upload_id;
  op.accept = [part, key, &dialect = ctx->dialect](const http::Response& r) {
    Status s = CheckUploadCrc(r, dialect, *part->crc64, "UploadPart of '" + key + "'");
    if (!s.ok()) return s;
    part->etag = HeaderOr(r, "etag");
    if (part->etag.empty()) return Status(ErrorCode::kProtocol, "UploadPart response has no ETag");
    return Status::Ok();
  };
  RunOperation(ctx, std::move(op), [handler = std::move(handler), part](Status s) {
    if (!s.ok()) return handler(std::move(s));
    handler(std::move(*part));
  });
}

void StartUploadPartCopy(std::shared_ptr<ClientContext> ctx, const std::string& key,
                         const std::string& upload_id, int part_number,
                         const std::string& source_key, const std::string& source_etag,
                         uint64_t offset, uint64_t length, PartHandler handler) {
  Status valid = CheckPartNumber(part_number, "UploadPartCopy");
  if (valid.ok() && (key.empty() || upload_id.empty() || source_key.empty())) {
    valid = Status(ErrorCode::kInvalidArgument, "UploadPartCopy: empty key or upload id");
  }
  if (valid.ok() && (length == 0 || offset + length < offset)) {
    valid = Status(ErrorCode::kInvalidArgument, "UploadPartCopy: the range must be 1 byte or more");
  }
  if (!valid.ok()) return PostFailure(*ctx, std::move(handler), std::move(valid));
  auto body = std::make_shared<std::vector<char>>();
  auto part = std::make_shared<PartInfo>();
  part->part_number = part_number;
  part->size = length;
  Operation op;
  op.spec = UploadPartCopySpec(key, upload_id, part_number,
                               {ctx->options.bucket, source_key, source_etag}, offset, length,
                               ctx->dialect);
  op.error_context.operation = "UploadPartCopy " + std::to_string(part_number);
  op.error_context.key = key;
  op.error_context.upload_id = upload_id;
  op.error_context.source_key = source_key;
  op.error_context.if_match = source_etag;
  op.prepare_target = XmlReplyTarget(body);
  op.accept = [body, part, &dialect = ctx->dialect](const http::Response& r) {
    auto etag = ParseCopyResultXml(View(*body), "CopyPartResult");
    if (!etag.ok()) return etag.status();
    part->etag = std::move(etag.value());
    part->crc64 = ResponseCrc64(r.headers, dialect);  // the bytes never passed through here
    return Status::Ok();
  };
  RunOperation(ctx, std::move(op), [handler = std::move(handler), part](Status s) {
    if (!s.ok()) return handler(std::move(s));
    handler(std::move(*part));
  });
}

void StartCompleteMultipart(std::shared_ptr<ClientContext> ctx, const std::string& key,
                            const std::string& upload_id, std::vector<PartInfo> parts,
                            const WriteOptions& options, PutHandler handler) {
  Status valid;
  if (key.empty() || upload_id.empty()) {
    valid = Status(ErrorCode::kInvalidArgument, "CompleteMultipart: empty key or upload id");
  } else if (parts.empty()) {
    valid = Status(ErrorCode::kInvalidArgument, "CompleteMultipart: no parts");
  }
  for (size_t i = 1; valid.ok() && i < parts.size(); ++i) {
    if (parts[i].part_number <= parts[i - 1].part_number) {
      valid = Status(ErrorCode::kInvalidArgument,
                     "CompleteMultipart: parts must be in ascending order");
    }
  }
  if (!valid.ok()) return PostFailure(*ctx, std::move(handler), std::move(valid));
  const std::string what = "CompleteMultipartUpload of '" + key + "'";
  const std::optional<uint64_t> combined = CombinedCrc64(parts);
  auto body = std::make_shared<std::vector<char>>();
  auto result = std::make_shared<PutResult>();
  auto lost = std::make_shared<std::optional<Status>>();
  Operation op;
  op.spec = CompleteMultipartSpec(key, upload_id, parts, options, ctx->dialect);
  op.error_context.operation = "CompleteMultipartUpload";
  op.error_context.key = key;
  op.error_context.upload_id = upload_id;
  op.error_context.forbid_overwrite = options.forbid_overwrite;
  op.prepare_target = XmlReplyTarget(body);
  op.accept = [body, result, combined, what, &dialect = ctx->dialect](const http::Response& r) {
    auto etag = ParseCompleteMultipartXml(View(*body));
    if (!etag.ok()) return etag.status();
    result->etag = etag.value();
    result->crc64 = ResponseCrc64(r.headers, dialect);
    if (combined && result->crc64 && *combined != *result->crc64) {
      // The object exists now and is not what was sent; completing again cannot fix it.
      return Status(ErrorCode::kIntegrity,
                    what + ": the completed object has CRC-64 " + std::to_string(*result->crc64) +
                        ", but its parts combine to " + std::to_string(*combined),
                    false);
    }
    return Status::Ok();
  };
  op.error_is_success = [lost, forbid = options.forbid_overwrite](const MappedError& e,
                                                                  int attempt) {
    if (!MayBeOwnEarlierAttempt(e, attempt, /*completing=*/true, forbid)) return false;
    *lost = e.status;
    return true;
  };
  RunOperation(ctx, std::move(op),
               [ctx, key, what, parts = std::move(parts), result, lost,
                handler = std::move(handler)](Status s) mutable {
                 if (!s.ok()) return handler(std::move(s));
                 if (!lost->has_value()) return handler(std::move(*result));
                 SettleLostAnswer(ctx, key, ExpectedFromParts(parts, ctx->dialect), **lost, what,
                                  std::move(handler));
               });
}

void StartAbortMultipart(std::shared_ptr<ClientContext> ctx, const std::string& key,
                         const std::string& upload_id, StatusHandler handler) {
  if (key.empty() || upload_id.empty()) {
    return PostFailure(
        *ctx, std::move(handler),
        Status(ErrorCode::kInvalidArgument, "AbortMultipart: empty key or upload id"));
  }
  Operation op;
  op.spec = AbortMultipartSpec(key, upload_id);
  op.error_context.operation = "AbortMultipartUpload";
  op.error_context.key = key;
  op.error_context.upload_id = upload_id;
  op.error_is_success = [](const MappedError& e, int) {
    // Already completed or aborted (or a retry of an abort whose answer was lost): nothing
    // of the upload is left to abort.
    return e.status.service().code == "NoSuchUpload";
  };
  RunOperation(ctx, std::move(op), std::move(handler));
}

void StartListMultipartUploads(std::shared_ptr<ClientContext> ctx, const std::string& prefix,
                               UploadsHandler handler) {
  auto listing = std::make_shared<UploadsListing>();
  listing->ctx = std::move(ctx);
  listing->prefix = prefix;
  listing->handler = std::move(handler);
  NextUploadsPage(std::move(listing));
}

}  // namespace ossmount::object
