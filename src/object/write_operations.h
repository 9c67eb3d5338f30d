// The write operations of the OSS/S3 client (object_client_impl.cc forwards to these):
// each validates its arguments, builds the Operation (request, error context, 2xx check)
// and runs it through the retry loop (request_runner.h). The ObjectClient contract holds
// for every one: the handler is called exactly once, always posted to ctx->io.
//
// Retries: every write is retried as reads are (5xx, throttling, connection errors, CRC
// mismatches), because each is safe to repeat or repeated with care:
//   - PUT, UploadPart, UploadPartCopy, CopyObject, Delete and DeleteMultiple leave the same
//     state when sent twice;
//   - a retried CompleteMultipart answered NoSuchUpload (or a retried forbid-overwrite PUT
//     or Complete answered "already exists") may be refused because the first attempt,
//     whose answer was lost, succeeded: the key is HEADed and the object there compared
//     with the one sent (upload_verification.h) before the handler hears success or failure;
//   - AbortMultipart of an upload the server no longer knows succeeds.
// Known gap: a forbid-overwrite CopyObject whose answer was lost and whose retry is refused
// reports kAlreadyExists even when the object there is its own copy.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "object/client_context.h"

namespace ossmount::object {

void StartPut(std::shared_ptr<ClientContext> ctx, const std::string& key, SharedBytes body,
              const WriteOptions& options, PutHandler handler);
// Links (ObjectClient::PutSymlink, GetSymlink). A link's target is at most 1,023 bytes (the
// longest key), so GetSymlink's S3 body is read whole.
void StartPutSymlink(std::shared_ptr<ClientContext> ctx, const std::string& key,
                     const std::string& target, const WriteOptions& options, StatusHandler handler);
void StartGetSymlink(std::shared_ptr<ClientContext> ctx, const std::string& key,
                     TextHandler handler);
// AppendObject (ObjectClient::Append). OSS only.
void StartAppend(std::shared_ptr<ClientContext> ctx, const AppendRequest& request,
                 AppendHandler handler);
void StartInitiateMultipart(std::shared_ptr<ClientContext> ctx, const std::string& key,
                            const WriteOptions& options, InitiateHandler handler);
void StartUploadPart(std::shared_ptr<ClientContext> ctx, const std::string& key,
                     const std::string& upload_id, int part_number, SharedBytes body,
                     PartHandler handler);
void StartUploadPartCopy(std::shared_ptr<ClientContext> ctx, const std::string& key,
                         const std::string& upload_id, int part_number,
                         const std::string& source_key, const std::string& source_etag,
                         uint64_t offset, uint64_t length, PartHandler handler);
void StartCompleteMultipart(std::shared_ptr<ClientContext> ctx, const std::string& key,
                            const std::string& upload_id, std::vector<PartInfo> parts,
                            const WriteOptions& options, PutHandler handler);
void StartAbortMultipart(std::shared_ptr<ClientContext> ctx, const std::string& key,
                         const std::string& upload_id, StatusHandler handler);
void StartCopyObject(std::shared_ptr<ClientContext> ctx, const std::string& source_key,
                     const std::string& source_etag, const std::string& dest_key,
                     const WriteOptions& options, PutHandler handler);
void StartDelete(std::shared_ptr<ClientContext> ctx, const std::string& key, StatusHandler handler);
void StartDeleteMultiple(std::shared_ptr<ClientContext> ctx, std::vector<std::string> keys,
                         StatusHandler handler);

// ListMultipartUploads, all pages. A listing of more than kMaxUploadListPages pages, or more
// than kMaxUploadListBytes of replies, or whose markers do not advance, is kProtocol (a
// broken or hostile server would otherwise make it loop or grow without end).
inline constexpr int kMaxUploadListPages = 1000;
inline constexpr size_t kMaxUploadListBytes = 256u << 20;
void StartListMultipartUploads(std::shared_ptr<ClientContext> ctx, const std::string& prefix,
                               UploadsHandler handler);

}  // namespace ossmount::object
