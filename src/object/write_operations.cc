// PUT, CopyObject, DELETE and DeleteMultipleObjects (write_operations.h).
#include "object/write_operations.h"

#include "common/crc64.h"
#include "common/url.h"
#include "object/content_md5.h"
#include "object/headers.h"
#include "object/response_parsers.h"
#include "object/write_support.h"

namespace ossmount::object {
namespace {

// The Status for the first key a DeleteMultipleObjects reply says it could not delete.
Status DeleteFailureStatus(const DeleteFailure& f, size_t total) {
  const std::string message =
      "DeleteMultipleObjects could not delete '" + f.key + "' (" + f.code +
      (f.message.empty() ? "" : ": " + f.message) + ")" +
      (total > 1 ? " and " + std::to_string(total - 1) + " other keys" : std::string());
  ErrorCode code = ErrorCode::kServerError;
  bool retryable = false;
  if (f.code == "AccessDenied") {
    code = ErrorCode::kAccessDenied;
  } else if (f.code == "InternalError" || f.code == "ServiceUnavailable" ||
             IsThrottlingCode(f.code)) {
    retryable = true;  // deleting again is harmless
  }
  Status status(code, message, retryable);
  ServiceErrorDetails details;
  details.http_status = 200;
  details.code = f.code;
  details.server_message = f.message;
  status.WithService(details);
  return status;
}

}  // namespace

void StartPut(std::shared_ptr<ClientContext> ctx, const std::string& key, SharedBytes body,
              const WriteOptions& options, PutHandler handler) {
  if (key.empty()) {
    return PostFailure(*ctx, std::move(handler),
                       Status(ErrorCode::kInvalidArgument, "PUT: empty key"));
  }
  const uint64_t crc = Crc64(0, body.data(), body.size());
  auto result = std::make_shared<PutResult>();
  auto lost = std::make_shared<std::optional<Status>>();  // the refusal of a retry, if any
  const Dialect& dialect = ctx->dialect;
  Operation op;
  op.spec = PutSpec(key, body, options, dialect);
  op.error_context.operation = "PUT";
  op.error_context.key = key;
  op.error_context.forbid_overwrite = options.forbid_overwrite;
  op.accept = [result, crc, key, &dialect](const http::Response& r) {
    Status s = CheckUploadCrc(r, dialect, crc, "PUT '" + key + "'");
    if (!s.ok()) return s;
    result->etag = HeaderOr(r, "etag");
    result->crc64 = ResponseCrc64(r.headers, dialect);
    return Status::Ok();
  };
  if (options.forbid_overwrite) {
    op.error_is_success = [lost](const MappedError& e, int attempt) {
      if (!MayBeOwnEarlierAttempt(e, attempt, /*completing=*/false, true)) return false;
      *lost = e.status;
      return true;
    };
  }
  RunOperation(ctx, std::move(op),
               [ctx, key, body, crc, result, lost, handler = std::move(handler)](Status s) {
                 if (!s.ok()) return handler(std::move(s));
                 if (!lost->has_value()) return handler(std::move(*result));
                 ExpectedObject expected;
                 expected.size = body.size();
                 expected.crc64 = crc;
                 if (ctx->dialect.protocol == Protocol::kS3) {
                   expected.etag = "\"" + HexLower(Md5(body.view())) + "\"";
                 }
                 SettleLostAnswer(ctx, key, std::move(expected), **lost, "PUT '" + key + "'",
                                  std::move(handler));
               });
}

void StartAppend(std::shared_ptr<ClientContext> ctx, const AppendRequest& request,
                 AppendHandler handler) {
  if (request.key.empty() || ctx->dialect.protocol != Protocol::kOss) {
    return PostFailure(
        *ctx, std::move(handler),
        Status(ErrorCode::kInvalidArgument,
               "AppendObject: an empty key, or a service without appendable objects"));
  }
  constexpr uint64_t kAppendableMax = 5ull << 30;  // the service's limit for one object
  const SharedBytes& body = request.body;
  const uint64_t end = request.position + body.size();
  if (end > kAppendableMax) {
    return PostFailure(*ctx, std::move(handler),
                       Status(ErrorCode::kTooBig, "appending to '" + request.key +
                                                      "' would make it " + std::to_string(end) +
                                                      " bytes: an appendable object holds 5 GiB"));
  }
  const uint64_t body_crc = Crc64(0, body.data(), body.size());
  std::optional<uint64_t> expected_crc;
  if (request.crc_before) {
    expected_crc = Crc64Combine(*request.crc_before, body_crc, body.size());
  }
  auto result = std::make_shared<AppendResult>();
  auto lost = std::make_shared<std::optional<Status>>();
  const std::string key = request.key;
  Operation op;
  op.spec = AppendSpec(key, request.position, body, ctx->dialect);
  op.error_context.operation = "AppendObject";
  op.error_context.key = key;
  op.accept = [result, expected_crc, key, end](const http::Response& r) {
    const std::string next = HeaderOr(r, "x-oss-next-append-position");
    if (next != std::to_string(end)) {
      return Status(ErrorCode::kProtocol, "AppendObject '" + key + "': the next position is '" +
                                              next + "', not " + std::to_string(end));
    }
    result->next_position = end;
    result->etag = HeaderOr(r, "etag");
    const std::string crc = HeaderOr(r, "x-oss-hash-crc64ecma");
    if (!crc.empty()) {
      uint64_t server = 0;
      try {
        server = std::stoull(crc);
      } catch (...) {
        return Status(ErrorCode::kProtocol, "AppendObject '" + key + "': a malformed CRC-64");
      }
      if (expected_crc && server != *expected_crc) {
        // Not retried: the bytes are in the object now, and an append cannot be undone.
        return Status(ErrorCode::kIntegrity, "AppendObject '" + key +
                                                 "': the object's CRC-64 after the append (" + crc +
                                                 ") is not the one of the bytes written (" +
                                                 std::to_string(*expected_crc) + ")");
      }
      result->crc64 = server;
    }
    return Status::Ok();
  };
  // A retry refused at its position may answer the lost first attempt, which succeeded.
  op.error_is_success = [lost](const MappedError& e, int attempt) {
    if (attempt < 2 || e.status.service().code != "PositionNotEqualToLength") return false;
    *lost = e.status;
    return true;
  };
  RunOperation(
      ctx, std::move(op),
      [ctx, key, end, expected_crc, result, lost, handler = std::move(handler)](Status s) mutable {
        if (!s.ok()) return handler(std::move(s));
        if (!lost->has_value()) return handler(std::move(*result));
        ExpectedObject expected;
        expected.size = end;
        expected.crc64 = expected_crc;
        SettleLostAnswer(
            ctx, key, std::move(expected), **lost, "AppendObject '" + key + "'",
            [end, expected_crc, handler = std::move(handler)](Result<PutResult> settled) {
              if (!settled.ok()) return handler(settled.status());
              AppendResult r;
              r.next_position = end;
              r.crc64 = settled->crc64 ? settled->crc64 : expected_crc;
              r.etag = settled->etag;
              handler(std::move(r));
            });
      });
}

void StartPutSymlink(std::shared_ptr<ClientContext> ctx, const std::string& key,
                     const std::string& target, const WriteOptions& options,
                     StatusHandler handler) {
  if (key.empty() || target.empty()) {
    return PostFailure(*ctx, std::move(handler),
                       Status(ErrorCode::kInvalidArgument, "PutSymlink: empty key or target"));
  }
  Operation op;
  op.spec = PutSymlinkSpec(key, target, options, ctx->dialect);
  op.error_context.operation = "PutSymlink";
  op.error_context.key = key;
  op.error_context.forbid_overwrite = options.forbid_overwrite;
  RunOperation(ctx, std::move(op), std::move(handler));
}

void StartGetSymlink(std::shared_ptr<ClientContext> ctx, const std::string& key,
                     TextHandler handler) {
  if (key.empty()) {
    return PostFailure(*ctx, std::move(handler),
                       Status(ErrorCode::kInvalidArgument, "GetSymlink: empty key"));
  }
  auto body = std::make_shared<std::vector<char>>();
  auto target = std::make_shared<std::string>();
  const bool oss = ctx->dialect.protocol == Protocol::kOss;
  Operation op;
  op.spec = GetSymlinkSpec(key, ctx->dialect);
  op.error_context.operation = "GetSymlink";
  op.error_context.key = key;
  op.prepare_target = XmlReplyTarget(body);
  op.accept = [body, target, oss, key](const http::Response& r) {
    if (!oss) {
      target->assign(body->begin(), body->end());
      return Status::Ok();
    }
    const std::string* header = FindHeader(r.headers, "x-oss-symlink-target");
    if (!header) {
      return Status(ErrorCode::kProtocol,
                    "GetSymlink '" + key + "': the answer has no x-oss-symlink-target");
    }
    auto decoded = PercentDecode(*header);
    if (!decoded.ok()) {
      return Status(ErrorCode::kProtocol,
                    "GetSymlink '" + key + "': a malformed x-oss-symlink-target");
    }
    *target = std::move(*decoded);
    return Status::Ok();
  };
  RunOperation(ctx, std::move(op), [target, handler = std::move(handler)](Status s) {
    if (!s.ok()) return handler(std::move(s));
    handler(std::move(*target));
  });
}

void StartCopyObject(std::shared_ptr<ClientContext> ctx, const std::string& source_key,
                     const std::string& source_etag, const std::string& dest_key,
                     const WriteOptions& options, PutHandler handler) {
  if (source_key.empty() || dest_key.empty()) {
    return PostFailure(*ctx, std::move(handler),
                       Status(ErrorCode::kInvalidArgument, "CopyObject: empty key"));
  }
  auto body = std::make_shared<std::vector<char>>();
  auto result = std::make_shared<PutResult>();
  Operation op;
  op.spec = CopyObjectSpec({ctx->options.bucket, source_key, source_etag}, dest_key, options,
                           ctx->dialect);
  op.error_context.operation = "CopyObject";
  op.error_context.key = dest_key;
  op.error_context.source_key = source_key;
  op.error_context.if_match = source_etag;
  op.error_context.forbid_overwrite = options.forbid_overwrite;
  op.prepare_target = XmlReplyTarget(body);
  op.accept = [body, result, &dialect = ctx->dialect](const http::Response& r) {
    auto etag = ParseCopyResultXml(View(*body), "CopyObjectResult");
    if (!etag.ok()) return etag.status();
    result->etag = std::move(etag.value());
    // Copies may carry no CRC-64 (OSS_PROTOCOL §5.8); nullopt then.
    result->crc64 = ResponseCrc64(r.headers, dialect);
    return Status::Ok();
  };
  RunOperation(ctx, std::move(op), [result, handler = std::move(handler)](Status s) {
    if (!s.ok()) return handler(std::move(s));
    handler(std::move(*result));
  });
}

void StartDelete(std::shared_ptr<ClientContext> ctx, const std::string& key,
                 StatusHandler handler) {
  if (key.empty()) {
    return PostFailure(*ctx, std::move(handler),
                       Status(ErrorCode::kInvalidArgument, "DELETE: empty key"));
  }
  Operation op;
  op.spec = DeleteSpec(key);
  op.error_context.operation = "DELETE";
  op.error_context.key = key;
  op.error_is_success = [](const MappedError& e, int) {
    return e.status.code() == ErrorCode::kNotFound;  // deleting a missing key succeeds
  };
  RunOperation(ctx, std::move(op), std::move(handler));
}

void StartDeleteMultiple(std::shared_ptr<ClientContext> ctx, std::vector<std::string> keys,
                         StatusHandler handler) {
  if (keys.size() > 1000) {
    return PostFailure(*ctx, std::move(handler),
                       Status(ErrorCode::kInvalidArgument,
                              "DeleteMultipleObjects: at most 1000 keys per request, got " +
                                  std::to_string(keys.size())));
  }
  for (const std::string& key : keys) {
    if (key.empty()) {
      return PostFailure(*ctx, std::move(handler),
                         Status(ErrorCode::kInvalidArgument, "DeleteMultipleObjects: empty key"));
    }
  }
  if (keys.empty()) return PostFailure(*ctx, std::move(handler), Status::Ok());
  auto body = std::make_shared<std::vector<char>>();
  Operation op;
  op.spec = DeleteMultipleSpec(keys);
  op.error_context.operation = "DeleteMultipleObjects";
  op.prepare_target = XmlReplyTarget(body);
  op.accept = [body](const http::Response&) {
    auto failures = ParseDeleteResultXml(View(*body));
    if (!failures.ok()) return failures.status();
    if (failures->empty()) return Status::Ok();
    return DeleteFailureStatus(failures->front(), failures->size());
  };
  RunOperation(ctx, std::move(op), std::move(handler));
}

}  // namespace ossmount::object
