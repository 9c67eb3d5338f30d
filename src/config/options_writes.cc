// Writing options: --allow-writes and its restrictions, upload part size and concurrency,
// the directory-rename cap, the upload journal, the staging directory and appends ->
// MountConfig::fs.writes (the directories' defaults and the protocol's part limits:
// CheckAcrossGroups). Each default is fs::WritePolicy's, shown in the help from there.
#include <string>

#include "config/option_group.h"
#include "config/option_values.h"
#include "fs/fs_options.h"

namespace ossmount::config {
namespace {

class WritesGroup final : public OptionGroup {
 public:
  void Define(OptionDefiner& d) override {
    d.SetHeading(kWritesHeading);
    d.Flag("--allow-writes", allow_writes_,
           "Let programs write files (uploaded while written, complete at close or fsync), make "
           "and remove directories, delete and rename (default: read-only)");
    d.Flag("--no-delete", no_delete_,
           "With --allow-writes: refuse unlink, rmdir and rename (EACCES)");
    d.Flag("--no-overwrite", no_overwrite_,
           "With --allow-writes: refuse to replace an existing object (EACCES at open, EEXIST at "
           "close if another client created it meanwhile)");
    d.Value("--upload-part-size", part_size_,
            "Part size of the multipart upload of a written file; it doubles every 1,000 parts "
            "(default " +
                part_size_ + ")");
    d.Value("--upload-concurrency", concurrency_,
            "Parts uploaded at once across all files being written (default " + concurrency_ + ")");
    d.Value("--rename-dir-limit", rename_dir_limit_,
            "A directory rename copies at most this many objects; beyond it, it fails with "
            "EXDEV (mv then copies) (default " +
                rename_dir_limit_ + ")");
    d.Value("--upload-journal", journal_,
            "Directory where open multipart uploads are recorded, so that the next mount aborts "
            "those a crash left (default: CACHE/uploads with --cache, /var/lib/ossmount/uploads "
            "as root, else ~/.local/state/ossmount/uploads; '' = no record)");
    d.Value("--staging-dir", staging_dir_,
            "Directory where files written out of order, read back, truncated or changed in "
            "place are staged until they are uploaded (default: CACHE/staging with --cache, "
            "/var/lib/ossmount/staging as root, else ~/.local/state/ossmount/staging; '' = "
            "none: such writes fail with ENOTSUP)");
    d.Value("--append-interval", append_interval_,
            "A new file opened with O_APPEND (a log) becomes an appendable object on OSS, and "
            "what is written to it is appended at most this long after (500ms, 2s...), so other "
            "readers see it grow; 'off': such files are uploaded at close like others (default " +
                append_interval_ + ")");
    d.Value("--max-stream-copy", max_stream_copy_,
            "A file streamed as it is written keeps a local copy in the staging directory while "
            "it is at most this large, so that a write behind its end (HDF5, zipfile) can move "
            "it to staging; a larger one's out-of-order write fails with ENOTSUP; 0 = no copy "
            "(default " +
                max_stream_copy_ + ")");
    d.Value("--max-staging-size", max_staging_size_,
            "Bytes all staged files may take together; a write past it fails with ENOSPC "
            "(default " +
                max_staging_size_ + ")");
  }

  Status Validate(const OptionContext& ctx, MountConfig& c) const override {
    fs::WritePolicy& w = c.fs.writes;
    w.enabled = allow_writes_;
    if (!allow_writes_) {
      for (const char* option :
           {"--no-delete", "--no-overwrite", "--upload-part-size", "--upload-concurrency",
            "--rename-dir-limit", "--upload-journal", "--staging-dir", "--max-staging-size",
            "--append-interval", "--max-stream-copy"}) {
        if (ctx.given(option)) {
          return InvalidOption(std::string(option) + " applies to writes: add --allow-writes");
        }
      }
    }
    w.allow_delete = !no_delete_;
    w.allow_overwrite = !no_overwrite_;
    auto part = ParseSize("--upload-part-size", part_size_);
    if (!part.ok()) return part.status();
    if (*part < (100ull << 10) || *part > (5ull << 30)) {
      return InvalidOption("--upload-part-size " + part_size_ +
                           ": give a size from 100KiB to 5GiB (the service's part limits)");
    }
    w.upload.part_size = *part;
    auto concurrency = ParseInteger("--upload-concurrency", concurrency_, 1, 1024);
    if (!concurrency.ok()) return concurrency.status();
    w.upload.max_parts_in_flight = static_cast<int>(*concurrency);
    auto limit = ParseInteger("--rename-dir-limit", rename_dir_limit_, 0, 1000000);
    if (!limit.ok()) return limit.status();
    w.rename_dir_limit = static_cast<size_t>(*limit);
    w.upload.journal_dir = journal_;
    w.staging_dir = staging_dir_;
    auto staging = ParseSize("--max-staging-size", max_staging_size_);
    if (!staging.ok()) return staging.status();
    w.max_staging_size = *staging;
    auto stream_copy = ParseSize("--max-stream-copy", max_stream_copy_);
    if (!stream_copy.ok()) return stream_copy.status();
    w.max_stream_copy = *stream_copy;
    if (append_interval_ == "off") {
      w.append_interval.reset();
    } else {
      auto interval = ParseDuration("--append-interval", append_interval_);
      if (!interval.ok()) return interval.status();
      if (interval->count() < 10 || *interval > std::chrono::hours(1)) {
        return InvalidOption("--append-interval " + append_interval_ +
                             ": give a duration from 10ms to 1h, or off");
      }
      w.append_interval = *interval;
    }
    return Status::Ok();
  }

 private:
  bool allow_writes_ = false, no_delete_ = false, no_overwrite_ = false;
  const fs::WritePolicy defaults_{};
  std::string part_size_ = SizeText(defaults_.upload.part_size);
  std::string concurrency_ = std::to_string(defaults_.upload.max_parts_in_flight);
  std::string rename_dir_limit_ = std::to_string(defaults_.rename_dir_limit);
  std::string max_staging_size_ = SizeText(defaults_.max_staging_size);
  std::string max_stream_copy_ = SizeText(defaults_.max_stream_copy);
  std::string append_interval_ = std::to_string(defaults_.append_interval->count()) + "ms";
  std::string journal_, staging_dir_;
};

}  // namespace

std::unique_ptr<OptionGroup> MakeWritesGroup() { return std::make_unique<WritesGroup>(); }

}  // namespace ossmount::config
