#include "object/object_client_impl.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "common/crc64.h"
#include "object/client_context.h"
#include "object/get_response.h"
#include "object/headers.h"
#include "object/list_parser.h"
#include "object/request_runner.h"
#include "object/response_parsers.h"

namespace ossmount::object {
namespace {

// The largest XML reply (listing page, multipart replies) accepted. A 1,000-key page of
// 1,023-byte keys, URL-encoded, is under 8 MiB; anything far larger is a broken or hostile
// server, refused before it takes the memory.
constexpr size_t kMaxXmlResponseBytes = 16u << 20;

// Checks the server's CRC-64 of an uploaded body against the local one (OSS only).
Status CheckUploadCrc(const http::Response& r, const Dialect& dialect, uint64_t local_crc,
                      const std::string& what) {
  auto server = ResponseCrc64(r.headers, dialect);
  if (server && *server != local_crc) {
    return Status(ErrorCode::kIntegrity,
                  what + ": the server stored different bytes (CRC-64 " + std::to_string(*server) +
                      ", sent " + std::to_string(local_crc) + ")",
                  true);
  }
  return Status::Ok();
}

std::string HeaderOr(const http::Response& r, std::string_view name) {
  const std::string* v = FindHeader(r.headers, name);
  return v ? *v : std::string();
}

// One attempt of a GET: what it asks for, and how many bytes at the target's start it keeps
// from earlier attempts (request is then the rest of the caller's request).
struct ResumedGet {
  GetRequest request;
  uint64_t kept = 0;
};

class OssS3Client final : public ObjectClient {
 public:
  explicit OssS3Client(std::shared_ptr<ClientContext> ctx) : ctx_(std::move(ctx)) {}

  RetryStats retry_stats() const override { return ctx_->retry_counters.Snapshot(); }

  void List(const ListRequest& request, ListHandler handler) override {
    if (request.max_keys < 1 || request.max_keys > 1000) {
      return Fail(handler, Status(ErrorCode::kInvalidArgument, "LIST: max_keys must be 1..1000"));
    }
    auto body = std::make_shared<std::vector<char>>();
    auto page = std::make_shared<ListPage>();
    Operation op;
    op.spec = ListSpec(request);
    op.error_context.operation = "LIST";
    op.prepare_target = [body] {
      body->clear();
      return GetTarget::Growable(body.get(), kMaxXmlResponseBytes);
    };
    op.accept = [body, page](const http::Response&) {
      auto parsed = ParseListObjectsV2(std::string_view(body->data(), body->size()));
      if (!parsed.ok()) return parsed.status();
      *page = std::move(parsed.value().page);
      return Status::Ok();
    };
    Run(std::move(op), [handler = std::move(handler), page](Status s) {
      if (!s.ok()) return handler(std::move(s));
      handler(std::move(*page));
    });
  }

  void Head(const std::string& key, HeadHandler handler) override {
    if (key.empty()) return Fail(handler, Status(ErrorCode::kInvalidArgument, "HEAD: empty key"));
    auto info = std::make_shared<ObjectInfo>();
    Operation op;
    op.spec = HeadSpec(key);
    op.data_path = true;
    op.error_context.operation = "HEAD";
    op.error_context.key = key;
    op.accept = [info, key, &dialect = ctx_->dialect](const http::Response& r) {
      auto parsed = ParseHeadResponse(key, r.headers, dialect);
      if (!parsed.ok()) return parsed.status();
      *info = std::move(parsed.value());
      return Status::Ok();
    };
    Run(std::move(op), [handler = std::move(handler), info](Status s) {
      if (!s.ok()) return handler(std::move(s));
      handler(std::move(*info));
    });
  }

