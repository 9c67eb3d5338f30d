#include "multipart.h"

#include <openssl/evp.h>

#include <random>

#include "common/crc64.h"

namespace ossmount::testserver {

namespace {
Status NoSuchUpload() {
  return Status(ErrorCode::kNotFound,
                "NoSuchUpload: The specified upload does not exist. The upload ID may be invalid, "
                "or the upload may have been aborted or completed.");
}

std::string Unquote(std::string s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

std::string MultipartUploads::Initiate(const std::string& bucket, const std::string& key,
                                       PutOptions options) {
  std::lock_guard lock(mu_);
  std::random_device rd;
  unsigned char bytes[16];
  for (auto& b : bytes) b = static_cast<unsigned char>(rd());
  std::string id = HexUpper(bytes, 16) + std::to_string(next_id_++);
  options.object_type = "Multipart";
  uploads_[id] = Upload{bucket, key, std::move(options), {}};
  return id;
}

Result<std::pair<std::string, uint64_t>> MultipartUploads::UploadPart(const std::string& upload_id,
                                                                      const std::string& bucket,
                                                                      const std::string& key,
                                                                      int part_number,
                                                                      std::string data) {
  if (part_number < 1 || part_number > 10000) {
    return Status(
        ErrorCode::kInvalidArgument,
        "InvalidArgument: Part number must be an integer between 1 and 10000, inclusive.");
  }
  UploadedPart part;
  part.etag = Md5Hex(data);
  part.crc = Crc64(0, data.data(), data.size());
  part.data = std::move(data);
  std::pair<std::string, uint64_t> result{part.etag, part.crc};
  std::lock_guard lock(mu_);
  auto it = uploads_.find(upload_id);
  if (it == uploads_.end() || it->second.bucket != bucket || it->second.key != key) {
    return NoSuchUpload();
  }
  it->second.parts[part_number] = std::move(part);
  return result;
}

Result<CompletedUpload> MultipartUploads::Complete(
    const std::string& upload_id, const std::string& bucket, const std::string& key,
    const std::vector<std::pair<int, std::string>>& parts, uint64_t min_part_size) {
  std::lock_guard lock(mu_);
  auto it = uploads_.find(upload_id);
  if (it == uploads_.end() || it->second.bucket != bucket || it->second.key != key) {
    return NoSuchUpload();
  }
  Upload& upload = it->second;
  if (parts.empty()) {
    return Status(ErrorCode::kInvalidArgument,
                  "InvalidArgument: The XML you provided did not list any part.");
  }
  CompletedUpload done;
  std::string md5s;
  int previous = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    auto [number, etag] = parts[i];
    if (number <= previous) {
      return Status(ErrorCode::kInvalidArgument,
                    "InvalidPartOrder: The list of parts was not in ascending order.");
    }
    previous = number;
    auto p = upload.parts.find(number);
    if (p == upload.parts.end() || Unquote(etag) != p->second.etag) {
      return Status(ErrorCode::kInvalidArgument,
                    "InvalidPart: One or more of the specified parts could not be found or the "
                    "specified entity tag might not have matched the part's entity tag.");
    }
    if (i + 1 < parts.size() && p->second.data.size() < min_part_size) {
      return Status(
          ErrorCode::kInvalidArgument,
          "EntityTooSmall: Your proposed upload is smaller than the minimum allowed size.");
    }
  }
  for (const auto& [number, etag] : parts) {
    const UploadedPart& p = upload.parts[number];
    done.crc = Crc64Combine(done.crc, p.crc, p.data.size());
    done.data += p.data;
    for (size_t i = 0; i < p.etag.size(); i += 2) {
      md5s += static_cast<char>(std::stoi(p.etag.substr(i, 2), nullptr, 16));
    }
  }
  unsigned char md[16];
  unsigned int len = 0;
  EVP_Digest(md5s.data(), md5s.size(), md, &len, EVP_md5(), nullptr);
  done.etag = HexUpper(md, 16) + "-" + std::to_string(parts.size());
  done.options = std::move(upload.options);
  done.options.etag = done.etag;
  uploads_.erase(it);
  return done;
}

Status MultipartUploads::Abort(const std::string& upload_id, const std::string& bucket,
                               const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = uploads_.find(upload_id);
  if (it == uploads_.end() || it->second.bucket != bucket || it->second.key != key) {
    return NoSuchUpload();
  }
  uploads_.erase(it);
  return Status::Ok();
}

}  // namespace ossmount::testserver
