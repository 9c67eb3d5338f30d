#include "meta/manifest_client.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <mutex>
#include <unordered_map>

#include "ossmount/forwarding_object_client.h"

namespace ossmount::meta {

namespace {

// What one HEAD taught about an entry the manifest left incomplete.
struct Learned {
  bool missing = false;  // 404: not in the bucket, left out of listings
  uint64_t size = 0;
  std::string etag;  // quoted, as the server sent it
  int64_t mtime_sec = 0;
  std::optional<uint64_t> crc64;
};

class ManifestObjectClient : public ForwardingObjectClient,
                             public std::enable_shared_from_this<ManifestObjectClient> {
 public:
  ManifestObjectClient(boost::asio::io_context& io, std::shared_ptr<ObjectClient> inner,
                       std::shared_ptr<const ManifestIndex> index, ManifestClientOptions options)
      : ForwardingObjectClient(std::move(inner)),
        io_(io),
        index_(std::move(index)),
        options_(std::move(options)) {}

  void List(const ListRequest& request, ListHandler handler) override;
  void Head(const std::string& key, HeadHandler handler) override {
    if (!Relative(key) || !index_->Find(*Relative(key))) {
      return Post(
          std::move(handler),
          Result<ObjectInfo>(Status(ErrorCode::kNotFound, "'" + key + "' is not in the manifest")));
    }
    inner()->Head(key, std::move(handler));
  }

 private:
  // The page being completed by HEADs.
  struct PendingPage {
    ListPage page;
    std::vector<size_t> entries;  // index entry of page.objects[i]
    std::vector<bool> drop;       // page.objects[i] turned out missing
    size_t outstanding = 0;
    Status failure;
    ListHandler handler;
    std::mutex mu;  // guards drop, outstanding, failure and page.objects
  };

  std::optional<std::string_view> Relative(std::string_view key) const {
    const std::string& p = options_.mount_prefix;
    if (key.size() < p.size() || key.compare(0, p.size(), p) != 0) return std::nullopt;
    return key.substr(p.size());
  }

  template <typename H, typename R>
  void Post(H handler, R result) {
    boost::asio::post(
        io_, [h = std::move(handler), r = std::move(result)]() mutable { h(std::move(r)); });
  }

  // Fills `info` from what the manifest or an earlier HEAD says. False when a HEAD is needed.
  bool Describe(size_t entry, ObjectInfo* info, bool* missing) const;
  void OnHead(const std::shared_ptr<PendingPage>& pending, size_t slot, size_t entry,
              Result<ObjectInfo> r);
  void Finish(const std::shared_ptr<PendingPage>& pending);

  boost::asio::io_context& io_;
  const std::shared_ptr<const ManifestIndex> index_;
  const ManifestClientOptions options_;
  // learned_mu_ (a leaf lock) guards learned_: entries completed by a HEAD.
  mutable std::mutex learned_mu_;
  std::unordered_map<size_t, Learned> learned_;
};

bool ManifestObjectClient::Describe(size_t entry, ObjectInfo* info, bool* missing) const {
  ManifestIndex::Entry e = index_->at(entry);
  info->key = options_.mount_prefix;
  info->key.append(e.key);
  *missing = false;
  if (e.complete()) {
    info->size = e.size;
    info->etag.clear();  // not `= "\""`: a GCC 12 -Wrestrict false positive
    info->etag.reserve(e.etag.size() + 2);
    info->etag.push_back('"');
    info->etag.append(e.etag);
    info->etag.push_back('"');
    info->mtime_sec = options_.mtime_sec;
    return true;
  }
  std::lock_guard lock(learned_mu_);
  auto it = learned_.find(entry);
  if (it == learned_.end()) return false;
  *missing = it->second.missing;
  info->size = it->second.size;
  info->etag = it->second.etag;
  info->mtime_sec = it->second.mtime_sec;
  info->crc64 = it->second.crc64;
  return true;
}

void ManifestObjectClient::List(const ListRequest& request, ListHandler handler) {
  auto pending = std::make_shared<PendingPage>();
  pending->handler = std::move(handler);
  std::optional<std::string_view> prefix = Relative(request.prefix);
  if (!prefix) return Post(std::move(pending->handler), Result<ListPage>(ListPage{}));

  ManifestIndex::Page page =
      index_->List(*prefix, request.delimiter, request.continuation_token, request.max_keys);
  pending->page.truncated = page.truncated;
  pending->page.next_continuation_token = std::move(page.next_token);
  pending->page.common_prefixes.reserve(page.prefixes.size());
  for (const std::string& p : page.prefixes) {
    pending->page.common_prefixes.push_back(options_.mount_prefix + p);
  }
  pending->page.objects.resize(page.objects.size());
  pending->entries = page.objects;
  pending->drop.assign(page.objects.size(), false);
  std::vector<size_t> to_head;
  for (size_t i = 0; i < page.objects.size(); ++i) {
    bool missing = false;
    if (!Describe(page.objects[i], &pending->page.objects[i], &missing)) {
      to_head.push_back(i);
    } else if (missing) {
      pending->drop[i] = true;
    }
  }
  if (to_head.empty()) return Finish(pending);
  pending->outstanding = to_head.size();
  for (size_t slot : to_head) {
    size_t entry = page.objects[slot];
    inner()->Head(pending->page.objects[slot].key,
                  [self = shared_from_this(), pending, slot, entry](Result<ObjectInfo> r) {
                    self->OnHead(pending, slot, entry, std::move(r));
                  });
  }
}

void ManifestObjectClient::OnHead(const std::shared_ptr<PendingPage>& pending, size_t slot,
                                  size_t entry, Result<ObjectInfo> r) {
  Learned learned;
  bool record = true;
  if (r.ok()) {
    ManifestIndex::Entry e = index_->at(entry);
    if (e.size != ManifestIndex::kUnknownSize && e.size != r->size) {
      spdlog::warn("manifest: '{}{}' is {} bytes, not {} as the manifest says; showing {}",
                   options_.mount_prefix, e.key, r->size, e.size, r->size);
    }
    learned.size = r->size;
    learned.etag = r->etag;
    learned.mtime_sec = r->mtime_sec;
    learned.crc64 = r->crc64;
  } else if (r.status().code() == ErrorCode::kNotFound) {
    learned.missing = true;
    spdlog::info("manifest: '{}{}' is not in the bucket; it is not shown", options_.mount_prefix,
                 index_->at(entry).key);
  } else {
    record = false;
  }
  if (record) {
    std::lock_guard lock(learned_mu_);
    learned_.emplace(entry, learned);
  }
  bool last;
  {
    std::lock_guard lock(pending->mu);
    if (record) {
      ObjectInfo& info = pending->page.objects[slot];
      info.size = learned.size;
      info.etag = learned.etag;
      info.mtime_sec = learned.mtime_sec;
      info.crc64 = learned.crc64;
      pending->drop[slot] = learned.missing;
    } else if (pending->failure.ok()) {
      pending->failure = r.status();
      pending->failure.Prefix("HEAD of manifest entry '" + pending->page.objects[slot].key + "'");
    }
    last = --pending->outstanding == 0;
  }
  if (last) Finish(pending);
}

void ManifestObjectClient::Finish(const std::shared_ptr<PendingPage>& pending) {
  if (!pending->failure.ok()) {
    return Post(std::move(pending->handler), Result<ListPage>(pending->failure));
  }
  ListPage out;
  out.truncated = pending->page.truncated;
  out.next_continuation_token = std::move(pending->page.next_continuation_token);
  out.common_prefixes = std::move(pending->page.common_prefixes);
  out.objects.reserve(pending->page.objects.size());
  for (size_t i = 0; i < pending->page.objects.size(); ++i) {
    if (!pending->drop[i]) out.objects.push_back(std::move(pending->page.objects[i]));
  }
  Post(std::move(pending->handler), Result<ListPage>(std::move(out)));
}

}  // namespace

std::shared_ptr<ObjectClient> MakeManifestObjectClient(boost::asio::io_context& io,
                                                       std::shared_ptr<ObjectClient> inner,
                                                       std::shared_ptr<const ManifestIndex> index,
                                                       ManifestClientOptions options) {
  return std::make_shared<ManifestObjectClient>(io, std::move(inner), std::move(index),
                                                std::move(options));
}

}  // namespace ossmount::meta