  void Get(const GetRequest& request, GetTarget target, GetHandler handler) override {
    if (request.key.empty()) {
      return Fail(handler, Status(ErrorCode::kInvalidArgument, "GET: empty key"));
    }
    if (request.length && *request.length == 0) {
      return Fail(handler, Status(ErrorCode::kInvalidArgument, "GET: zero-length range"));
    }
    if ((target.growable == nullptr) == (target.data == nullptr)) {
      return Fail(handler, Status(ErrorCode::kInvalidArgument,
                                  "GET: the target must be either a buffer or a vector"));
    }
    auto result = std::make_shared<GetResult>();
    Operation op;
    op.spec = GetSpec(request, ctx_->dialect);
    op.data_path = true;
    op.priority = request.priority;
    op.cancel = request.cancel;
    op.error_context.operation = "GET";
    op.error_context.key = request.key;
    op.error_context.if_match = request.if_match;
    op.prepare_target = [target] {
      if (target.growable) target.growable->clear();
      return target;
    };
    // What the current attempt asks for: the request, or after a cut-short body whose start
    // was handed out, the rest of it (op.resume). Written before each attempt is handed to
    // the executor, read by its vouch and accept: never at the same time.
    auto attempt = std::make_shared<ResumedGet>(ResumedGet{request, 0});
    op.accept = [attempt, target, result, ctx = ctx_.get()](const http::Response& r) {
      // A resumed attempt's body sits past the kept bytes; any other is checked in place (no
      // copy of the caller's target on every GET).
      const uint64_t kept = attempt->kept;
      const GetTarget rest =
          kept > 0 ? GetTarget::Fixed(target.data + kept, target.capacity - kept) : GetTarget();
      Status s = CheckGetResponse(attempt->request, kept > 0 ? rest : target, r, ctx->dialect,
                                  ctx->options.verify_crc64, result.get());
      if (s.ok()) result->bytes += kept;
      return s;
    };
    op.explain_overflow = [attempt](const http::Response& r) {
      return ExplainGetOverflow(attempt->request, r);
    };
    if (target.on_arrival && target.data != nullptr) {
      op.progress = std::make_shared<http::BodyProgress>();
      op.progress->vouch = [attempt, ctx = ctx_.get()](long status,
                                                       const http::HeaderList& headers) {
        return MayUseBodyEarly(attempt->request, status, headers, ctx->dialect,
                               ctx->options.verify_crc64);
      };
      op.progress->arrived = target.on_arrival;
      op.resume = [request, attempt, progress = op.progress.get(),
                   &dialect = ctx_->dialect](RequestSpec* spec) -> size_t {
        const uint64_t kept = ResumableBytes(request, progress->reported.load());
        if (kept == attempt->kept) return kept;  // the first attempt, or nothing new arrived
        *attempt = ResumedGet{kept > 0 ? RemainderOf(request, kept) : request, kept};
        *spec = GetSpec(attempt->request, dialect);
        return kept;
      };
    }
    Run(std::move(op), [handler = std::move(handler), result, target](Status s) {
      if (!s.ok()) {
        if (target.growable) target.growable->clear();  // no bytes from a failed GET
        return handler(std::move(s));
      }
      handler(std::move(*result));
    });
  }

  void Put(const std::string& key, std::shared_ptr<const std::string> body,
           PutHandler handler) override {
    if (key.empty()) return Fail(handler, Status(ErrorCode::kInvalidArgument, "PUT: empty key"));
    uint64_t crc = body ? Crc64(0, body->data(), body->size()) : 0;
    auto result = std::make_shared<PutResult>();
    Operation op;
    op.spec = PutSpec(key, std::move(body));
    op.error_context.operation = "PUT";
    op.error_context.key = key;
    op.accept = [result, crc, key, &dialect = ctx_->dialect](const http::Response& r) {
      Status s = CheckUploadCrc(r, dialect, crc, "PUT '" + key + "'");
      if (!s.ok()) return s;
      result->etag = HeaderOr(r, "etag");
      result->crc64 = ResponseCrc64(r.headers, dialect);
      return Status::Ok();
    };
    Run(std::move(op), [handler = std::move(handler), result](Status s) {
      if (!s.ok()) return handler(std::move(s));
      handler(std::move(*result));
    });
  }

  void InitiateMultipart(const std::string& key, InitiateHandler handler) override {
    if (key.empty()) {
      return Fail(handler, Status(ErrorCode::kInvalidArgument, "multipart: empty key"));
    }
    auto body = std::make_shared<std::vector<char>>();
    auto upload_id = std::make_shared<std::string>();
    Operation op;
    op.spec = InitiateMultipartSpec(key);
    op.error_context.operation = "InitiateMultipartUpload";
    op.error_context.key = key;
    op.prepare_target = [body] {
      body->clear();
      return GetTarget::Growable(body.get(), kMaxXmlResponseBytes);
    };
    op.accept = [body, upload_id](const http::Response&) {
      auto id = ParseInitiateMultipartXml(std::string_view(body->data(), body->size()));
      if (!id.ok()) return id.status();
      *upload_id = std::move(id.value());
      return Status::Ok();
    };
    Run(std::move(op), [handler = std::move(handler), upload_id](Status s) {
      if (!s.ok()) return handler(std::move(s));
      handler(std::move(*upload_id));
    });
  }

  void UploadPart(const std::string& key, const std::string& upload_id, int part_number,
                  std::shared_ptr<const std::string> body, PartHandler handler) override {
    if (part_number < 1 || part_number > 10000) {
      return Fail(handler,
                  Status(ErrorCode::kInvalidArgument, "UploadPart: part numbers are 1..10000"));
    }
    uint64_t crc = body ? Crc64(0, body->data(), body->size()) : 0;
    auto part = std::make_shared<PartInfo>();
    part->part_number = part_number;
    Operation op;
    op.spec = UploadPartSpec(key, upload_id, part_number, std::move(body));
    op.error_context.operation = "UploadPart " + std::to_string(part_number);
    op.error_context.key = key;
    op.error_context.upload_id = upload_id;
    op.accept = [part, crc, key, &dialect = ctx_->dialect](const http::Response& r) {
      Status s = CheckUploadCrc(r, dialect, crc, "UploadPart of '" + key + "'");
      if (!s.ok()) return s;
      part->etag = HeaderOr(r, "etag");
      if (part->etag.empty()) {
        return Status(ErrorCode::kProtocol, "UploadPart response has no ETag");
      }
      return Status::Ok();
    };
    Run(std::move(op), [handler = std::move(handler), part](Status s) {
      if (!s.ok()) return handler(std::move(s));
      handler(std::move(*part));
    });
  }

