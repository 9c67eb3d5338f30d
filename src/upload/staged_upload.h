// UploadStagedFile: sends a staged file's bytes, start to end, through `upload` and completes
// it, so that a staged file goes up exactly as a streamed one does (parts, CRC-64 checks,
// the journal, forbid-overwrite, the memory budget's backpressure). `done` gets the
// completion's answer; a staged file that cannot be read fails the upload (which is aborted,
// so nothing partial appears).
//
// Thread-safety: a free function; `done` runs once, on a client completion thread or the
// calling one.
#pragma once

#include <functional>
#include <memory>

#include "upload/object_upload.h"
#include "upload/staging_area.h"

namespace ossmount::upload {

void UploadStagedFile(std::shared_ptr<StagedFile> file, std::shared_ptr<ObjectUpload> upload,
                      std::function<void(Result<UploadedObject>)> done);

}  // namespace ossmount::upload
