#include "object_store.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <system_error>

#include "common/crc64.h"

namespace ossmount::testserver {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kTmpPrefix = ".ossmount-tmp-";

uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::string SyntheticEtag(uint64_t size, int64_t mtime_ns, uint64_t ino) {
  uint64_t a = Mix(size ^ Mix(static_cast<uint64_t>(mtime_ns) ^ Mix(ino)));
  uint64_t b = Mix(a ^ 0x5EEDull);
  unsigned char bytes[16];
  for (int i = 0; i < 8; ++i) {
    bytes[i] = static_cast<unsigned char>(a >> (56 - 8 * i));
    bytes[8 + i] = static_cast<unsigned char>(b >> (56 - 8 * i));
  }
  return HexUpper(bytes, 16);
}

// Appendable objects: from (size, CRC-64), so every append gives a new value without the
// whole object being read again (OSS's appendable ETags are not MD5s either).
std::string AppendableEtag(uint64_t size, uint64_t crc) {
  uint64_t a = Mix(size ^ Mix(crc ^ 0xA99E4Dull));
  uint64_t b = Mix(a ^ crc);
  unsigned char bytes[16];
  for (int i = 0; i < 8; ++i) {
    bytes[i] = static_cast<unsigned char>(a >> (56 - 8 * i));
    bytes[8 + i] = static_cast<unsigned char>(b >> (56 - 8 * i));
  }
  return HexUpper(bytes, 16);
}

// Both entries describe the same, unchanged file.
bool SameDiskFile(const ObjectInfo& a, const ObjectInfo& b) {
  return !a.disk_path.empty() && a.disk_path == b.disk_path && a.disk_ino == b.disk_ino &&
         a.disk_mtime_ns == b.disk_mtime_ns && a.size == b.size;
}

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

SystemTime NowSeconds() {
  return std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
}

std::string GuessContentType(std::string_view key) {
  auto dot = key.rfind('.');
  if (dot == std::string_view::npos) return "application/octet-stream";
  std::string ext(key.substr(dot + 1));
  for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == "jpg" || ext == "jpeg") return "image/jpeg";
  if (ext == "png") return "image/png";
  if (ext == "txt") return "text/plain";
  if (ext == "json") return "application/json";
  return "application/octet-stream";
}

// Reads a whole file; the size must match `expected`.
Result<std::shared_ptr<const std::string>> ReadWholeFile(const std::string& path,
                                                         uint64_t expected) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(ErrorCode::kNotFound, "object file vanished");
  auto data = std::make_shared<std::string>();
  data->resize(expected);
  uint64_t done = 0;
  while (done < expected) {
    ssize_t n = ::pread(fd, data->data() + done, expected - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<uint64_t>(n);
  }
  ::close(fd);
  if (done != expected) return Status(ErrorCode::kInternal, "object file changed size while read");
  return std::shared_ptr<const std::string>(std::move(data));
}

}  // namespace

std::string HexUpper(const unsigned char* data, size_t size) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out(size * 2, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kHex[data[i] >> 4];
    out[2 * i + 1] = kHex[data[i] & 15];
  }
  return out;
}

Md5Digest Md5Raw(std::string_view data) {
  Md5Digest md{};
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md.data(), &len, EVP_md5(), nullptr);
  return md;
}

std::string Md5Hex(std::string_view data) {
  Md5Digest md = Md5Raw(data);
  return HexUpper(md.data(), md.size());
}

std::string Md5Base64(const Md5Digest& md5) {
  unsigned char b64[32];
  int n = EVP_EncodeBlock(b64, md5.data(), static_cast<int>(md5.size()));
  return std::string(reinterpret_cast<char*>(b64), static_cast<size_t>(n));
}

std::string Md5Base64(std::string_view data) { return Md5Base64(Md5Raw(data)); }

