// ObjectFilesystem: what the next daemon process on the same FUSE connection needs of this
// one (object_filesystem.h, "Outliving the daemon process").
#include <spdlog/spdlog.h>

#include "fs/object_filesystem.h"
#include "fs/open_files.h"

namespace ossmount::fs {

void ObjectFilesystem::RecordSession(std::unique_ptr<RecordLog> nodes,
                                     std::shared_ptr<HandleRecords> handles,
                                     std::shared_ptr<meta::ListingRecords> listings) {
  inodes_.RecordTo(std::move(nodes));
  if (listings) listings_->cache().KeepListingsIn(std::move(listings));
  handle_records_ = handles;
  writes_->RecordHandles(std::move(handles));
}

Status ObjectFilesystem::record_error() const {
  if (Status st = inodes_.record_error(); !st.ok()) return st;
  return handle_records_ ? handle_records_->error() : Status::Ok();
}

ObjectFilesystem::RestoredSession ObjectFilesystem::RestoreSession(
    const RecordLog::Records& nodes, const std::map<uint64_t, HandleRecord>& handles,
    const std::vector<meta::ListingRecords::Restored>& listings) {
  RestoredSession restored;
  restored.nodes = inodes_.Restore(nodes);
  for (const meta::ListingRecords::Restored& listing : listings) {
    listings_->cache().RestoreListing(listing.dir_path, listing.listing, listing.expiry);
  }
  restored.listings = listings_->cache().listing_count();
  std::vector<uint64_t> lost;
  uint64_t next = 1;
  for (const auto& [fh, record] : handles) {
    switch (record.kind) {
      case HandleRecord::Kind::kWrite:
        lost.push_back(fh);
        ++restored.lost_writers;
        continue;
      case HandleRecord::Kind::kDirectory:
        dir_handles_.Insert(fh, std::make_shared<DirHandle>(record.ino, record.path));
        ++restored.dir_handles;
        break;
      case HandleRecord::Kind::kRead: {
        meta::NodeAttr attr;
        attr.size = record.size;
        attr.mtime_sec = record.mtime_sec;
        attr.etag = record.etag;
        attr.crc64 = record.crc64;
        attr.appendable = record.appendable;
        // The version it opened, as before: a reader keeps the same bytes.
        open_files_->BeginRead(record.ino,
                               {VersionFingerprint(attr), record.size, record.mtime_sec});
        std::shared_ptr<ReadHandle> handle = NewReadHandle(record.ino, record.path, attr);
        handle->read_notified = true;  // the prefetcher passed it in the process before
        Files().open_handles.Add(1);
        read_handles_.Insert(fh, std::move(handle));
        ++restored.read_handles;
        break;
      }
    }
    next = std::max(next, fh + 1);
  }
  next_fh_.store(std::max(next_fh_.load(), next));
  writes_->RestoreLost(lost);
  return restored;
}

}  // namespace ossmount::fs
