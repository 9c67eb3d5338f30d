// ObjectClient: the asynchronous object-store interface everything above src/object uses.
//
// Two implementations live in src/object: OSS (signature V1 or V4) and S3 (AWS SigV4).
// Tests use FakeObjectClient / FailingObjectClient (tests/support) instead of a network.
//
// Contract for every method:
//   - It returns at once; the work happens on the client's io_context.
//   - The completion handler is called exactly once, never from inside the call that
//     started the operation (it is always posted), on one of the io_context's threads.
//   - Transient failures (5xx, throttling, connection errors, short bodies, CRC mismatches)
//     are retried inside the client with exponential backoff and jitter, within the
//     configured attempt and time budget. A handler sees an error only once retries are
//     exhausted or the error is not retryable; Status::retryable() then says whether a
//     later retry by the caller might succeed.
//   - Keys are raw UTF-8 object keys relative to the bucket (no leading '/', no URL
//     encoding). The client encodes them on the wire and decodes keys in listings.
//   - Buffers passed in (GetTarget::data) must stay valid until the handler runs.
//
// Thread-safety: all methods may be called concurrently from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ossmount/status.h"
#include "ossmount/transfer.h"

namespace ossmount {

// Metadata of one object, as a listing or a HEAD reports it.
// User metadata (x-oss-meta-* / x-amz-meta-*): names in lowercase, without the prefix.
using UserMetadata = std::vector<std::pair<std::string, std::string>>;

struct ObjectInfo {
  std::string key;  // raw, decoded
  uint64_t size = 0;
  std::string etag;               // as sent, including the quotes
  int64_t mtime_sec = 0;          // Last-Modified, Unix seconds
  std::optional<uint64_t> crc64;  // x-oss-hash-crc64ecma, when the server sent it
  std::string storage_class;
  std::string content_type;  // HEAD only
  // A symbolic link (OSS: the listing's Type, HEAD's x-oss-object-type, "Symlink"); its
  // target comes from GetSymlink.
  bool symlink = false;
  // An appendable object (OSS's Type "Appendable"): AppendObject may extend it.
  bool appendable = false;
  // HEAD only (listings carry none): the user metadata, and that it was read (maybe empty).
  UserMetadata user_meta;
  bool has_user_meta = false;
};

struct ListRequest {
  std::string prefix;
  std::string delimiter;           // "/" for one directory level, "" for a recursive listing
  std::string continuation_token;  // empty for the first page
  int max_keys = 1000;
};

struct ListPage {
  std::vector<ObjectInfo> objects;           // in key order
  std::vector<std::string> common_prefixes;  // decoded, each ends with the delimiter
  bool truncated = false;
  std::string next_continuation_token;  // set when truncated
};

struct GetRequest {
  std::string key;
  uint64_t offset = 0;
  std::optional<uint64_t> length;  // nullopt: to the end of the object
  std::string if_match;            // etag (with quotes) the object must still have; "" = any
  Priority priority = Priority::kForeground;
  std::shared_ptr<CancelFlag> cancel;  // optional
  // When the whole object is read (offset 0, no length) and the server sends
  // x-oss-hash-crc64ecma, the body is verified against it; a mismatch is retried.
};

struct GetResult {
  size_t bytes = 0;          // body bytes written to the target
  uint64_t object_size = 0;  // total size of the object (from Content-Range or Content-Length)
  std::string etag;
  int64_t mtime_sec = 0;
  std::optional<uint64_t> crc64;  // whole-object CRC the server reported
};

// For readers that pinned an object's size and etag (at open, from its listing): OK when
// `r` holds `expected_bytes` of that same object; kPreconditionFailed naming `key` when the
// body length, the object's size or its etag (when both sides know one) differ, that is
// when the object changed since it was pinned.
inline Status CheckPinnedGet(const GetResult& r, const std::string& key, uint64_t expected_bytes,
                             uint64_t pinned_size, const std::string& pinned_etag) {
  if (r.bytes != expected_bytes || r.object_size != pinned_size ||
      (!pinned_etag.empty() && !r.etag.empty() && r.etag != pinned_etag)) {
    return Status(ErrorCode::kPreconditionFailed,
                  "'" + key + "' changed since it was listed (size or etag differs)");
  }
  return Status();
}

// One ranged GET of an object version pinned at open (If-Match its etag), and the check that
// its answer holds exactly that range of that version: the one way large-file readers
// (src/readahead) and the disk-cache warm-up (src/prefetch) send and check a part.
struct PinnedRange {
  std::string key;
  std::string etag;          // pinned at open
  uint64_t object_size = 0;  // pinned at open
  uint64_t offset = 0;
  uint64_t length = 0;
};

inline GetRequest PinnedGetRequest(const PinnedRange& range, Priority priority,
                                   std::shared_ptr<CancelFlag> cancel = nullptr) {
  GetRequest request;
  request.key = range.key;
  request.offset = range.offset;
  request.length = range.length;
  request.if_match = range.etag;
  request.priority = priority;
  request.cancel = std::move(cancel);
  return request;
}

// OK when `r` holds the range of the pinned version. kPreconditionFailed when the object
// changed: another size or etag, or a range past its end (it shrank). Else the GET's error.
inline Status CheckPinnedRange(const Result<GetResult>& r, const PinnedRange& range) {
  if (!r.ok()) {
    if (r.status().code() == ErrorCode::kInvalidRange) {
      return Status(ErrorCode::kPreconditionFailed, r.status().message());
    }
    return r.status();
  }
  return CheckPinnedGet(*r, range.key, range.length, range.object_size, range.etag);
}

// One uploaded part, as UploadPart or UploadPartCopy reports it and CompleteMultipart takes
// it back. size and crc64 let the client check a whole object it could not see completed.
struct PartInfo {
  int part_number = 0;
  std::string etag;
  uint64_t size = 0;              // bytes in the part
  std::optional<uint64_t> crc64;  // the part's CRC-64 (computed locally for UploadPart, and
                                  // equal to the server's when it sent one; the server's for
                                  // UploadPartCopy when it sent one)
};

// Options of the calls that create an object (Put, CompleteMultipart, CopyObject).
struct WriteOptions {
  // Fail with kAlreadyExists instead of replacing an existing object
  // (x-oss-forbid-overwrite: true on OSS, If-None-Match: * on S3).
  bool forbid_overwrite = false;
  // When set, the object's user metadata: PutObject and InitiateMultipartUpload send it, and
  // CopyObject replaces the source's with it (the REPLACE directive, which also sets the
  // Content-Type: content_type, or the name's). nullopt: none (CopyObject: the source's).
  std::optional<UserMetadata> user_meta;
  std::string content_type;
};

// A multipart upload the server still holds open (ListMultipartUploads).
struct OpenUpload {
  std::string key;
  std::string upload_id;
  int64_t initiated_sec = 0;  // Unix seconds; 0 when the server did not say
};

// One AppendObject (OSS): `body` at `position`, which must be the object's length (0 makes a
// new appendable object). crc_before: the CRC-64 of the object's first `position` bytes, when
// the caller knows it; the answer's whole-object CRC-64 is then checked against it.
struct AppendRequest {
  std::string key;
  uint64_t position = 0;
  std::optional<uint64_t> crc_before;
  SharedBytes body;
};

struct AppendResult {
  uint64_t next_position = 0;     // the object's length now
  std::optional<uint64_t> crc64;  // of the whole object, when known
  std::string etag;
};

struct PutResult {
  std::string etag;
  std::optional<uint64_t> crc64;
};

using ListHandler = std::function<void(Result<ListPage>)>;
using HeadHandler = std::function<void(Result<ObjectInfo>)>;
using GetHandler = std::function<void(Result<GetResult>)>;
using PutHandler = std::function<void(Result<PutResult>)>;
using InitiateHandler = std::function<void(Result<std::string>)>;  // upload id
using PartHandler = std::function<void(Result<PartInfo>)>;
using StatusHandler = std::function<void(Status)>;
using UploadsHandler = std::function<void(Result<std::vector<OpenUpload>>)>;
using TextHandler = std::function<void(Result<std::string>)>;
using AppendHandler = std::function<void(Result<AppendResult>)>;

// What the retry loop did since the client was made, all operations together. Read by the
// daemon at exit (and by tests) to report how many faults were absorbed.
struct RetryStats {
  uint64_t retries = 0;        // attempts after the first, all causes
  uint64_t throttled = 0;      // of which after 503 SlowDown / QpsLimitExceeded / 429
  uint64_t server_errors = 0;  // after other 5xx
  uint64_t network = 0;        // after a refused or reset connection
  uint64_t timeouts = 0;       // after a stall deadline, connect timeout or 408
  uint64_t integrity = 0;      // after a short body or a CRC-64 mismatch
  uint64_t other = 0;          // after anything else retryable
  uint64_t retry_after = 0;    // waits lengthened to honour a Retry-After header
  uint64_t gave_up = 0;        // operations that failed after retrying (attempts or budget)
  // Retries of a GET cut short that asked only for the bytes still missing, and how many
  // bytes they did not ask for again (GetTarget::on_arrival).
  uint64_t resumed = 0;
  uint64_t resumed_bytes = 0;
};

class ObjectClient {
 public:
  virtual ~ObjectClient() = default;