bool KeyIsSafePath(std::string_view key) {
  if (key.empty() || key.size() > 1023) return false;
  size_t start = 0;
  while (true) {
    size_t slash = key.find('/', start);
    std::string_view comp =
        key.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (comp.empty() || comp == "." || comp == ".." || comp.size() > 255) return false;
    if (comp.find('\0') != std::string_view::npos) return false;
    if (comp.substr(0, kTmpPrefix.size()) == kTmpPrefix) return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;  // a trailing '/' gives an empty last component: unsafe
  }
}

ObjectStore::ObjectStore(fs::path root, uint64_t memory_cache_bytes)
    : root_(std::move(root)), cache_budget_(memory_cache_bytes) {}

Result<ObjectPtr> ObjectStore::StatDiskObject(const std::string& key, const fs::path& path,
                                              const ObjectPtr& previous) const {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status(ErrorCode::kNotFound, "not a regular file");
  }
  int64_t mtime_ns = MtimeNs(st);
  if (previous && previous->disk_mtime_ns == mtime_ns && previous->disk_ino == st.st_ino &&
      previous->size == static_cast<uint64_t>(st.st_size)) {
    return previous;
  }
  auto obj = std::make_shared<ObjectInfo>();
  obj->key = key;
  obj->size = static_cast<uint64_t>(st.st_size);
  obj->mtime = SystemTime(
      std::chrono::duration_cast<SystemTime::duration>(std::chrono::seconds(st.st_mtim.tv_sec)));
  obj->etag = SyntheticEtag(obj->size, mtime_ns, st.st_ino);
  obj->content_type = GuessContentType(key);
  obj->disk_path = path.string();
  obj->disk_mtime_ns = mtime_ns;
  obj->disk_ino = st.st_ino;
  return ObjectPtr(std::move(obj));
}

Status ObjectStore::ScanBucket(const std::string& bucket, ObjectIndex& index) const {
  std::error_code ec;
  fs::path dir = BucketDir(bucket);
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->is_symlink(ec)) continue;
    std::string key = it->path().lexically_relative(dir).generic_string();
    if (!KeyIsSafePath(key)) continue;  // e.g. our own temp files
    auto obj = StatDiskObject(key, it->path(), nullptr);
    if (obj.ok()) index[key] = std::move(obj.value());
  }
  if (ec) return Status(ErrorCode::kInternal, "scanning " + dir.string() + ": " + ec.message());
  return Status::Ok();
}

Status ObjectStore::Scan() {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) return Status(ErrorCode::kInvalidArgument, "cannot create root: " + ec.message());
  std::map<std::string, ObjectIndex> fresh;
  for (const auto& e : fs::directory_iterator(root_, ec)) {
    if (!e.is_directory()) continue;
    std::string name = e.path().filename().string();
    ObjectIndex index;
    Status s = ScanBucket(name, index);
    if (!s.ok()) return s;
    fresh.emplace(name, std::move(index));
  }
  if (ec) return Status(ErrorCode::kInvalidArgument, "cannot list root: " + ec.message());
  std::unique_lock lock(mu_);
  for (auto& [bucket, index] : buckets_) {
    auto dst = fresh.find(bucket);
    if (dst == fresh.end()) continue;
    for (auto& [key, obj] : index) {
      if (obj->disk_path.empty()) {
        // Memory-only objects (symlinks among them) have no file to be rediscovered from.
        dst->second[key] = obj;
        continue;
      }
      // A file unchanged since the index last saw it keeps what the index knew of it (its
      // ETag, type, content type, metadata, CRC-64) rather than a stat's guess: an appendable
      // object stays appendable, a PUT object keeps its MD5 ETag.
      auto found = dst->second.find(key);
      if (found != dst->second.end() && SameDiskFile(*found->second, *obj)) {
        found->second = obj;
        continue;
      }
      // The walk saw another file, or none: a write (a PUT, an append) may have finished
      // since. If the entry describes the file as it is now, the entry is right.
      auto now = StatDiskObject(key, obj->disk_path, obj);
      if (now.ok() && now.value() == obj) dst->second[key] = obj;
    }
  }
  buckets_ = std::move(fresh);
  return Status::Ok();
}

