// FakeObjectClient: an in-memory bucket implementing ObjectClient, for unit tests of every
// layer above src/object. It behaves like OSS with x-oss-range-behavior: standard:
//   - List: ListObjectsV2 with prefix, delimiter, continuation tokens and max-keys (capped
//     by set_page_limit, default 1000); objects and common prefixes share the key budget.
//   - Head: kNotFound for a missing key.
//   - Get: ranges (kInvalidRange at or past the end, short at the end), If-Match
//     (kPreconditionFailed), fixed targets that are too small (kIntegrity).
//   - Put / multipart / copies / deletes change the bucket; every write gets a new etag.
//     Writes with WriteOptions::forbid_overwrite onto an existing key fail kAlreadyExists
//     (409 FileAlreadyExists). UploadPart reports the part's size and CRC-64; UploadPartCopy
//     copies a range of an object (If-Match honoured; a range not inside it kInvalidRange).
//     Complete checks, as OSS does: the upload exists (else kNotFound, NoSuchUpload), part
//     numbers ascend (InvalidPartOrder), every part was uploaded with that ETag
//     (InvalidPart), and every part but the last is at least min_part_size (EntityTooSmall);
//     those three are kInvalidArgument. A completed or aborted upload is gone: a second
//     Complete is NoSuchUpload (the fake does not settle lost answers; the real client does).
//     Abort of an unknown upload succeeds. DeleteMultiple takes at most 1000 keys.
//   - Get honours CancelFlag: a request whose flag is set by the time it completes is
//     answered kCancelled without touching the target (counted by cancelled_count()).
//   - Get reports a body's first bytes early when asked (set_early_bytes).
// Every call is counted per operation (before it completes), and completions are always
// posted to the io_context, after an optional latency (a steady_timer, no thread blocked).
// Pause() holds completions back until Resume(), so tests can make requests overlap
// deterministically instead of relying on timing.
//
// Ownership: create it with std::make_shared (pending completions keep it alive).
// Thread-safety: all methods may be called concurrently from any thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ossmount/object_client.h"

