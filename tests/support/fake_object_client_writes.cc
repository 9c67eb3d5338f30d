// FakeObjectClient's write operations: PUT, multipart uploads, copies and deletes, with the
// service's rules (fake_object_client.h says which).
#include <algorithm>

#include "common/crc64.h"
#include "support/fake_object_client.h"

namespace ossmount::testing {
namespace {

RequestRecord Record(Op op, const std::string& key) {
  RequestRecord r;
  r.op = op;
  r.key = key;
  return r;
}

Status ServiceError(ErrorCode code, int http, const std::string& service_code,
                    const std::string& message) {
  Status s(code, message);
  s.WithService({http, service_code, "fake-request-id", "", message});
  return s;
}

Status NoSuchUpload(const std::string& upload_id) {
  return ServiceError(ErrorCode::kNotFound, 404, "NoSuchUpload",
                      "The specified upload does not exist: " + upload_id);
}

Status InvalidPart(const std::string& code, const std::string& message) {
  return ServiceError(ErrorCode::kInvalidArgument, 400, code, message);
}

}  // namespace

PutResult FakeObjectClient::StoreLocked(const std::string& key, std::string data) {
  Object obj;
  obj.crc64 = Crc64(0, data.data(), data.size());
  obj.data = std::move(data);
  obj.etag = NewEtagLocked();
  obj.mtime_sec = next_mtime_++;
  PutResult result{obj.etag, obj.crc64};
  objects_[key] = std::move(obj);
  return result;
}

Status FakeObjectClient::CheckOverwriteLocked(const std::string& key,
                                              const WriteOptions& options) const {
  if (!options.forbid_overwrite || objects_.count(key) == 0) return Status::Ok();
  return ServiceError(ErrorCode::kAlreadyExists, 409, "FileAlreadyExists",
                      "The object you specified already exists and can not be overwritten: " + key);
}

Result<const FakeObjectClient::Object*> FakeObjectClient::CopySourceLocked(
    const std::string& key, const std::string& if_match) const {
  auto it = objects_.find(key);
  if (it == objects_.end()) {
    return ServiceError(ErrorCode::kNotFound, 404, "NoSuchKey",
                        "The specified key does not exist: " + key);
  }
  if (!if_match.empty() && if_match != it->second.etag) {
    return ServiceError(ErrorCode::kPreconditionFailed, 412, "PreconditionFailed",
                        "At least one of the pre-conditions you specified did not hold.");
  }
  return &it->second;
}

void FakeObjectClient::Put(const std::string& key, SharedBytes body, const WriteOptions& options,
                           PutHandler handler) {
  Result<PutResult> result = Status(ErrorCode::kInternal, "unset");
  {
    std::lock_guard lock(mu_);
    RequestRecord record = Record(Op::kPut, key);
    record.forbid_overwrite = options.forbid_overwrite;
    RecordLocked(std::move(record));
    Status exists = CheckOverwriteLocked(key, options);
    if (!exists.ok()) {
      result = exists;
    } else {
      result = StoreLocked(key, std::string(body.view()));
    }
  }
  Finish([handler = std::move(handler), result]() { handler(result); });
}

void FakeObjectClient::InitiateMultipart(const std::string& key, InitiateHandler handler) {
  std::string id;
  {
    std::lock_guard lock(mu_);
    RecordLocked(Record(Op::kInitiate, key));
    id = "upload-" + std::to_string(next_etag_++);
    Upload upload;
    upload.key = key;
    upload.initiated_sec = next_mtime_++;
    uploads_[id] = std::move(upload);
  }
  Finish([handler = std::move(handler), id]() { handler(id); });
}

void FakeObjectClient::UploadPart(const std::string& key, const std::string& upload_id,
                                  int part_number, SharedBytes body, PartHandler handler) {
  Result<PartInfo> result = NoSuchUpload(upload_id);
  {
    std::lock_guard lock(mu_);
    RequestRecord record = Record(Op::kUploadPart, key);
    record.upload_id = upload_id;
    record.part_number = part_number;
    RecordLocked(std::move(record));
    auto it = uploads_.find(upload_id);
    if (part_number < 1 || part_number > 10000) {
      result = InvalidPart("InvalidArgument", "Part number must be 1..10000");
    } else if (it != uploads_.end() && it->second.key == key) {
      Part part{std::string(body.view()), NewEtagLocked()};
      PartInfo info;
      info.part_number = part_number;
      info.etag = part.etag;
      info.size = part.data.size();
      info.crc64 = Crc64(0, part.data.data(), part.data.size());
      it->second.parts[part_number] = std::move(part);
      result = info;
    }
  }
  Finish([handler = std::move(handler), result]() { handler(result); });
}

void FakeObjectClient::UploadPartCopy(const std::string& key, const std::string& upload_id,
                                      int part_number, const std::string& source_key,
                                      const std::string& source_etag, uint64_t offset,
                                      uint64_t length, PartHandler handler) {
  Result<PartInfo> result = NoSuchUpload(upload_id);
  {
    std::lock_guard lock(mu_);
    RequestRecord record = Record(Op::kUploadPartCopy, key);
    record.upload_id = upload_id;
    record.part_number = part_number;
    record.source_key = source_key;
    record.offset = offset;
    record.length = length;
    record.if_match = source_etag;
    RecordLocked(std::move(record));
    auto it = uploads_.find(upload_id);
    auto source = CopySourceLocked(source_key, source_etag);
    if (it == uploads_.end() || it->second.key != key) {
      // NoSuchUpload, as initialised
    } else if (!source.ok()) {
      result = source.status();
    } else if (length == 0 || offset >= (*source)->data.size() ||
               length > (*source)->data.size() - offset) {
      result = ServiceError(ErrorCode::kInvalidRange, 416, "InvalidRange",
                            "The requested range cannot be satisfied.");
    } else {
      Part part{(*source)->data.substr(offset, length), NewEtagLocked()};
      PartInfo info;
      info.part_number = part_number;
      info.etag = part.etag;
      info.size = part.data.size();
      if (report_crc64_) info.crc64 = Crc64(0, part.data.data(), part.data.size());
      it->second.parts[part_number] = std::move(part);
      result = info;
    }
  }
  Finish([handler = std::move(handler), result]() { handler(result); });
}

void FakeObjectClient::CompleteMultipart(const std::string& key, const std::string& upload_id,
                                         std::vector<PartInfo> parts, const WriteOptions& options,
                                         PutHandler handler) {
  Result<PutResult> result = NoSuchUpload(upload_id);
  {
    std::lock_guard lock(mu_);
    RequestRecord record = Record(Op::kComplete, key);
    record.upload_id = upload_id;
    record.forbid_overwrite = options.forbid_overwrite;
    RecordLocked(std::move(record));
    auto it = uploads_.find(upload_id);
    if (it != uploads_.end() && it->second.key == key) {
      Status problem;
      std::string data;
      if (parts.empty()) problem = InvalidPart("InvalidArgument", "no parts");
      for (size_t i = 1; problem.ok() && i < parts.size(); ++i) {
        if (parts[i].part_number <= parts[i - 1].part_number) {
          problem =
              InvalidPart("InvalidPartOrder", "The list of parts was not in ascending order.");
        }
      }
      for (size_t i = 0; problem.ok() && i < parts.size(); ++i) {
        const PartInfo& p = parts[i];
        auto part = it->second.parts.find(p.part_number);
        if (part == it->second.parts.end() || part->second.etag != p.etag) {
          problem = InvalidPart("InvalidPart", "Part " + std::to_string(p.part_number) +
                                                   " was not uploaded with ETag " + p.etag);
        } else if (i + 1 < parts.size() && part->second.data.size() < min_part_size_) {
          problem = InvalidPart("EntityTooSmall", "Part " + std::to_string(p.part_number) +
                                                      " is smaller than the minimum part size.");
        } else {
          data += part->second.data;
        }
      }
      if (problem.ok()) problem = CheckOverwriteLocked(key, options);
      if (!problem.ok()) {
        result = problem;
      } else {
        result = StoreLocked(key, std::move(data));
        uploads_.erase(it);
      }
    }
  }
  Finish([handler = std::move(handler), result]() { handler(result); });
}

void FakeObjectClient::AbortMultipart(const std::string& key, const std::string& upload_id,
                                      StatusHandler handler) {
  {
    std::lock_guard lock(mu_);
    RequestRecord record = Record(Op::kAbort, key);
    record.upload_id = upload_id;
    RecordLocked(std::move(record));
    uploads_.erase(upload_id);  // an unknown upload: nothing left to abort, success
  }
  Finish([handler = std::move(handler)]() { handler(Status::Ok()); });
}

void FakeObjectClient::ListMultipartUploads(const std::string& prefix, UploadsHandler handler) {
  std::vector<OpenUpload> open;
  {
    std::lock_guard lock(mu_);
    RecordLocked(Record(Op::kListUploads, prefix));
    for (const auto& [id, upload] : uploads_) {
      if (upload.key.compare(0, prefix.size(), prefix) == 0) {
        open.push_back({upload.key, id, upload.initiated_sec});
      }
    }
  }
  std::stable_sort(open.begin(), open.end(), [](const OpenUpload& a, const OpenUpload& b) {
    return a.initiated_sec < b.initiated_sec;
  });
  Finish([handler = std::move(handler), open = std::move(open)]() { handler(open); });
}

void FakeObjectClient::CopyObject(const std::string& source_key, const std::string& source_etag,
                                  const std::string& dest_key, const WriteOptions& options,
                                  PutHandler handler) {
  Result<PutResult> result = Status(ErrorCode::kInternal, "unset");
  {
    std::lock_guard lock(mu_);
    RequestRecord record = Record(Op::kCopy, dest_key);
    record.source_key = source_key;
    record.if_match = source_etag;
    record.forbid_overwrite = options.forbid_overwrite;
    RecordLocked(std::move(record));
    auto source = CopySourceLocked(source_key, source_etag);
    Status exists = CheckOverwriteLocked(dest_key, options);
    if (!source.ok()) {
      result = source.status();
    } else if (!exists.ok()) {
      result = exists;
    } else {
      result = StoreLocked(dest_key, (*source)->data);
    }
  }
  Finish([handler = std::move(handler), result]() { handler(result); });
}

void FakeObjectClient::Delete(const std::string& key, StatusHandler handler) {
  {
    std::lock_guard lock(mu_);
    RecordLocked(Record(Op::kDelete, key));
    objects_.erase(key);
  }
  Finish([handler = std::move(handler)]() { handler(Status::Ok()); });
}

void FakeObjectClient::DeleteMultiple(std::vector<std::string> keys, StatusHandler handler) {
  Status status;
  {
    std::lock_guard lock(mu_);
    RequestRecord record = Record(Op::kDeleteMultiple, keys.empty() ? "" : keys.front());
    record.keys = keys;
    RecordLocked(std::move(record));
    if (keys.size() > 1000) {
      status = Status(ErrorCode::kInvalidArgument, "DeleteMultiple: at most 1000 keys");
    } else {
      for (const std::string& key : keys) objects_.erase(key);
    }
  }
  Finish([handler = std::move(handler), status]() { handler(status); });
}

}  // namespace ossmount::testing