Status ObjectStore::CreateBucket(const std::string& bucket) {
  if (bucket.empty() || bucket.find('/') != std::string::npos || bucket == "." || bucket == "..") {
    return Status(ErrorCode::kInvalidArgument, "invalid bucket name");
  }
  std::error_code ec;
  fs::create_directories(BucketDir(bucket), ec);
  if (ec) return Status(ErrorCode::kInternal, "cannot create bucket directory: " + ec.message());
  std::unique_lock lock(mu_);
  buckets_.try_emplace(bucket);
  return Status::Ok();
}

bool ObjectStore::BucketExists(const std::string& bucket) const {
  std::shared_lock lock(mu_);
  return buckets_.count(bucket) != 0;
}

std::vector<std::string> ObjectStore::Buckets() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, index] : buckets_) out.push_back(name);
  return out;
}

Status ObjectStore::DeleteBucket(const std::string& bucket) {
  std::unique_lock lock(mu_);
  auto it = buckets_.find(bucket);
  if (it == buckets_.end()) return Status(ErrorCode::kNoSuchBucket, "no such bucket");
  if (!it->second.empty()) return Status(ErrorCode::kInvalidArgument, "BucketNotEmpty");
  std::error_code ec;
  fs::remove_all(BucketDir(bucket), ec);
  buckets_.erase(it);
  return Status::Ok();
}

void ObjectStore::Replace(const std::string& bucket, const std::string& key, ObjectPtr obj) {
  std::unique_lock lock(mu_);
  auto it = buckets_.find(bucket);
  if (it == buckets_.end()) return;
  if (obj) {
    it->second[key] = std::move(obj);
  } else {
    it->second.erase(key);
  }
}

bool ObjectStore::Lookup(const std::string& bucket, const std::string& key, ObjectPtr& out) const {
  std::shared_lock lock(mu_);
  out = nullptr;
  auto b = buckets_.find(bucket);
  if (b == buckets_.end()) return false;
  auto it = b->second.find(key);
  if (it != b->second.end()) out = it->second;
  return true;
}

ObjectPtr ObjectStore::Find(const std::string& bucket, const std::string& key) {
  return FindImpl(bucket, key, false);
}

ObjectPtr ObjectStore::FindLocked(const std::string& bucket, const std::string& key) {
  return FindImpl(bucket, key, true);
}

ObjectPtr ObjectStore::FindImpl(const std::string& bucket, const std::string& key,
                                bool key_locked) {
  ObjectPtr current;
  if (!Lookup(bucket, key, current)) return nullptr;
  if (current && current->disk_path.empty()) return current;
  // Disk-backed or unknown: consult the file system (new files appear without a rescan).
  if (!current && !KeyIsSafePath(key)) return nullptr;
  auto stat_entry = [&](const ObjectPtr& entry) {
    fs::path path = entry ? fs::path(entry->disk_path) : BucketDir(bucket) / key;
    return StatDiskObject(key, path, entry);
  };
  auto fresh = stat_entry(current);
  if (fresh.ok() && fresh.value() == current) return current;  // unchanged: the common case
  // The file differs from its entry. A writer of this key changes the file first and the entry
  // after, both under the key's lock: wait for any write in progress, then judge against the
  // entry it left, so a write is never mistaken for a change behind the server's back.
  std::unique_lock<std::mutex> key_lock(KeyLock(bucket, key), std::defer_lock);
  if (!key_locked) key_lock.lock();
  ObjectPtr settled;
  if (!Lookup(bucket, key, settled)) return nullptr;
  if (settled != current) {
    if (settled && settled->disk_path.empty()) return settled;
    current = std::move(settled);
    fresh = stat_entry(current);
  }
  if (!fresh.ok()) {
    if (current) Replace(bucket, key, nullptr);
    return nullptr;
  }
  if (fresh.value() != current) Replace(bucket, key, fresh.value());
  return fresh.value();
}

