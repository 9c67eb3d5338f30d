#include "multipart.h"

#include <openssl/evp.h>

#include <algorithm>
#include <random>
#include <tuple>

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
  uploads_[id] = Upload{bucket, key, std::move(options), std::chrono::system_clock::now(), {}};
  return id;
}

bool MultipartUploads::IsOpen(const std::string& upload_id, const std::string& bucket,
                              const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = uploads_.find(upload_id);
  return it != uploads_.end() && it->second.bucket == bucket && it->second.key == key;
}

Result<std::pair<std::string, uint64_t>> MultipartUploads::UploadPart(
    const std::string& upload_id, const std::string& bucket, const std::string& key,
    int part_number, std::string data, const KnownDigests& known) {
  if (part_number < 1 || part_number > 10000) {
    return Status(
        ErrorCode::kInvalidArgument,
        "InvalidArgument: Part number must be an integer between 1 and 10000, inclusive.");
  }
  UploadedPart part;
  const Md5Digest md5 = known.md5 ? *known.md5 : Md5Raw(data);
  part.etag = HexUpper(md5.data(), md5.size());
  part.crc = known.crc64 ? *known.crc64 : Crc64(0, data.data(), data.size());
  part.data = std::move(data);
  part.mtime = std::chrono::system_clock::now();
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
  std::unique_lock lock(mu_);
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
  // Whole-list checks first, in this order, so the answer does not depend on which part
  // happens to be looked at first: order, then existence and ETags, then sizes.
  int previous = 0;
  for (const auto& [number, etag] : parts) {
    if (number <= previous) {
      return Status(ErrorCode::kInvalidArgument,
                    "InvalidPartOrder: The list of parts was not in ascending order.");
    }
    previous = number;
  }
  for (const auto& [number, etag] : parts) {
    auto p = upload.parts.find(number);
    if (p == upload.parts.end() || Unquote(etag) != p->second.etag) {
      return Status(ErrorCode::kInvalidArgument,
                    "InvalidPart: One or more of the specified parts could not be found or the "
                    "specified entity tag might not have matched the part's entity tag.");
    }
  }
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (upload.parts[parts[i].first].data.size() < min_part_size) {
      return Status(
          ErrorCode::kInvalidArgument,
          "EntityTooSmall: Your proposed upload is smaller than the minimum allowed size.");
    }
  }
  // Valid: the upload is consumed. Its parts are moved out, never copied (a checkpoint can be
  // gigabytes).
  auto node = uploads_.extract(it);
  lock.unlock();
  Upload& taken = node.mapped();
  done.pieces.reserve(parts.size());
  for (const auto& [number, etag] : parts) {
    UploadedPart& p = taken.parts[number];
    done.crc = Crc64Combine(done.crc, p.crc, p.data.size());
    done.pieces.push_back(std::move(p.data));
    for (size_t i = 0; i < p.etag.size(); i += 2) {
      md5s += static_cast<char>(std::stoi(p.etag.substr(i, 2), nullptr, 16));
    }
  }
  unsigned char md[16];
  unsigned int len = 0;
  EVP_Digest(md5s.data(), md5s.size(), md, &len, EVP_md5(), nullptr);
  done.etag = HexUpper(md, 16) + "-" + std::to_string(parts.size());
  done.options = std::move(taken.options);
  done.options.etag = done.etag;
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

UploadSummary MultipartUploads::Summarize(const std::string& id, const Upload& u) {
  UploadSummary s{u.bucket, u.key, id, u.initiated, u.parts.size(), 0};
  for (const auto& [number, part] : u.parts) s.bytes += part.data.size();
  return s;
}

UploadListPage MultipartUploads::List(const std::string& bucket,
                                      const UploadListQuery& query) const {
  std::vector<UploadSummary> matching;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, u] : uploads_) {
      if (u.bucket != bucket || u.key.compare(0, query.prefix.size(), query.prefix) != 0) continue;
      if (!query.key_marker.empty()) {
        if (u.key < query.key_marker) continue;
        if (u.key == query.key_marker &&
            (query.upload_id_marker.empty() || id <= query.upload_id_marker)) {
          continue;
        }
      }
      matching.push_back(Summarize(id, u));
    }
  }
  std::sort(matching.begin(), matching.end(), [](const auto& a, const auto& b) {
    return std::tie(a.key, a.upload_id) < std::tie(b.key, b.upload_id);
  });
  UploadListPage page;
  const size_t max = static_cast<size_t>(std::max(0, query.max_uploads));
  if (matching.size() > max) {
    matching.resize(max);
    page.truncated = true;
    if (!matching.empty()) {
      page.next_key_marker = matching.back().key;
      page.next_upload_id_marker = matching.back().upload_id;
    }
  }
  page.uploads = std::move(matching);
  return page;
}

Result<PartListPage> MultipartUploads::ListParts(const std::string& upload_id,
                                                 const std::string& bucket, const std::string& key,
                                                 int marker, int max_parts) const {
  std::lock_guard lock(mu_);
  auto it = uploads_.find(upload_id);
  if (it == uploads_.end() || it->second.bucket != bucket || it->second.key != key) {
    return NoSuchUpload();
  }
  PartListPage page;
  for (auto p = it->second.parts.upper_bound(marker); p != it->second.parts.end(); ++p) {
    if (static_cast<int>(page.parts.size()) >= max_parts) {
      page.truncated = true;
      page.next_marker = page.parts.empty() ? marker : page.parts.back().number;
      break;
    }
    page.parts.push_back(
        {p->first, p->second.etag, p->second.data.size(), p->second.crc, p->second.mtime});
  }
  return page;
}

std::vector<UploadSummary> MultipartUploads::All() const {
  std::lock_guard lock(mu_);
  std::vector<UploadSummary> out;
  for (const auto& [id, u] : uploads_) out.push_back(Summarize(id, u));
  return out;
}

size_t MultipartUploads::open_count() const {
  std::lock_guard lock(mu_);
  return uploads_.size();
}

}  // namespace ossmount::testserver
