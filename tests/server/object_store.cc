#include "object_store.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

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
  int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
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
  // Keep memory-only objects (they have no file to be rediscovered from).
  for (auto& [bucket, index] : buckets_) {
    auto dst = fresh.find(bucket);
    if (dst == fresh.end()) continue;
    for (auto& [key, obj] : index) {
      if (obj->disk_path.empty()) dst->second[key] = obj;
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

ObjectPtr ObjectStore::Find(const std::string& bucket, const std::string& key) {
  ObjectPtr current;
  {
    std::shared_lock lock(mu_);
    auto b = buckets_.find(bucket);
    if (b == buckets_.end()) return nullptr;
    auto it = b->second.find(key);
    if (it != b->second.end()) current = it->second;
  }
  if (current && current->disk_path.empty()) return current;
  // Disk-backed or unknown: consult the file system (new files appear without a rescan).
  if (!current && !KeyIsSafePath(key)) return nullptr;
  fs::path path = current ? fs::path(current->disk_path) : BucketDir(bucket) / key;
  auto fresh = StatDiskObject(key, path, current);
  if (!fresh.ok()) {
    if (current) Replace(bucket, key, nullptr);
    return nullptr;
  }
  if (fresh.value() != current) Replace(bucket, key, fresh.value());
  return fresh.value();
}

Result<std::shared_ptr<const std::string>> ObjectStore::LoadContent(const ObjectPtr& obj) {
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
  if (options.forbid_overwrite && Find(bucket, key)) {
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
  obj->mtime = std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());

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
          obj->disk_mtime_ns =
              static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
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
  ObjectPtr previous = Find(bucket, key);
  if (!previous) return false;
  {
    std::unique_lock lock(mu_);
    auto b = buckets_.find(bucket);
    if (b != buckets_.end()) b->second.erase(key);
  }
  if (!previous->disk_path.empty()) ::unlink(previous->disk_path.c_str());
  return true;
}

}  // namespace ossmount::testserver