  void CompleteMultipart(const std::string& key, const std::string& upload_id,
                         std::vector<PartInfo> parts, PutHandler handler) override {
    if (parts.empty()) {
      return Fail(handler, Status(ErrorCode::kInvalidArgument, "CompleteMultipart: no parts"));
    }
    for (size_t i = 1; i < parts.size(); ++i) {
      if (parts[i].part_number <= parts[i - 1].part_number) {
        return Fail(handler, Status(ErrorCode::kInvalidArgument,
                                    "CompleteMultipart: parts must be in ascending order"));
      }
    }
    auto body = std::make_shared<std::vector<char>>();
    auto result = std::make_shared<PutResult>();
    Operation op;
    op.spec = CompleteMultipartSpec(key, upload_id, parts);
    op.error_context.operation = "CompleteMultipartUpload";
    op.error_context.key = key;
    op.error_context.upload_id = upload_id;
    op.prepare_target = [body] {
      body->clear();
      return GetTarget::Growable(body.get(), kMaxXmlResponseBytes);
    };
    op.accept = [body, result, &dialect = ctx_->dialect](const http::Response& r) {
      auto etag = ParseCompleteMultipartXml(std::string_view(body->data(), body->size()));
      if (!etag.ok()) return etag.status();
      result->etag = etag.value();
      if (result->etag.empty()) result->etag = HeaderOr(r, "etag");
      result->crc64 = ResponseCrc64(r.headers, dialect);
      return Status::Ok();
    };
    Run(std::move(op), [handler = std::move(handler), result](Status s) {
      if (!s.ok()) return handler(std::move(s));
      handler(std::move(*result));
    });
  }

  void AbortMultipart(const std::string& key, const std::string& upload_id,
                      StatusHandler handler) override {
    Operation op;
    op.spec = AbortMultipartSpec(key, upload_id);
    op.error_context.operation = "AbortMultipartUpload";
    op.error_context.key = key;
    op.error_context.upload_id = upload_id;
    Run(std::move(op), std::move(handler));
  }

  void Delete(const std::string& key, StatusHandler handler) override {
    if (key.empty()) {
      return Fail(handler, Status(ErrorCode::kInvalidArgument, "DELETE: empty key"));
    }
    Operation op;
    op.spec = DeleteSpec(key);
    op.error_context.operation = "DELETE";
    op.error_context.key = key;
    op.error_is_success = [](const MappedError& e) {
      return e.status.code() == ErrorCode::kNotFound;  // deleting a missing key succeeds
    };
    Run(std::move(op), std::move(handler));
  }

 private:
  void Run(Operation op, std::function<void(Status)> done) {
    RunOperation(ctx_, std::move(op), std::move(done));
  }

  template <typename Handler>
  void Fail(Handler& handler, Status status) {
    boost::asio::post(
        ctx_->io, [handler = std::move(handler), status = std::move(status)] { handler(status); });
  }

  std::shared_ptr<ClientContext> ctx_;
};

}  // namespace

Result<std::shared_ptr<ObjectClient>> NewObjectClient(boost::asio::io_context& io,
                                                      const ClientOptions& options,
                                                      ClientParts parts) {
  Status bucket = ValidateBucketName(options.bucket, options.protocol);
  if (!bucket.ok()) return bucket.Prefix("--bucket");
  auto ctx = std::make_shared<ClientContext>(io, Dialect::For(options.protocol));
  ctx->options = options;
  auto endpoint = ParseEndpoint(options.endpoint, "--endpoint");
  if (!endpoint.ok()) return endpoint.status();
  ctx->endpoint = endpoint.value();
  if (!options.data_endpoint.empty()) {
    auto data = ParseEndpoint(options.data_endpoint, "--data-endpoint");
    if (!data.ok()) return data.status();
    ctx->data_endpoint = data.value();
  }
  ctx->path_style = options.path_style;
  if (!options.credentials) {
    return Status(ErrorCode::kInvalidArgument,
                  "no credentials provider: configure credentials (or anonymous access)");
  }
  if (options.retry.max_attempts < 1) {
    return Status(ErrorCode::kInvalidArgument, "retry: max_attempts must be at least 1");
  }
  if (!parts.executor || !parts.clock || !parts.signer) {
    return Status(ErrorCode::kInternal, "object client built without executor, clock or signer");
  }
  ctx->executor = std::move(parts.executor);
  ctx->clock = std::move(parts.clock);
  ctx->signer = parts.signer;
  ctx->data_signer = parts.data_signer ? std::move(parts.data_signer) : parts.signer;
  return std::shared_ptr<ObjectClient>(std::make_shared<OssS3Client>(std::move(ctx)));
}

}  // namespace ossmount::object
