// ObjectStore: the buckets and objects the test server serves.
//
// Every bucket is a subdirectory of the root; every regular file below it is an object whose
// key is its relative path. All objects are indexed in memory (a sorted map per bucket,
// byte order like OSS/S3), built by Scan() and updated by Put/Delete. Objects whose key
// cannot be a safe relative file name (empty or '.'/'..' components, components over 255
// bytes, a trailing '/', NUL bytes) live only in memory, so hostile keys can be served
// without ever touching a path outside the root. A PUT whose key is safe goes to disk; if the
// file cannot be created (a file/directory collision such as "a" and "a/b"), it falls back to
// memory.
//
// Disk-backed objects are re-validated with stat() on every Find(): a file changed or removed
// behind the server's back gets a new ETag (or disappears) there. Listings reflect the index;
// call Scan() again (control API /_ossmount/rescan) after changing the tree out of band.
//
// ETags: PUT objects get the uppercase hex MD5 of their content (like OSS); multipart
// objects "<md5 of part md5s>-N"; files found on disk get a synthetic 32-hex-digit value from
// (size, mtime, inode), so a scan of a large tree never reads file contents. Never treat an
// ETag as an MD5 (neither does OSS).
//
// Contents: small disk files (<= kCacheFileMax) are read whole and cached in memory within a
// byte budget (first come, first cached; no eviction); larger ones are streamed by the caller
// from disk_path. CRC-64 is computed lazily on first use and cached per object.
//
// Thread-safety: all methods may be called concurrently. ObjectInfo snapshots are immutable
// except their lazily filled cache fields, which are guarded by the object's own mutex.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/time_util.h"
#include "ossmount/status.h"

namespace ossmount::testserver {

using MetaList = std::vector<std::pair<std::string, std::string>>;

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  SystemTime mtime;
  std::string etag;                    // unquoted
  std::string object_type = "Normal";  // "Normal" | "Multipart"
  std::string content_type = "application/octet-stream";
  std::string content_md5;            // base64; empty when unknown
  MetaList user_meta;                 // lowercase names without the x-oss-meta- prefix
  std::optional<uint64_t> known_crc;  // set at PUT time
  // Exactly one of these holds the bytes.
  std::string disk_path;                    // disk-backed object
  std::shared_ptr<const std::string> blob;  // memory-only object
  // Disk identity for change detection.
  int64_t disk_mtime_ns = 0;
  uint64_t disk_ino = 0;

  // Lazily filled caches (guarded by mu).
  mutable std::mutex mu;
  mutable std::optional<uint64_t> crc;
  mutable std::shared_ptr<const std::string> cached;
};
using ObjectPtr = std::shared_ptr<const ObjectInfo>;
using ObjectIndex = std::map<std::string, ObjectPtr>;

using Md5Digest = std::array<unsigned char, 16>;

// Digests of a body already computed (e.g. while it arrived); absent ones are computed.
struct KnownDigests {
  std::optional<Md5Digest> md5;
  std::optional<uint64_t> crc64;
};

// What a PUT carries besides the bytes.
struct PutOptions {
  std::string content_type;  // empty: application/octet-stream
  MetaList user_meta;
  std::string etag;  // empty: MD5 of the content
  std::string object_type = "Normal";
  bool forbid_overwrite = false;
  KnownDigests digests;  // of exactly the bytes stored; must be right when set
};

// True when `key` maps to a file strictly below the bucket directory.
bool KeyIsSafePath(std::string_view key);

class ObjectStore {
 public:
  static constexpr uint64_t kCacheFileMax = 8ull << 20;

  ObjectStore(std::filesystem::path root, uint64_t memory_cache_bytes);

  // (Re)builds the index of every bucket from disk, keeping memory-only objects.
  Status Scan();

  Status CreateBucket(const std::string& bucket);
  bool BucketExists(const std::string& bucket) const;
  std::vector<std::string> Buckets() const;
  // kInvalidArgument with message "BucketNotEmpty" when objects remain.
  Status DeleteBucket(const std::string& bucket);

  // The object, or nullptr. Disk-backed entries are re-validated with stat().
  ObjectPtr Find(const std::string& bucket, const std::string& key);

  // The object's bytes when it is memory-only or small enough to hold; nullptr when the
  // caller should stream from disk_path.
  Result<std::shared_ptr<const std::string>> LoadContent(const ObjectPtr& obj);
  Result<uint64_t> Crc(const ObjectPtr& obj);

  // `length` bytes of the object from `offset` (which must lie within it): a copy source.
  Result<std::string> ReadRange(const ObjectPtr& obj, uint64_t offset, uint64_t length);

  // Stores an object (replacing any previous one). kPreconditionFailed when
  // forbid_overwrite and the key exists (checked atomically with the store: of two racing
  // forbid-overwrite PUTs of one key, exactly one succeeds); kNoSuchBucket when the bucket
  // is missing.
  Result<ObjectPtr> Put(const std::string& bucket, const std::string& key, std::string data,
                        const PutOptions& options);
  // The same for an object made of the concatenation of `pieces` (a completed multipart
  // upload): a disk-backed object is written piece by piece, never joined in memory.
  Result<ObjectPtr> PutPieces(const std::string& bucket, const std::string& key,
                              std::vector<std::string> pieces, const PutOptions& options);
  // Removes an object; false when it did not exist.
  bool Delete(const std::string& bucket, const std::string& key);

  // Runs fn(index) under a shared lock; kNoSuchBucket when the bucket is missing.
  template <typename Fn>
  Status WithIndex(const std::string& bucket, Fn&& fn) const {
    std::shared_lock lock(mu_);
    auto it = buckets_.find(bucket);
    if (it == buckets_.end()) return Status(ErrorCode::kNoSuchBucket, "no such bucket");
    fn(it->second);
    return Status::Ok();
  }

  uint64_t cache_bytes_used() const { return cache_used_.load(); }

 private:
  std::filesystem::path BucketDir(const std::string& bucket) const { return root_ / bucket; }
  Result<ObjectPtr> StatDiskObject(const std::string& key, const std::filesystem::path& path,
                                   const ObjectPtr& previous) const;
  Status ScanBucket(const std::string& bucket, ObjectIndex& index) const;
  void Replace(const std::string& bucket, const std::string& key, ObjectPtr obj);

  const std::filesystem::path root_;
  const uint64_t cache_budget_;
  std::atomic<uint64_t> cache_used_{0};

  // Serialise Put/Delete per key (striped by hash), so a forbid-overwrite check and the store
  // that follows it are one step. Taken before mu_, and held across the file write.
  std::mutex& KeyLock(const std::string& bucket, const std::string& key);
  std::array<std::mutex, 64> key_locks_;

  // Guards buckets_. Never held across file I/O except during Scan().
  mutable std::shared_mutex mu_;
  std::map<std::string, ObjectIndex> buckets_;
};

// Uppercase hex MD5 / base64 MD5 of bytes (OpenSSL).
std::string Md5Hex(std::string_view data);
std::string Md5Base64(std::string_view data);
Md5Digest Md5Raw(std::string_view data);
std::string Md5Base64(const Md5Digest& md5);
std::string HexUpper(const unsigned char* data, size_t size);

}  // namespace ossmount::testserver
