#include "manifest_setup.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <future>
#include <istream>
#include <optional>
#include <streambuf>

#include "bucket_probe.h"
#include "meta/key_mapping.h"
#include "meta/manifest_client.h"
#include "meta/manifest_parser.h"

namespace ossmount::daemon {

namespace {

// An istream over bytes already in memory, without copying them.
class BytesStreamBuf : public std::streambuf {
 public:
  BytesStreamBuf(char* begin, char* end) { setg(begin, begin, end); }
};

// One start-up request whose answer is waited for like the start-up probes' (notices while
// slow, a deadline): Handler() goes to the client, Await() blocks for what it was given.
template <typename T>
class StartupCall {
 public:
  std::function<void(Result<T>)> Handler() {
    return [slot = slot_, done = done_](Result<T> r) {
      *slot = std::move(r);
      done->set_value(Status::Ok());
    };
  }
  // The client's answer, or nullopt when none came within `timeout`.
  std::optional<Result<T>> Await(const std::string& what, std::chrono::seconds timeout,
                                 const WaitingNotice& on_waiting) {
    if (!WaitForStartupAnswer(ready_, what, timeout, on_waiting)) return std::nullopt;
    return std::move(*slot_);  // written before the promise was set
  }

 private:
  std::shared_ptr<std::optional<Result<T>>> slot_ = std::make_shared<std::optional<Result<T>>>();
  std::shared_ptr<std::promise<Status>> done_ = std::make_shared<std::promise<Status>>();
  std::future<Status> ready_ = done_->get_future();
};

Status NoAnswer(const std::string& what, std::chrono::seconds timeout) {
  return Status(ErrorCode::kTimeout,
                what + ": no answer within " + std::to_string(timeout.count()) + " s");
}

// GET bytes 0-0 of `key`: the bucket's own answer (the object, an empty object's invalid
// range, NoSuchKey, NoSuchBucket, a credentials error), or nullopt when none came in time.
std::optional<Status> ReadFirstByte(ObjectClient& client, const std::string& key,
                                    const std::string& what, std::chrono::seconds timeout,
                                    const WaitingNotice& on_waiting) {
  auto body = std::make_shared<std::vector<char>>();
  StartupCall<GetResult> call;
  GetRequest request;
  request.key = key;
  request.offset = 0;
  request.length = 1;
  // `body` is kept alive by the handler: after a timeout the GET may still write into it.
  client.Get(request, GetTarget::Growable(body.get()),
             [handler = call.Handler(), body](Result<GetResult> r) { handler(std::move(r)); });
  auto got = call.Await(what, timeout, on_waiting);
  if (!got) return std::nullopt;
  return got->status();
}

Status ReadTimedOut(const std::string& key, const config::MountConfig& config,
                    std::chrono::seconds timeout) {
  return Status(ErrorCode::kTimeout,
                "reading '" + key + "' from " + DescribeBucket(config) + " did not finish within " +
                    std::to_string(timeout.count()) +
                    " s\nhint: " + ProbeHint(Status(ErrorCode::kTimeout, ""), config));
}

Status CannotRead(const std::string& key, const config::MountConfig& config, const Status& st) {
  return Status(st.code(),
                "cannot read '" + key + "' from " + DescribeBucket(config) + ": " + st.ToString() +
                    "\nhint: " + ProbeHint(st, config),
                st.retryable());
}

// Any answer from the bucket itself to a GET of the first byte of `key` (the object, an
// empty object's invalid range, NoSuchKey) proves endpoint, bucket and credentials.
Status ProbeWithGet(ObjectClient& client, const std::string& key, const config::MountConfig& config,
                    std::chrono::seconds timeout, const WaitingNotice& on_waiting) {
  const std::string where = DescribeBucket(config);
  std::optional<Status> st = ReadFirstByte(
      client, key, where + " to answer the start-up read of '" + key + "'", timeout, on_waiting);
  if (!st) return ReadTimedOut(key, config, timeout);
  switch (st->code()) {
    case ErrorCode::kOk:
    case ErrorCode::kInvalidRange:
      return Status::Ok();
    case ErrorCode::kNotFound:
      spdlog::warn("manifest: its first entry '{}' is not in {}; reading it will fail", key, where);
      return Status::Ok();
    default:
      return CannotRead(key, config, *st);
  }
}

// Whether a failure to fetch a manifest object came from the bucket's answer (a wrong key,
// bucket, endpoint or credentials), rather than from the object's size or contents.
bool AnsweredByTheBucket(ErrorCode code) {
  switch (code) {
    case ErrorCode::kTooBig:
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kIntegrity:
    case ErrorCode::kPreconditionFailed:
    case ErrorCode::kTimeout:
      return false;
    default:
      return true;
  }
}

// A manifest object's HEAD or GET failed. A HEAD's error carries no error code in its body,
// so a missing bucket looks like a missing key and every credentials error like
// AccessDenied: a GET of the first byte says which it was, and the message then says what
// to fix as the start-up listing's would.
Status ExplainManifestFailure(ObjectClient& client, const config::MountConfig& config,
                              const Status& failed, std::chrono::seconds timeout,
                              const WaitingNotice& on_waiting) {
  if (failed.code() == ErrorCode::kTimeout) {
    return Status(failed.code(), failed.message() + "\nhint: " + ProbeHint(failed, config),
                  failed.retryable());
  }
  if (!AnsweredByTheBucket(failed.code())) return failed;
  const std::string& key = config.manifest_key;
  std::optional<Status> st =
      ReadFirstByte(client, key, "the bucket to answer a read of manifest " + config.manifest,
                    timeout, on_waiting);
  if (!st) return ReadTimedOut(key, config, timeout);
  switch (st->code()) {
    case ErrorCode::kOk:
    case ErrorCode::kInvalidRange:
      break;  // readable now: the first failure stands
    case ErrorCode::kNotFound:
      return failed.code() == ErrorCode::kNotFound ? failed : CannotRead(key, config, *st);
    default:
      return CannotRead(key, config, *st);
  }
  return Status(failed.code(), failed.message() + "\nhint: " + ProbeHint(failed, config),
                failed.retryable());
}

}  // namespace

Result<meta::LoadedManifest> FetchManifestObject(ObjectClient& client, const std::string& key,
                                                 const std::string& uri,
                                                 const meta::ManifestScope& scope,
                                                 std::chrono::seconds timeout,
                                                 const WaitingNotice& on_waiting,
                                                 uint64_t max_bytes) {
  const std::string where = "manifest " + uri;
  StartupCall<ObjectInfo> head_call;
  client.Head(key, head_call.Handler());
  auto answered_head = head_call.Await("the HEAD of " + where, timeout, on_waiting);
  if (!answered_head) return NoAnswer("the HEAD of " + where, timeout);
  Result<ObjectInfo>& head = *answered_head;
  if (!head.ok()) {
    if (head.status().code() == ErrorCode::kNotFound) {
      return Status(ErrorCode::kNotFound,
                    where +
                        ": no such object in the bucket; write it first (one listing, "
                        "docs/CONFIGURATION.md \"Manifest files\") or fix the key");
    }
    return Status(head.status().code(), where + ": " + head.status().message(),
                  head.status().retryable());
  }
  const ObjectInfo& info = head.value();
  if (info.size > max_bytes) {
    return Status(ErrorCode::kTooBig, where + ": the object has " + std::to_string(info.size) +
                                          " bytes, more than a manifest may have (" +
                                          std::to_string(max_bytes) +
                                          "); is the key right? A larger one must be a local "
                                          "--manifest FILE");
  }
  if (info.size == 0) {
    return Status(ErrorCode::kInvalidArgument, where + ": the object is empty (no entries)");
  }
  auto bytes = std::make_shared<std::vector<char>>(info.size);
  StartupCall<GetResult> get_call;
  GetRequest request;
  request.key = key;
  request.if_match = info.etag;  // the version the size was checked on, and no other
  // `bytes` is kept alive by the handler: after a timeout the GET may still write into it.
  auto handler = get_call.Handler();
  client.Get(request, GetTarget::Fixed(bytes->data(), bytes->size()),
             [handler, bytes](Result<GetResult> r) { handler(std::move(r)); });
  auto answered_get = get_call.Await("reading " + where, timeout, on_waiting);
  if (!answered_get) return NoAnswer("reading " + where, timeout);
  Result<GetResult>& got = *answered_get;
  if (!got.ok()) {
    if (got.status().code() == ErrorCode::kPreconditionFailed) {
      return Status(ErrorCode::kPreconditionFailed,
                    where + ": the object changed while it was read; start again", true);
    }
    return Status(got.status().code(), where + ": " + got.status().message(),
                  got.status().retryable());
  }
  if (got.value().bytes != info.size) {
    return Status(ErrorCode::kIntegrity, where + ": read " + std::to_string(got.value().bytes) +
                                             " of its " + std::to_string(info.size) + " bytes");
  }
  BytesStreamBuf buf(bytes->data(), bytes->data() + bytes->size());
  std::istream in(&buf);
  meta::LoadedManifest loaded;
  auto index = meta::ParseManifest(in, uri, scope, &loaded.stats);
  if (!index.ok()) return index.status();
  loaded.index = std::make_shared<const meta::ManifestIndex>(std::move(*index));
  loaded.mtime_sec = info.mtime_sec;
  return loaded;
}

Result<std::shared_ptr<ObjectClient>> SetUpManifest(boost::asio::io_context& io,
                                                    std::shared_ptr<ObjectClient> client,
                                                    const config::MountConfig& config,
                                                    std::chrono::seconds probe_timeout,
                                                    const WaitingNotice& on_waiting) {
  auto prefix = meta::NormalizeMountPrefix(config.fs.prefix);
  if (!prefix.ok()) return prefix.status();
  auto start = std::chrono::steady_clock::now();
  const meta::ManifestScope scope{config.client.bucket, *prefix};
  const bool in_bucket = !config.manifest_key.empty();
  auto loaded = in_bucket ? FetchManifestObject(*client, config.manifest_key, config.manifest,
                                                scope, probe_timeout, on_waiting)
                          : meta::LoadManifestFile(config.manifest, scope);
  if (!loaded.ok() && in_bucket) {
    return ExplainManifestFailure(*client, config, loaded.status(), probe_timeout, on_waiting);
  }
  if (!loaded.ok()) return loaded.status();
  // Give back the heap the parse used (line buffers, the growing arena and records, the sort
  // permutation): what stays is the index itself.
  malloc_trim(0);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  start)
                .count();
  const meta::ManifestStats& s = loaded->stats;
  spdlog::info(
      "manifest {}: {} entries from {} lines in {} ms, index {} bytes ({:.1f} per entry); "
      "{} without a size and {} without an etag (one HEAD each when first listed)",
      config.manifest, s.entries, s.lines, ms, loaded->index->MemoryBytes(),
      static_cast<double>(loaded->index->MemoryBytes()) / static_cast<double>(s.entries),
      s.without_size, s.without_etag);
  // The manifest object's HEAD and GET already proved endpoint, bucket and credentials.
  if (!in_bucket) {
    std::string first = *prefix + std::string(loaded->index->at(0).key);
    if (Status st = ProbeWithGet(*client, first, config, probe_timeout, on_waiting); !st.ok())
      return st;
  }
  return meta::MakeManifestObjectClient(io, std::move(client), loaded->index,
                                        meta::ManifestClientOptions{*prefix, loaded->mtime_sec});
}

}  // namespace ossmount::daemon