namespace ossmount::testing {

enum class Op {
  kList,
  kHead,
  kGet,
  kPut,
  kInitiate,
  kUploadPart,
  kComplete,
  kAbort,
  kDelete,
  kUploadPartCopy,
  kListUploads,
  kCopy,
  kDeleteMultiple,
};
constexpr int kOpCount = 13;
const char* OpName(Op op);

// One request as the fake saw it, for assertions on what was asked.
struct RequestRecord {
  Op op;
  std::string key;  // key, or the prefix for List and ListUploads, the destination of copies
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  std::string if_match;
  std::string delimiter;
  int max_keys = 0;
  Priority priority = Priority::kForeground;  // Get only
  bool cancellable = false;                   // Get only: a CancelFlag was attached
  std::string upload_id;                      // multipart operations
  int part_number = 0;                        // UploadPart, UploadPartCopy
  std::string source_key;                     // copies (offset/length/if_match: the source's)
  bool forbid_overwrite = false;              // Put, Complete, Copy
  std::vector<std::string> keys;              // DeleteMultiple
};

class FakeObjectClient : public ObjectClient,
                         public std::enable_shared_from_this<FakeObjectClient> {
 public:
  // `io` runs the completions and must outlive every pending request.
  explicit FakeObjectClient(boost::asio::io_context& io);
  ~FakeObjectClient() override;

  // --- Bucket contents (take effect at once, also for requests already in flight). ---
  // Creates or replaces an object; returns its new etag (quoted). mtime defaults to a
  // fixed epoch plus a counter so tests are deterministic.
  std::string PutObject(const std::string& key, std::string data,
                        std::optional<int64_t> mtime_sec = std::nullopt);
  void DeleteObject(const std::string& key);
  bool HasObject(const std::string& key) const;
  std::optional<ObjectInfo> Info(const std::string& key) const;
  std::optional<std::string> Data(const std::string& key) const;
  size_t ObjectCount() const;

  // --- Behaviour knobs. ---
  void set_latency(std::chrono::milliseconds latency);
  // Caps max-keys of every List page (to exercise pagination with few keys).
  void set_page_limit(int limit);
  // A hostile server's listing: every truncated page's continuation token is replaced by
  // "cycle-<n % period>" for the nth truncated page, and a request with such a token lists
  // from the start again, so the listing never ends unless the client notices. 0 = off.
  void set_token_cycle(int period);
  // Whether HEAD and whole-object GET report x-oss-hash-crc64ecma (default true).
  void set_report_crc64(bool report);
  // Whether GET honours If-Match (default true). Off: a server that ignores it, as some
  // S3-compatible ones do, so the client's own size/etag check is what catches a change.
  void set_honour_if_match(bool honour);
  // Ranged GETs pinned by If-Match into a fixed target with on_arrival deliver their first
  // `bytes` at once (posted to the io_context, not held by Pause() or the latency) and report
  // them, as a real client does while a body arrives; the rest comes with the completion.
  // With `then_fail`, such GETs then fail (kNetwork, retryable: the connection was reset
  // after those bytes). 0 = off (the default): bytes only at completion.
  void set_early_bytes(uint64_t bytes, bool then_fail = false);
  // The smallest part Complete accepts before the last (default 100 KiB, as OSS).
  void set_min_part_size(uint64_t bytes);
  // Holds every completion (including ones already scheduled) until Resume().
  void Pause();
  void Resume();
  // Holds the answers of List requests for exactly `prefix` (made from the bucket as it was
  // when they were asked) until ReleaseLists(), while every other request completes: a
  // listing in flight across other changes.
  void HoldListsOf(std::string prefix);
  void ReleaseLists();

  // --- Observation. ---
  uint64_t count(Op op) const;
  uint64_t total_count() const;
  void ResetCounters();  // counters and the request log
  std::vector<RequestRecord> requests() const;
  // Requests started and not yet completed, and the most ever at once.
  int in_flight() const;
  int max_in_flight() const;
  // GETs answered kCancelled because their CancelFlag was set.
  uint64_t cancelled_count() const;
  // Multipart uploads initiated and neither completed nor aborted.
  size_t OpenUploadCount() const;
  // The part numbers an open upload holds so far (empty for an unknown upload).
  std::vector<int> UploadedParts(const std::string& upload_id) const;

  // --- ObjectClient. ---
  void List(const ListRequest& request, ListHandler handler) override;
  void Head(const std::string& key, HeadHandler handler) override;
  void Get(const GetRequest& request, GetTarget target, GetHandler handler) override;
  void Put(const std::string& key, SharedBytes body, const WriteOptions& options,
           PutHandler handler) override;
  void InitiateMultipart(const std::string& key, InitiateHandler handler) override;
  void UploadPart(const std::string& key, const std::string& upload_id, int part_number,
                  SharedBytes body, PartHandler handler) override;
  void UploadPartCopy(const std::string& key, const std::string& upload_id, int part_number,
                      const std::string& source_key, const std::string& source_etag,
                      uint64_t offset, uint64_t length, PartHandler handler) override;
  void CompleteMultipart(const std::string& key, const std::string& upload_id,
                         std::vector<PartInfo> parts, const WriteOptions& options,
                         PutHandler handler) override;
  void AbortMultipart(const std::string& key, const std::string& upload_id,
                      StatusHandler handler) override;
  void ListMultipartUploads(const std::string& prefix, UploadsHandler handler) override;
  void CopyObject(const std::string& source_key, const std::string& source_etag,
                  const std::string& dest_key, const WriteOptions& options,
                  PutHandler handler) override;
  void Delete(const std::string& key, StatusHandler handler) override;
  void DeleteMultiple(std::vector<std::string> keys, StatusHandler handler) override;

 private:
  struct Object {
    std::string data;
    std::string etag;
    int64_t mtime_sec = 0;
    uint64_t crc64 = 0;
  };
  struct Part {
    std::string data;
    std::string etag;
  };
  struct Upload {
    std::string key;
    std::map<int, Part> parts;
    int64_t initiated_sec = 0;
  };

  // Counts and logs the request; REQUIRES mu_ held.
  void RecordLocked(RequestRecord record);
  int token_cycle_ = 0;        // guarded by mu_
  uint64_t cycled_pages_ = 0;  // guarded by mu_
  // Runs `complete` on the io_context after the latency (or after Resume()).
  void Finish(std::function<void()> complete);
  void Dispatch(std::function<void()> complete);
  std::string NewEtagLocked();
  ObjectInfo InfoLocked(const std::string& key, const Object& obj, bool with_type) const;
  // Stores a new object at key (new etag and mtime); returns what a PUT reports.
  PutResult StoreLocked(const std::string& key, std::string data);
  // kAlreadyExists (409 FileAlreadyExists) when forbid_overwrite and key exists; else OK.
  Status CheckOverwriteLocked(const std::string& key, const WriteOptions& options) const;
  // The source of a copy: kNotFound, or kPreconditionFailed when if_match differs.
  Result<const Object*> CopySourceLocked(const std::string& key, const std::string& if_match) const;

  boost::asio::io_context& io_;
  // mu_ guards everything below; it is never held while a handler runs.
  mutable std::mutex mu_;
  std::map<std::string, Object> objects_;
  std::map<std::string, Upload> uploads_;
  uint64_t counters_[kOpCount] = {};
  std::vector<RequestRecord> log_;
  std::chrono::milliseconds latency_{0};
  int page_limit_ = 1000;
  bool report_crc64_ = true;
  bool honour_if_match_ = true;
  uint64_t early_bytes_ = 0;
  bool fail_after_early_ = false;
  bool paused_ = false;
  std::vector<std::function<void()>> held_;
  std::optional<std::string> hold_lists_of_;
  std::vector<std::function<void()>> held_lists_;
  int in_flight_ = 0;
  int max_in_flight_ = 0;
  uint64_t cancelled_ = 0;
  uint64_t min_part_size_ = 100 * 1024;
  uint64_t next_etag_ = 1;
  int64_t next_mtime_ = 1700000000;
};

}  // namespace ossmount::testing