Result<std::shared_ptr<const std::string>> ObjectStore::LoadContent(const ObjectPtr& obj) {
  if (obj->content_of) return LoadContent(obj->content_of);  // cached once, on the target
  if (obj->blob) return obj->blob;
  {
    std::lock_guard lock(obj->mu);
    if (obj->cached) return obj->cached;
  }
  if (obj->size > kCacheFileMax) return std::shared_ptr<const std::string>();
  auto data = ReadWholeFile(obj->disk_path, obj->size);
  if (!data.ok()) return data;
  uint64_t used = cache_used_.load();
  while (used + obj->size <= cache_budget_) {
    if (cache_used_.compare_exchange_weak(used, used + obj->size)) {
      std::lock_guard lock(obj->mu);
      if (obj->cached) {
        cache_used_ -= obj->size;  // another thread won the race
        return obj->cached;
      }
      obj->cached = data.value();
      break;
    }
  }
  return data;
}

Result<uint64_t> ObjectStore::Crc(const ObjectPtr& obj) {
  if (obj->content_of) return Crc(obj->content_of);
  if (obj->known_crc) return *obj->known_crc;
  {
    std::lock_guard lock(obj->mu);
    if (obj->crc) return *obj->crc;
  }
  uint64_t crc = 0;
  auto content = LoadContent(obj);
  if (!content.ok()) return content.status();
  if (content.value()) {
    crc = Crc64(0, content.value()->data(), content.value()->size());
  } else {
    int fd = ::open(obj->disk_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status(ErrorCode::kNotFound, "object file vanished");
    std::string buf(1 << 20, '\0');
    uint64_t done = 0;
    while (done < obj->size) {
      ssize_t n = ::pread(fd, buf.data(), std::min<uint64_t>(buf.size(), obj->size - done),
                          static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      crc = Crc64(crc, buf.data(), static_cast<size_t>(n));
      done += static_cast<uint64_t>(n);
    }
    ::close(fd);
    if (done != obj->size) return Status(ErrorCode::kInternal, "object file changed while read");
  }
  std::lock_guard lock(obj->mu);
  obj->crc = crc;
  return crc;
}

std::mutex& ObjectStore::KeyLock(const std::string& bucket, const std::string& key) {
  size_t h = std::hash<std::string>()(bucket) * 31 + std::hash<std::string>()(key);
  return key_locks_[h % key_locks_.size()];
}

Result<std::string> ObjectStore::ReadRange(const ObjectPtr& obj, uint64_t offset, uint64_t length) {
  if (obj->content_of) return ReadRange(obj->content_of, offset, length);
  if (offset > obj->size || length > obj->size - offset) {
    return Status(ErrorCode::kInvalidArgument, "InvalidArgument: range outside the object");
  }
  auto content = LoadContent(obj);
  if (!content.ok()) return content.status();
  if (content.value()) return content.value()->substr(offset, length);
  std::string data(length, '\0');
  int fd = ::open(obj->disk_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(ErrorCode::kNotFound, "NoSuchKey: The specified key does not exist.");
  uint64_t done = 0;
  while (done < length) {
    ssize_t n = ::pread(fd, data.data() + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<uint64_t>(n);
  }
  ::close(fd);
  if (done != length) return Status(ErrorCode::kInternal, "copy source changed while read");
  return data;
}

Result<ObjectPtr> ObjectStore::Put(const std::string& bucket, const std::string& key,
                                   std::string data, const PutOptions& options) {
  std::vector<std::string> pieces;
  pieces.push_back(std::move(data));
  return PutPieces(bucket, key, std::move(pieces), options);
}

namespace {

// Writes every piece to `fd`, in order; false on any failure.
bool WritePieces(int fd, const std::vector<std::string>& pieces) {
  for (const auto& piece : pieces) {
    size_t done = 0;
    while (done < piece.size()) {
      ssize_t n = ::write(fd, piece.data() + done, piece.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
  }
  return true;
}

}  // namespace

Result<ObjectPtr> ObjectStore::PutPieces(const std::string& bucket, const std::string& key,
                                         std::vector<std::string> pieces,
                                         const PutOptions& options) {
  if (!BucketExists(bucket)) return Status(ErrorCode::kNoSuchBucket, "no such bucket");
  std::lock_guard key_lock(KeyLock(bucket, key));
  return PutPiecesLocked(bucket, key, std::move(pieces), options);
}

Result<ObjectPtr> ObjectStore::PutPiecesLocked(const std::string& bucket, const std::string& key,
                                               std::vector<std::string> pieces,
                                               const PutOptions& options) {
  if (options.forbid_overwrite && FindLocked(bucket, key)) {
    return Status(ErrorCode::kPreconditionFailed, "FileAlreadyExists");
  }
  auto obj = std::make_shared<ObjectInfo>();
  obj->key = key;
  for (const auto& piece : pieces) obj->size += piece.size();
  // Each digest is computed once, and only when not already known (the session computes
  // both while a PUT body arrives; a multipart upload knows its CRC from the parts').
  if (options.etag.empty()) {
    Md5Digest md5{};
    if (options.digests.md5) {
      md5 = *options.digests.md5;
    } else if (pieces.size() == 1) {
      md5 = Md5Raw(pieces.front());
    } else {
      EVP_MD_CTX* ctx = EVP_MD_CTX_new();
      EVP_DigestInit_ex(ctx, EVP_md5(), nullptr);
      for (const auto& piece : pieces) EVP_DigestUpdate(ctx, piece.data(), piece.size());
      unsigned int len = 0;
      EVP_DigestFinal_ex(ctx, md5.data(), &len);
      EVP_MD_CTX_free(ctx);
    }
    obj->etag = HexUpper(md5.data(), md5.size());
    obj->content_md5 = Md5Base64(md5);
  } else {
    obj->etag = options.etag;
  }
  obj->object_type = options.object_type;
  obj->content_type =
      options.content_type.empty() ? "application/octet-stream" : options.content_type;
  obj->user_meta = options.user_meta;
  if (options.digests.crc64) {
    obj->known_crc = *options.digests.crc64;
  } else {
    uint64_t crc = 0;
    for (const auto& piece : pieces) crc = Crc64(crc, piece.data(), piece.size());
    obj->known_crc = crc;
  }
  obj->mtime = NowSeconds();

  bool on_disk = false;
  if (KeyIsSafePath(key)) {
    fs::path path = BucketDir(bucket) / key;
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (!ec) {
      static std::atomic<uint64_t> seq{0};
      fs::path tmp = path.parent_path() / (std::string(kTmpPrefix) + std::to_string(::getpid()) +
                                           "-" + std::to_string(seq.fetch_add(1)));
      int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd >= 0) {
        const bool written = WritePieces(fd, pieces);
        bool ok = ::close(fd) == 0 && written;
        struct stat st;
        if (ok && ::rename(tmp.c_str(), path.c_str()) == 0 && ::lstat(path.c_str(), &st) == 0) {
          on_disk = true;
          obj->disk_path = path.string();
          obj->disk_mtime_ns = MtimeNs(st);
          obj->disk_ino = st.st_ino;
        } else {
          ::unlink(tmp.c_str());
        }
      }
    }
  }
  // The bytes in memory: always for a memory-only object, within the budget for a small file.
  bool cache = false;
  if (on_disk && obj->size <= kCacheFileMax) {
    uint64_t used = cache_used_.load();
    while (used + obj->size <= cache_budget_) {
      if (cache_used_.compare_exchange_weak(used, used + obj->size)) {
        cache = true;
        break;
      }
    }
  }
  if (!on_disk || cache) {
    std::string joined;
    if (pieces.size() == 1) {
      joined = std::move(pieces.front());
    } else {
      joined.reserve(obj->size);
      for (auto& piece : pieces) {
        joined += piece;
        std::string().swap(piece);
      }
    }
    auto shared = std::make_shared<const std::string>(std::move(joined));
    if (on_disk) {
      obj->cached = std::move(shared);
    } else {
      obj->blob = std::move(shared);
    }
  }
  ObjectPtr previous;
  {
    std::unique_lock lock(mu_);
    auto b = buckets_.find(bucket);
    if (b == buckets_.end()) return Status(ErrorCode::kNoSuchBucket, "no such bucket");
    auto it = b->second.find(key);
    if (it != b->second.end()) previous = it->second;
    b->second[key] = obj;
  }
  // A safe key that fell back to memory must not leave a stale file to be rediscovered.
  if (!on_disk && previous && !previous->disk_path.empty()) ::unlink(previous->disk_path.c_str());
  return ObjectPtr(obj);
}

bool ObjectStore::Delete(const std::string& bucket, const std::string& key) {
  std::lock_guard key_lock(KeyLock(bucket, key));
  ObjectPtr previous = FindLocked(bucket, key);
  if (!previous) return false;
  {
    std::unique_lock lock(mu_);
    auto b = buckets_.find(bucket);
    if (b != buckets_.end()) b->second.erase(key);
  }
  if (!previous->disk_path.empty()) ::unlink(previous->disk_path.c_str());
  return true;
}

void ObjectStore::ReleaseCached(const ObjectPtr& obj) {
  std::lock_guard lock(obj->mu);
  if (!obj->cached) return;
  cache_used_ -= obj->cached->size();
  obj->cached.reset();
}

namespace {

// Writes `data` at `offset` of `fd`; false on any failure.
bool PwriteAll(int fd, std::string_view data, uint64_t offset) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n =
        ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Result<AppendResult> ObjectStore::Append(const std::string& bucket, const std::string& key,
                                         std::string data, const AppendOptions& options) {
  if (!BucketExists(bucket)) return Status(ErrorCode::kNoSuchBucket, "no such bucket");
  std::lock_guard key_lock(KeyLock(bucket, key));
  ObjectPtr current = FindLocked(bucket, key);
  AppendResult result;
  result.object = current;
  result.next_position = current ? current->size : 0;
  if (current && current->object_type != "Appendable") {
    result.outcome = AppendResult::Outcome::kNotAppendable;
    return result;
  }
  if (options.position != result.next_position) {
    result.outcome = AppendResult::Outcome::kPositionMismatch;
    return result;
  }
  if (options.max_size < result.next_position ||
      data.size() > options.max_size - result.next_position) {
    result.outcome = AppendResult::Outcome::kTooLarge;
    return result;
  }
  const uint64_t piece_crc =
      options.digests.crc64 ? *options.digests.crc64 : Crc64(0, data.data(), data.size());

  if (!current || current->size == 0) {
    // The first append: the object is created as a PUT creates one (a file renamed into place,
    // or memory for an unsafe key), with this request's content type and metadata.
    PutOptions put;
    put.content_type = options.content_type;
    put.user_meta = options.user_meta;
    put.object_type = "Appendable";
    put.etag = AppendableEtag(data.size(), piece_crc);
    put.digests.crc64 = piece_crc;
    std::vector<std::string> pieces;
    pieces.push_back(std::move(data));
    auto created = PutPiecesLocked(bucket, key, std::move(pieces), put);
    if (!created.ok()) return created.status();
    result.object = created.value();
    result.next_position = created.value()->size;
    return result;
  }

  auto old_crc = Crc(current);
  if (!old_crc.ok()) return old_crc.status();
  auto obj = std::make_shared<ObjectInfo>();
  obj->key = key;
  obj->size = current->size + data.size();
  obj->object_type = "Appendable";
  obj->content_type = current->content_type;
  obj->user_meta = current->user_meta;
  obj->known_crc = Crc64Combine(old_crc.value(), piece_crc, data.size());
  obj->etag = AppendableEtag(obj->size, *obj->known_crc);
  obj->mtime = NowSeconds();
  if (!current->disk_path.empty()) {
    // Grown in place, not rewritten: the bytes already there stay where they are, so a reader
    // already streaming them is undisturbed (one whose answer was decided before the append
    // but whose file is opened after it is reset by the session, as for any changed file).
    // The entry is replaced only once the file holds the new bytes.
    int fd = ::open(current->disk_path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return Status(ErrorCode::kInternal, "cannot open the object file to append");
    struct stat st {};
    if (::fstat(fd, &st) != 0 || st.st_ino != current->disk_ino ||
        static_cast<uint64_t>(st.st_size) != current->size) {
      ::close(fd);
      return Status(ErrorCode::kInternal, "the object file changed while appending");
    }
    bool ok = PwriteAll(fd, data, current->size) && ::fstat(fd, &st) == 0;
    if (!ok) {
      // Nothing of a failed append may remain: a retry must find the old length.
      if (::ftruncate(fd, static_cast<off_t>(current->size)) != 0) {
        ::close(fd);
        return Status(ErrorCode::kInternal, "append failed and could not be undone");
      }
      ::close(fd);
      return Status(ErrorCode::kInternal, "cannot write the appended bytes");
    }
    ::close(fd);
    obj->disk_path = current->disk_path;
    obj->disk_ino = st.st_ino;
    obj->disk_mtime_ns = MtimeNs(st);
    // The superseded version's cached copy would hold budget forever (the budget is never
    // returned otherwise); this version is cached again by its first reader.
    ReleaseCached(current);
  } else {
    auto joined = std::make_shared<std::string>();
    joined->reserve(obj->size);
    *joined += *current->blob;
    *joined += data;
    obj->blob = std::move(joined);
  }
  {
    std::unique_lock lock(mu_);
    auto b = buckets_.find(bucket);
    if (b == buckets_.end()) return Status(ErrorCode::kNoSuchBucket, "no such bucket");
    b->second[key] = obj;
  }
  result.object = obj;
  result.next_position = obj->size;
  return result;
}

Result<ObjectPtr> ObjectStore::PutSymlink(const std::string& bucket, const std::string& key,
                                          const std::string& target, const PutOptions& options) {
  if (!BucketExists(bucket)) return Status(ErrorCode::kNoSuchBucket, "no such bucket");
  std::lock_guard key_lock(KeyLock(bucket, key));
  ObjectPtr previous = FindLocked(bucket, key);
  if (options.forbid_overwrite && previous) {
    return Status(ErrorCode::kPreconditionFailed, "FileAlreadyExists");
  }
  auto obj = std::make_shared<ObjectInfo>();
  obj->key = key;
  obj->object_type = "Symlink";
  obj->symlink_target = target;
  obj->etag = Md5Hex(target);  // changes when the link is pointed elsewhere
  obj->content_type =
      options.content_type.empty() ? "application/octet-stream" : options.content_type;
  obj->user_meta = options.user_meta;
  obj->known_crc = 0;  // of no bytes
  obj->blob = std::make_shared<const std::string>();
  obj->mtime = NowSeconds();
  {
    std::unique_lock lock(mu_);
    auto b = buckets_.find(bucket);
    if (b == buckets_.end()) return Status(ErrorCode::kNoSuchBucket, "no such bucket");
    b->second[key] = obj;
  }
  // A file the key had must not be rediscovered once the link is deleted.
  if (previous && !previous->disk_path.empty()) ::unlink(previous->disk_path.c_str());
  return ObjectPtr(obj);
}

Result<ObjectPtr> ObjectStore::FollowSymlink(const std::string& bucket, const ObjectPtr& link) {
  ObjectPtr target = Find(bucket, link->symlink_target);
  if (!target || target->object_type == "Symlink") {
    return Status(ErrorCode::kNotFound,
                  "SymlinkTargetNotExist: The symlink target object does not exist.");
  }
  auto view = std::make_shared<ObjectInfo>();
  view->key = link->key;
  view->object_type = link->object_type;
  view->symlink_target = link->symlink_target;
  view->content_type = link->content_type;
  view->user_meta = link->user_meta;
  view->size = target->size;
  view->etag = target->etag;
  view->content_md5 = target->content_md5;
  view->mtime = std::max(link->mtime, target->mtime);
  // Where the bytes are, for streaming from disk (the session checks the file's identity).
  view->disk_path = target->disk_path;
  view->disk_ino = target->disk_ino;
  view->disk_mtime_ns = target->disk_mtime_ns;
  view->content_of = target;
  return ObjectPtr(std::move(view));
}

}  // namespace ossmount::testserver