  // Counters of the retry loop; clients without one report zeros.
  virtual RetryStats retry_stats() const { return {}; }

  // One page of ListObjectsV2 (encoding-type=url, decoded before the handler sees it).
  virtual void List(const ListRequest& request, ListHandler handler) = 0;

  // HEAD key. A missing key is ErrorCode::kNotFound.
  virtual void Head(const std::string& key, HeadHandler handler) = 0;

  // GET key or a byte range of it. A range that starts at or past the end of the object
  // is kInvalidRange; a range running past the end returns the bytes that exist.
  virtual void Get(const GetRequest& request, GetTarget target, GetHandler handler) = 0;

  // PUT key with the given body. The body's CRC-64 is checked against the server's reply
  // (x-oss-hash-crc64ecma; on S3 the body carries Content-MD5, which the server checks).
  // With forbid_overwrite, an existing key is kAlreadyExists; a retry refused that way after
  // a lost answer is settled by a HEAD (success when the object there is this body).
  virtual void Put(const std::string& key, SharedBytes body, const WriteOptions& options,
                   PutHandler handler) = 0;

  // Multipart upload. Parts are 1..10000; every part but the last must be at least 100 KiB
  // (OSS) or 5 MiB (S3) for Complete to accept them.
  virtual void InitiateMultipart(const std::string& key, InitiateHandler handler) = 0;
  // The same, for an object with options.user_meta (the rest of `options` is Complete's).
  // Clients that store no metadata initiate without it.
  virtual void InitiateMultipartWith(const std::string& key, const WriteOptions& options,
                                     InitiateHandler handler) {
    (void)options;
    InitiateMultipart(key, std::move(handler));
  }
  // The result's size and crc64 describe `body` (checked like Put's).
  virtual void UploadPart(const std::string& key, const std::string& upload_id, int part_number,
                          SharedBytes body, PartHandler handler) = 0;
  // A part copied on the server from bytes [offset, offset + length) of source_key, which must
  // still have etag source_etag (quoted; "" = any version; else kPreconditionFailed). The
  // range must lie within the source (kInvalidRange otherwise) and length be > 0; a missing
  // source is kNotFound naming it. The result's size is `length`.
  virtual void UploadPartCopy(const std::string& key, const std::string& upload_id, int part_number,
                              const std::string& source_key, const std::string& source_etag,
                              uint64_t offset, uint64_t length, PartHandler handler) = 0;
  // parts in ascending part_number order. A lost answer is normal at scale: when a retry of
  // Complete is answered NoSuchUpload, the client HEADs the key and succeeds only if the
  // object there is the one these parts make (its size, and its CRC-64 combined from the
  // parts' when both are known, else the S3 multipart ETag); otherwise the handler gets
  // kIntegrity ("the upload's outcome is unknown and the object is not the one sent").
  // A retried forbid-overwrite Complete answered "already exists" is settled the same way
  // (success when the object is this one, else kAlreadyExists). A Complete answer whose
  // CRC-64 differs from the one combined from the parts (all of which have crc64) is
  // kIntegrity. With forbid_overwrite, an existing key is kAlreadyExists; parts refused by
  // the service (EntityTooSmall, InvalidPart, InvalidPartOrder) are kInvalidArgument.
  virtual void CompleteMultipart(const std::string& key, const std::string& upload_id,
                                 std::vector<PartInfo> parts, const WriteOptions& options,
                                 PutHandler handler) = 0;
  // Aborting an upload the server no longer knows (NoSuchUpload) succeeds.
  virtual void AbortMultipart(const std::string& key, const std::string& upload_id,
                              StatusHandler handler) = 0;
  // Every open multipart upload under prefix (all pages), oldest first. A listing past
  // 1,000 pages, or whose markers do not advance, is kProtocol.
  virtual void ListMultipartUploads(const std::string& prefix, UploadsHandler handler) = 0;

