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
// behind the server's back gets a new ETag (or disappears) there. Writers change a file before
// its index entry, under the key's lock, so a Find() that sees a file differ from its entry
// waits for that lock and decides against the entry the writer left: a write in progress is
// never mistaken for a change behind the server's back. Listings reflect the index; call
// Scan() again (control API /_ossmount/rescan) after changing the tree out of band. A rescan
// keeps what the index knew (ETag, type, metadata) of every file that has not changed since.
//
// ETags: PUT objects get the uppercase hex MD5 of their content (like OSS); multipart
// objects "<md5 of part md5s>-N"; files found on disk get a synthetic 32-hex-digit value from
// (size, mtime, inode), so a scan of a large tree never reads file contents; appendable
// objects one from (size, CRC-64), new on every append; symlinks the MD5 of the target key.
// Never treat an ETag as an MD5 (neither does OSS).
//
// Object types (OSS x-oss-object-type and the listings' Type): Normal (PUT, copies, files found
// on disk), Multipart, Appendable (AppendObject: a disk file grown in place, or a memory blob)
// and Symlink (PutSymlink: no bytes of its own, memory only, kept by Scan()).
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
  std::string object_type = "Normal";  // "Normal" | "Multipart" | "Appendable" | "Symlink"
  std::string symlink_target;          // Symlink: the key it points to, in the same bucket
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
  // A symlink as a GET serves it (ObjectStore::FollowSymlink): the target, whose bytes and
  // caches these are (LoadContent, Crc and ReadRange go to it).
  std::shared_ptr<const ObjectInfo> content_of;

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

// What an AppendObject carries besides the bytes.
struct AppendOptions {
  uint64_t position = 0;           // must be the object's current length (0: absent)
  uint64_t max_size = 5ull << 30;  // the most an appendable object may hold (OSS: 5 GB)
  std::string content_type;        // applied by a first append, as by a PUT
  MetaList user_meta;              // applied by a first append, as by a PUT
  KnownDigests digests;            // of the appended bytes; must be right when set
};

// What an append did: appended, or why not (nothing was written then).
struct AppendResult {
  enum class Outcome {
    kAppended,
    kNotAppendable,     // the key holds a Normal, Multipart or Symlink object
    kPositionMismatch,  // position is not the current length
    kTooLarge,          // the object would grow past max_size
  };
  Outcome outcome = Outcome::kAppended;
  ObjectPtr object;  // kAppended: the object after the append; else the current one, or null
  uint64_t next_position = 0;  // the object's length now: where the next append must start
};

// True when `key` maps to a file strictly below the bucket directory.
bool KeyIsSafePath(std::string_view key);

class ObjectStore {
 public:
  static constexpr uint64_t kCacheFileMax = 8ull << 20;

  ObjectStore(std::filesystem::path root, uint64_t memory_cache_bytes);

  // (Re)builds the index of every bucket from disk, keeping memory-only objects (symlinks
  // among them) and the entries of files unchanged since (their ETag, type and metadata).
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
  // Removes an object; false when it did not exist. A symlink is removed, not its target.
  bool Delete(const std::string& bucket, const std::string& key);

  // AppendObject. An append at position 0 creates the object (type Appendable, the content
  // type and metadata of `options`, like a PUT), also over an empty appendable object; later
  // ones must start at the current length and keep the type and metadata. A disk-backed object
  // grows in place: its file is extended, and its entry (size, ETag, CRC-64, disk identity)
  // replaced after, under the key's lock, so concurrent appends at one position are serialised
  // and exactly one wins, and a reader sees the object before or after an append, never a
  // guess. kNoSuchBucket when the bucket is missing; kInternal when the file cannot be written
  // (it is then cut back to its length before).
  Result<AppendResult> Append(const std::string& bucket, const std::string& key, std::string data,
                              const AppendOptions& options);

  // PutSymlink: stores a symlink to `target` (not checked, as OSS does not: it may be missing
  // or be created later) with the content type and user metadata of `options`. Symlinks have
  // no bytes (size 0) and live in memory only, whatever the key; a file the key had is removed.
  // forbid_overwrite and the errors as for Put().
  Result<ObjectPtr> PutSymlink(const std::string& bucket, const std::string& key,
                               const std::string& target, const PutOptions& options);
  // What a GetObject or HeadObject of the symlink `link` serves: the target's bytes, size,
  // ETag, CRC-64 and Content-MD5, with the link's key, content type, user metadata and type,
  // and the later of the two Last-Modified times (so it moves when either changes). One level
  // is followed: a target that is missing or is a symlink itself gives kNotFound
  // "SymlinkTargetNotExist: ...".
  Result<ObjectPtr> FollowSymlink(const std::string& bucket, const ObjectPtr& link);

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
  // The index entry (null when none); false when the bucket is missing.
  bool Lookup(const std::string& bucket, const std::string& key, ObjectPtr& out) const;
  // Find() for callers that hold the key's lock already (writers checking what they replace).
  ObjectPtr FindLocked(const std::string& bucket, const std::string& key);
  ObjectPtr FindImpl(const std::string& bucket, const std::string& key, bool key_locked);
  // PutPieces() under the key's lock, held by the caller.
  Result<ObjectPtr> PutPiecesLocked(const std::string& bucket, const std::string& key,
                                    std::vector<std::string> pieces, const PutOptions& options);
  // Gives back the memory cache budget of an object version that was superseded in place (an
  // append): its cached copy is dropped, readers holding it keep theirs.
  void ReleaseCached(const ObjectPtr& obj);

  const std::filesystem::path root_;
  const uint64_t cache_budget_;
  std::atomic<uint64_t> cache_used_{0};

  // Serialise Put/Append/PutSymlink/Delete per key (striped by hash), so a check (forbid-
  // overwrite, an append's position) and the store that follows it are one step. Taken before
  // mu_, and held across the file write; Find() takes it only when a file differs from its
  // entry (a write may be in progress).
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
