#include "accelerator.h"

#include <strings.h>

#include "api_util.h"
#include "common/crc64.h"
#include "common/time_util.h"

namespace ossmount::testserver {

namespace {

const std::string* ReplyHeader(const OriginReply& reply, std::string_view name) {
  for (const auto& [n, v] : reply.headers) {
    if (n.size() == name.size() && ::strncasecmp(n.data(), name.data(), n.size()) == 0) return &v;
  }
  return nullptr;
}

std::string Unquoted(const std::string& etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    return etag.substr(1, etag.size() - 2);
  }
  return etag;
}

}  // namespace

Result<ObjectPtr> ObjectFromOriginReply(const std::string& key, OriginReply reply) {
  const std::string* etag = ReplyHeader(reply, "ETag");
  if (etag == nullptr || etag->empty()) {
    return Status(ErrorCode::kProtocol, "the origin's answer has no ETag");
  }
  if (const std::string* length = ReplyHeader(reply, "Content-Length");
      length != nullptr && *length != std::to_string(reply.body.size())) {
    return Status(ErrorCode::kIntegrity,
                  "the origin's body length differs from its Content-Length");
  }
  auto obj = std::make_shared<ObjectInfo>();
  obj->key = key;
  obj->size = reply.body.size();
  obj->etag = Unquoted(*etag);
  if (const std::string* crc = ReplyHeader(reply, "x-oss-hash-crc64ecma")) {
    try {
      obj->known_crc = std::stoull(*crc);
    } catch (const std::exception&) {
      return Status(ErrorCode::kProtocol, "the origin's CRC-64 header is not a number");
    }
    // A body that does not match the origin's own checksum is never kept: clients would
    // verify it against the same header and fail.
    if (*obj->known_crc != Crc64(0, reply.body.data(), reply.body.size())) {
      return Status(ErrorCode::kIntegrity, "the origin's body does not match its CRC-64");
    }
  } else {
    obj->known_crc = Crc64(0, reply.body.data(), reply.body.size());
  }
  if (const std::string* modified = ReplyHeader(reply, "Last-Modified")) {
    auto secs = ParseRfc1123(*modified);
    if (secs.ok()) {
      auto t = SystemTimeFromUnix(secs.value());
      if (t.ok()) obj->mtime = t.value();
    }
  }
  if (const std::string* type = ReplyHeader(reply, "Content-Type")) obj->content_type = *type;
  if (const std::string* type = ReplyHeader(reply, "x-oss-object-type")) obj->object_type = *type;
  if (const std::string* md5 = ReplyHeader(reply, "Content-MD5")) obj->content_md5 = *md5;
  for (const auto& [name, value] : reply.headers) {
    static constexpr std::string_view kMeta = "x-oss-meta-";
    if (name.size() > kMeta.size() && ::strncasecmp(name.data(), kMeta.data(), kMeta.size()) == 0) {
      std::string lower = name.substr(kMeta.size());
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      obj->user_meta.emplace_back(std::move(lower), value);
    }
  }
  obj->blob = std::make_shared<const std::string>(std::move(reply.body));
  return ObjectPtr(std::move(obj));
}

void Accelerator::Get(const std::string& bucket, const std::string& key,
                      const std::string& if_match, Done done) {
  std::string name = bucket + "\n" + key;
  ObjectPtr hit;
  {
    std::lock_guard lock(mu_);
    auto it = held_.find(name);
    if (it != held_.end() && (if_match.empty() || EtagListMatches(if_match, it->second->etag))) {
      hit = it->second;
    } else {
      auto [waiters, first] = in_flight_.try_emplace(name);
      waiters->second.push_back(std::move(done));
      if (!first) {
        merged_.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      misses_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (hit) {
    hits_.fetch_add(1, std::memory_order_relaxed);
    done(std::move(hit));
    return;
  }
  origin_.Fetch(bucket, key, [this, name, key](Result<OriginReply> reply) {
    if (!reply.ok()) return Complete(name, reply.status());
    if (reply.value().status == 404) return Complete(name, ObjectPtr());
    if (reply.value().status != 200) {
      return Complete(name,
                      Status(ErrorCode::kServerError,
                             "the origin answered HTTP " + std::to_string(reply.value().status)));
    }
    Complete(name, ObjectFromOriginReply(key, std::move(reply.value())));
  });
}

void Accelerator::Complete(const std::string& name, const Result<ObjectPtr>& result) {
  std::vector<Done> waiters;
  {
    std::lock_guard lock(mu_);
    auto it = in_flight_.find(name);
    if (it != in_flight_.end()) {
      waiters = std::move(it->second);
      in_flight_.erase(it);
    }
    if (!result.ok()) {
      origin_errors_.fetch_add(1, std::memory_order_relaxed);
    } else if (!result.value()) {
      origin_missing_.fetch_add(1, std::memory_order_relaxed);
    } else {
      const ObjectPtr& obj = result.value();
      auto old = held_.find(name);
      const uint64_t freed = old == held_.end() ? 0 : old->second->size;
      if (held_bytes_ - freed + obj->size <= budget_) {
        held_bytes_ = held_bytes_ - freed + obj->size;
        held_[name] = obj;
      } else {
        uncached_.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  for (auto& w : waiters) w(result);
}

AcceleratorCounts Accelerator::counts() const {
  AcceleratorCounts c;
  c.hits = hits_.load(std::memory_order_relaxed);
  c.misses = misses_.load(std::memory_order_relaxed);
  c.merged = merged_.load(std::memory_order_relaxed);
  c.origin_errors = origin_errors_.load(std::memory_order_relaxed);
  c.origin_missing = origin_missing_.load(std::memory_order_relaxed);
  c.uncached = uncached_.load(std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  c.cached_objects = held_.size();
  c.cached_bytes = held_bytes_;
  return c;
}

void Accelerator::ResetCounts() {
  for (auto* a : {&hits_, &misses_, &merged_, &origin_errors_, &origin_missing_, &uncached_}) {
    a->store(0);
  }
}

void Accelerator::Drop() {
  std::lock_guard lock(mu_);
  held_.clear();
  held_bytes_ = 0;
}

std::string Accelerator::ToJson() const {
  const AcceleratorCounts c = counts();
  return "{\"hits\":" + std::to_string(c.hits) + ",\"misses\":" + std::to_string(c.misses) +
         ",\"merged\":" + std::to_string(c.merged) +
         ",\"origin_errors\":" + std::to_string(c.origin_errors) +
         ",\"origin_missing\":" + std::to_string(c.origin_missing) +
         ",\"uncached\":" + std::to_string(c.uncached) +
         ",\"cached_objects\":" + std::to_string(c.cached_objects) +
         ",\"cached_bytes\":" + std::to_string(c.cached_bytes) + "}";
}

}  // namespace ossmount::testserver