  // Server-side copy of a whole object (CopyObject). The service limits its size (1 GiB on
  // OSS, 5 GiB on S3); larger objects are copied with UploadPartCopy. source_etag as above.
  // The result's crc64 is the server's, often absent for copies. forbid_overwrite as Put's,
  // except that a lost answer is not settled: its retry then reports kAlreadyExists.
  virtual void CopyObject(const std::string& source_key, const std::string& source_etag,
                          const std::string& dest_key, const WriteOptions& options,
                          PutHandler handler) = 0;

  // Whether the service has appendable objects (OSS's AppendObject).
  virtual bool Appends() const { return false; }
  // AppendObject. A position that is not the object's length is kPreconditionFailed (another
  // writer appended, or the object was replaced); an object that is not appendable is
  // kNotSupported; past 5 GB, kTooBig. A retry refused because the lost first attempt
  // succeeded is settled by a HEAD (success when the object has the length, and CRC-64 when
  // crc_before is known, that the append makes).
  virtual void Append(const AppendRequest& request, AppendHandler handler) {
    handler(Status(ErrorCode::kNotSupported, "'" + request.key + "': no appendable objects here"));
  }
  // Whether listings say which objects are links (OSS's Type), so that a mount tells a link
  // from a file without a HEAD. S3's do not.
  virtual bool ListsLinks() const { return false; }
  // A symbolic link at `key` pointing at `target` (any text; a path relative to the link's
  // directory, or absolute). OSS: PutSymlink. S3, which has none, as s3fs stores one: an
  // object whose bytes are the target, with x-amz-meta-mode of S_IFLNK | 0777.
  // forbid_overwrite as Put's. Clients without links answer kNotPermitted.
  virtual void PutSymlink(const std::string& key, const std::string& target,
                          const WriteOptions& options, StatusHandler handler) {
    (void)target;
    (void)options;
    handler(Status(ErrorCode::kNotPermitted, "'" + key + "': this client stores no links"));
  }
  // The target of the link at `key` (OSS: GetSymlink; S3: the object's bytes). kNotFound
  // when missing, kInvalidArgument when the object is not a link (OSS).
  virtual void GetSymlink(const std::string& key, TextHandler handler) {
    handler(Status(ErrorCode::kNotPermitted, "'" + key + "': this client stores no links"));
  }

  // DELETE key. Deleting a missing key succeeds.
  virtual void Delete(const std::string& key, StatusHandler handler) = 0;
  // Deletes up to 1000 keys in one request (DeleteMultipleObjects, quiet mode). Missing keys
  // succeed; the first key the server could not delete fails the call, naming it. More than
  // 1000 keys (or an empty key) is kInvalidArgument; an empty list succeeds at once.
  virtual void DeleteMultiple(std::vector<std::string> keys, StatusHandler handler) = 0;
};

}  // namespace ossmount
