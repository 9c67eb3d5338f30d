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
#include "object/write_operations.h"
#include "object/write_support.h"

namespace ossmount::object {
namespace {

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
    Operation op = HeadOperation(*ctx_, key, /*data_path=*/true, info);
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

  void Put(const std::string& key, SharedBytes body, const WriteOptions& options,
           PutHandler handler) override {
    StartPut(ctx_, key, std::move(body), options, std::move(handler));
  }

  void InitiateMultipart(const std::string& key, InitiateHandler handler) override {
    StartInitiateMultipart(ctx_, key, WriteOptions{}, std::move(handler));
  }
  void InitiateMultipartWith(const std::string& key, const WriteOptions& options,
                             InitiateHandler handler) override {
    StartInitiateMultipart(ctx_, key, options, std::move(handler));
  }

  void UploadPart(const std::string& key, const std::string& upload_id, int part_number,
                  SharedBytes body, PartHandler handler) override {
    StartUploadPart(ctx_, key, upload_id, part_number, std::move(body), std::move(handler));
  }

  void UploadPartCopy(const std::string& key, const std::string& upload_id, int part_number,
                      const std::string& source_key, const std::string& source_etag,
                      uint64_t offset, uint64_t length, PartHandler handler) override {
    StartUploadPartCopy(ctx_, key, upload_id, part_number, source_key, source_etag, offset, length,
                        std::move(handler));
  }

  void CompleteMultipart(const std::string& key, const std::string& upload_id,
                         std::vector<PartInfo> parts, const WriteOptions& options,
                         PutHandler handler) override {
    StartCompleteMultipart(ctx_, key, upload_id, std::move(parts), options, std::move(handler));
  }

  void AbortMultipart(const std::string& key, const std::string& upload_id,
                      StatusHandler handler) override {
    StartAbortMultipart(ctx_, key, upload_id, std::move(handler));
  }

  void ListMultipartUploads(const std::string& prefix, UploadsHandler handler) override {
    StartListMultipartUploads(ctx_, prefix, std::move(handler));
  }

  void CopyObject(const std::string& source_key, const std::string& source_etag,
                  const std::string& dest_key, const WriteOptions& options,
                  PutHandler handler) override {
    StartCopyObject(ctx_, source_key, source_etag, dest_key, options, std::move(handler));
  }

  void PutSymlink(const std::string& key, const std::string& target, const WriteOptions& options,
                  StatusHandler handler) override {
    StartPutSymlink(ctx_, key, target, options, std::move(handler));
  }
  bool ListsLinks() const override { return ctx_->dialect.protocol == Protocol::kOss; }
  bool Appends() const override { return ctx_->dialect.protocol == Protocol::kOss; }
  void Append(const AppendRequest& request, AppendHandler handler) override {
    StartAppend(ctx_, request, std::move(handler));
  }
  void GetSymlink(const std::string& key, TextHandler handler) override {
    StartGetSymlink(ctx_, key, std::move(handler));
  }

  void Delete(const std::string& key, StatusHandler handler) override {
    StartDelete(ctx_, key, std::move(handler));
  }

  void DeleteMultiple(std::vector<std::string> keys, StatusHandler handler) override {
    StartDeleteMultiple(ctx_, std::move(keys), std::move(handler));
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
