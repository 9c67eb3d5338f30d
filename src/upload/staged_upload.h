// UploadStagedFile: sends a staged file's bytes, start to end, through `upload` and completes
// it, so that a staged file goes up exactly as a streamed one does (parts, CRC-64 checks,
// the journal, forbid-overwrite, the memory budget's backpressure). `done` gets the
// completion's answer; a staged file that cannot be read fails the upload (which is aborted,
// so nothing partial appears).
//
// With `unchanged`, each whole part whose bytes all lie in unchanged.ranges (bytes equal to
// those of the object at the upload's key with unchanged.etag, at the same offsets) is
// copied on the server from that object instead of read and sent: a large file changed in
// place costs the parts it changed. Only files of two parts or more copy (a file of one part
// goes up with one PUT). `fetch` (may be null) runs before each part that is read from the
// file, so that its bytes are there.
//
// Thread-safety: a free function; `done` runs once, on a client completion thread or the
// calling one.
#pragma once

#include <boost/icl/interval_set.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "upload/object_upload.h"
#include "upload/staging_area.h"

namespace ossmount::upload {

using ByteRanges = boost::icl::interval_set<uint64_t>;

struct UnchangedBytes {
  std::string etag;   // the object at the upload's key that the file was loaded from
  ByteRanges ranges;  // [start, end) ranges of the file that still hold its bytes
};

// Makes bytes [begin, end) of the file local, then calls back (a file that fetches the
// bytes of the object it was opened on only where they are needed).
using FetchBytes =
    std::function<void(uint64_t begin, uint64_t end, std::function<void(Status)> fetched)>;

void UploadStagedFile(std::shared_ptr<StagedFile> file, std::shared_ptr<ObjectUpload> upload,
                      std::optional<UnchangedBytes> unchanged, FetchBytes fetch,
                      std::function<void(Result<UploadedObject>)> done);

}  // namespace ossmount::upload
