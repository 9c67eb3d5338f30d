// CopyObjectOnServer: a server-side copy of one object (rename). Objects up to
// UploadOptions::copy_object_limit are copied with one CopyObject; larger ones with a
// multipart upload of UploadPartCopy parts (copy_part_size each, through the UploadGate's
// cap on parts in flight), pinned to the source's etag so that a source changed half-way
// fails the copy instead of mixing versions. A failed multipart copy is aborted: nothing
// appears at the destination. The source is never touched. write_options.user_meta, when set,
// replaces the source's metadata (a copy onto itself changes only that). A multipart copy is
// recorded in `journal` (may be null) while it is open, as an upload is, so that a daemon
// killed mid-copy leaves nothing the next mount does not abort.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "ossmount/object_client.h"
#include "upload/upload_gate.h"
#include "upload/upload_journal.h"
#include "upload/upload_options.h"

namespace ossmount::upload {

struct CopySource {
  std::string key;
  std::string etag;  // quoted; "" = whatever version is there
  uint64_t size = 0;
};

void CopyObjectOnServer(std::shared_ptr<ObjectClient> client, std::shared_ptr<UploadGate> gate,
                        std::shared_ptr<UploadJournal> journal, const UploadOptions& options,
                        CopySource source, std::string dest_key, WriteOptions write_options,
                        std::function<void(Result<PutResult>)> done);

}  // namespace ossmount::upload
