// Filesystem options: metadata TTLs, listings, the small-file threshold, ownership and
// modes, manifests -> MountConfig::fs, ::manifest and ::manifest_key (the prefix comes from
// the source; --list-ahead's cap: CheckAcrossGroups).
#include <unistd.h>

#include <cctype>
#include <string>

#include "config/option_group.h"

namespace ossmount::config {
namespace {

// For --manifest oss://BUCKET/KEY or s3://BUCKET/KEY (scheme in any case): KEY, after checking
// that BUCKET is the mounted one (the mount's endpoint and credentials read it) and that KEY
// names an object. "" for anything else, which is a local file's path.
Result<std::string> ManifestObjectKey(const std::string& text, const std::string& bucket) {
  std::string lower = text.substr(0, 6);
  for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  size_t scheme = 0;
  if (lower.rfind("oss://", 0) == 0) scheme = 6;
  if (lower.rfind("s3://", 0) == 0) scheme = 5;
  if (scheme == 0) return std::string();
  const size_t slash = text.find('/', scheme);
  const std::string named =
      text.substr(scheme, slash == std::string::npos ? slash : slash - scheme);
  const std::string key = slash == std::string::npos ? "" : text.substr(slash + 1);
  if (named.empty() || key.empty() || key.back() == '/') {
    return InvalidOption("--manifest " + text +
                         ": a manifest in the bucket is given as oss://BUCKET/KEY (or s3://), "
                         "KEY being the full key of one object");
  }
  if (named != bucket) {
    return InvalidOption("--manifest " + text + ": the manifest must be an object of the " +
                         "mounted bucket '" + bucket + "' (it is read with the mount's " +
                         "endpoint and credentials), not of '" + named + "'");
  }
  if (key.size() > 1023) {
    return InvalidOption("--manifest " + text + ": the key is longer than 1023 bytes");
  }
  return key;
}

class FilesystemGroup final : public OptionGroup {
 public:
  void Define(OptionDefiner& d) override {
    d.SetHeading(kFilesystemHeading);
    d.Value("--metadata-ttl", metadata_ttl_,
            "How long listings and attributes stay valid: indefinite, SECONDS, or 0 "
            "(default 60)");
    d.Value("--list-ahead", list_ahead_,
            "When a program walks the tree, list up to N of the next directories in the "
            "background before it enters them (default 64, 0 = off)");
    d.Value("--max-list-pages", max_list_pages_,
            "A listing (a directory's, or a warm-up's) that goes past N pages of up to 1,000 "
            "keys fails with EIO (default 100000)");
    d.Value("--max-metadata-memory", max_metadata_memory_,
            "Listings, cached names and inodes together; the least recently used go past it, "
            "and a directory larger than half of it is read page by page (default 512MiB)");
    d.Value("--negative-metadata-ttl", negative_metadata_ttl_,
            "How long 'no such file' stays cached, SECONDS (default 5)");
    d.Value("--small-file-threshold", small_file_threshold_,
            "Objects up to this size are fetched whole on first read (default 8MiB)");
    d.Value("--uid", uid_, "Owner of every file (default: the daemon's user)");
    d.Value("--gid", gid_, "Group of every file (default: the daemon's group)");
    d.Value("--file-mode", file_mode_, "Permission bits of files, octal (default 0444)");
    d.Value("--dir-mode", dir_mode_, "Permission bits of directories, octal (default 0555)");
    d.Flag("--posix-metadata", posix_metadata_,
           "Read each file's and directory's mode, owner and time from its user metadata (one "
           "HEAD each, as ossfs and s3fs store them) and, with --allow-writes, store chmod, "
           "chown, utime and user.* extended attributes there (default off: those calls succeed "
           "without effect, setfattr is ENOTSUP, and listings cost no HEAD)");
    d.Value("--manifest", manifest_,
            "File listing the objects to show (KEY<TAB>SIZE[<TAB>ETAG[<TAB>LABEL]] or "
            "'KEY [LABEL]' per line, keys relative to the mounted prefix): the bucket "
            "is never listed and nothing else is visible. oss://BUCKET/KEY (or s3://) reads "
            "it from that object of the mounted bucket instead of a local file");
  }

  Status Validate(const OptionContext& ctx, MountConfig& c) const override {
    fs::FsOptions& fso = c.fs;
    auto ttl = ParseTtl("--metadata-ttl", metadata_ttl_);
    if (!ttl.ok()) return ttl.status();
    fso.metadata_ttl = *ttl;
    auto list_ahead = ParseInteger("--list-ahead", list_ahead_, 0, 4096);
    if (!list_ahead.ok()) return list_ahead.status();
    fso.list_ahead = static_cast<size_t>(*list_ahead);
    auto max_list_pages = ParseInteger("--max-list-pages", max_list_pages_, 1, 100000000);
    if (!max_list_pages.ok()) return max_list_pages.status();
    fso.max_list_pages = static_cast<int>(*max_list_pages);
    auto max_metadata = ParseSize("--max-metadata-memory", max_metadata_memory_);
    if (!max_metadata.ok()) return max_metadata.status();
    if (*max_metadata < (16ull << 20))
      return InvalidOption("--max-metadata-memory: at least 16MiB");
    fso.max_metadata_memory = *max_metadata;
    auto neg = ParseDuration("--negative-metadata-ttl", negative_metadata_ttl_);
    if (!neg.ok()) return neg.status();
    fso.negative_ttl = *neg;
    auto small = ParseSize("--small-file-threshold", small_file_threshold_);
    if (!small.ok()) return small.status();
    fso.small_file_threshold = *small;

    fso.uid = static_cast<uint32_t>(geteuid());
    fso.gid = static_cast<uint32_t>(getegid());
    if (ctx.given("--uid")) {
      auto v = ParseInteger("--uid", uid_, 0, 4294967294LL);
      if (!v.ok()) return v.status();
      fso.uid = static_cast<uint32_t>(*v);
    }
    if (ctx.given("--gid")) {
      auto v = ParseInteger("--gid", gid_, 0, 4294967294LL);
      if (!v.ok()) return v.status();
      fso.gid = static_cast<uint32_t>(*v);
    }
    if (ctx.given("--file-mode")) {
      auto v = ParseOctalMode("--file-mode", file_mode_);
      if (!v.ok()) return v.status();
      fso.file_mode = *v;
    }
    if (ctx.given("--dir-mode")) {
      auto v = ParseOctalMode("--dir-mode", dir_mode_);
      if (!v.ok()) return v.status();
      fso.dir_mode = *v;
    }

    fso.posix_metadata = posix_metadata_;
    if (ctx.given("--manifest")) {
      if (manifest_.empty()) return InvalidOption("--manifest: give the path of a manifest file");
      c.manifest = manifest_;
      auto key = ManifestObjectKey(manifest_, c.client.bucket);
      if (!key.ok()) return key.status();
      c.manifest_key = *key;
    }
    return Status::Ok();
  }

 private:
  std::string metadata_ttl_ = "60", negative_metadata_ttl_ = "5", small_file_threshold_ = "8MiB";
  std::string list_ahead_ = "64", max_list_pages_ = "100000", max_metadata_memory_ = "512MiB";
  std::string uid_, gid_, file_mode_, dir_mode_;
  std::string manifest_;
  bool posix_metadata_ = false;
};

}  // namespace

std::unique_ptr<OptionGroup> MakeFilesystemGroup() { return std::make_unique<FilesystemGroup>(); }

}  // namespace ossmount::config
