// Manifest files (--manifest FILE): the list of objects a mount shows, read instead of
// listing the bucket. The exact format is in docs/CONFIGURATION.md ("Manifest files");
// in short, one object per line, UTF-8, '\n' or "\r\n" line ends:
//
//   KEY<TAB>SIZE[<TAB>ETAG[<TAB>LABEL]]   ossmount's form: tab-separated; keys may hold spaces
//   KEY[ LABEL]                           the OSS Connector for AI/ML's from_manifest_file
//                                         example form: no tab, key and optional label
//                                         separated by spaces; size and etag unknown
//
//   - KEY is relative to the mounted prefix ("train/cls/img.jpg" under oss://b/imagenet/
//     is the object imagenet/train/cls/img.jpg), or an absolute URI oss://BUCKET/FULL/KEY
//     (also s3://), which must name the mounted bucket and lie under the mounted prefix.
//   - SIZE: decimal bytes. ETAG: as a listing shows it, with or without the quotes; an
//     empty field means none. LABEL: any text; ignored by the mount.
//   - Empty (or all-blank) lines and lines starting with '#' are skipped; a UTF-8 byte
//     order mark before line 1 is skipped.
//   - Keys the mount cannot show as paths ('a//b', '../x', a leading '/') are kept and
//     hidden by the same rules as in a listing (meta/key_mapping.h), never mangled.
//
// Errors: every malformed line is reported with its line number and what is wrong; the
// message lists the first kMaxReportedErrors and counts the rest. A manifest with errors,
// or with no entries, is rejected whole (kInvalidArgument): a mount never shows part of one.
//
// Thread-safety: pure functions (LoadManifestFile reads the file).
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <string_view>

#include "meta/manifest_index.h"
#include "ossmount/status.h"

namespace ossmount::meta {

constexpr size_t kMaxReportedErrors = 20;
// OSS and S3 keys are at most 1023 bytes (mount prefix included).
constexpr size_t kMaxKeyBytes = 1023;
constexpr size_t kMaxEtagBytes = 256;

// What absolute keys are checked against, and what relative keys are relative to.
struct ManifestScope {
  std::string bucket;
  std::string mount_prefix;  // "" or ending in '/'
};

struct ManifestStats {
  uint64_t lines = 0;
  uint64_t entries = 0;
  uint64_t without_size = 0;  // connector form: size learned by HEAD
  uint64_t without_etag = 0;  // etag learned by HEAD
};

// Parses a manifest read from `in`; `name` (the file name) starts every error message.
Result<ManifestIndex> ParseManifest(std::istream& in, std::string_view name,
                                    const ManifestScope& scope, ManifestStats* stats = nullptr);

struct LoadedManifest {
  std::shared_ptr<const ManifestIndex> index;
  int64_t mtime_sec = 0;  // the file's mtime: the mtime of every entry the manifest describes
  ManifestStats stats;
};

// Opens, parses and indexes a manifest file. Errors name the file.
Result<LoadedManifest> LoadManifestFile(const std::string& path, const ManifestScope& scope);

}  // namespace ossmount::meta
