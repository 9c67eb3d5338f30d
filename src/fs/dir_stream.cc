#include "fs/dir_stream.h"

#include <algorithm>
#include <utility>

namespace ossmount::fs {

DirStream::DirStream(std::shared_ptr<ObjectClient> client, std::string list_prefix, int max_pages)
    : client_(std::move(client)),
      prefix_(std::move(list_prefix)),
      max_pages_(max_pages),
      guard_(prefix_, max_pages) {}

void DirStream::Read(uint64_t offset, size_t max, ReadCallback done) {
  std::vector<Delivery> out;
  bool fetch = false;
  {
    std::lock_guard lock(mu_);
    if (offset < base_) RestartLocked();
    Waiting w{offset, max, std::move(done)};
    if (!ServeLocked(w, out)) {
      waiting_.push_back(std::move(w));
      fetch = !fetching_;
      fetching_ = true;
    }
  }
  for (auto& [cb, r] : out) cb(std::move(r));
  if (fetch) FetchNext();
}

bool DirStream::ServeLocked(Waiting& w, std::vector<Delivery>& out) {
  const uint64_t end = base_ + window_.size();
  if (w.offset < end) {
    std::vector<meta::DirChild> entries;
    for (uint64_t i = w.offset; i < end && entries.size() < w.max; ++i) {
      entries.push_back(window_[static_cast<size_t>(i - base_)]);
    }
    out.emplace_back(std::move(w.done), std::move(entries));
    return true;
  }
  if (complete_) {
    out.emplace_back(std::move(w.done), std::vector<meta::DirChild>());  // the end
    return true;
  }
  return false;
}

void DirStream::RestartLocked() {
  window_.clear();
  base_ = 0;
  token_.clear();
  complete_ = false;
  held_back_.clear();
  guard_ = ListingGuard(prefix_, max_pages_);
  ++generation_;  // a page in flight belongs to the listing before
}

void DirStream::FetchNext() {
  ListRequest request;
  uint64_t generation = 0;
  {
    std::lock_guard lock(mu_);
    request.prefix = prefix_;
    request.delimiter = std::string(1, '/');
    request.continuation_token = token_;
    request.max_keys = 1000;
    generation = generation_;
  }
  client_->List(request, [self = shared_from_this(), generation](Result<ListPage> page) {
    self->OnPage(generation, std::move(page));
  });
}

void DirStream::OnPage(uint64_t generation, Result<ListPage> page) {
  std::vector<Delivery> out;
  bool more = false;
  {
    std::lock_guard lock(mu_);
    Status failed;
    if (generation == generation_) {
      failed = page.ok() ? guard_.Follow(*page) : page.status();
      if (failed.ok()) {
        AddPageLocked(*page);
        if (page->truncated) {
          token_ = page->next_continuation_token;
        } else {
          complete_ = true;
        }
      }
    }
    std::vector<Waiting> still;
    for (Waiting& w : waiting_) {
      if (!failed.ok()) {
        failed.Prefix("listing '" + prefix_ + "'");
        out.emplace_back(std::move(w.done), failed);
      } else if (!ServeLocked(w, out)) {
        still.push_back(std::move(w));
      }
    }
    waiting_ = std::move(still);
    more = !waiting_.empty();
    fetching_ = more;
  }
  for (auto& [cb, r] : out) cb(std::move(r));
  if (more) FetchNext();
}

void DirStream::AddPageLocked(const ListPage& page) {
  std::string last;  // the greatest key or common prefix on the page
  for (const ObjectInfo& o : page.objects) {
    if (o.key > last) last = o.key;
    if (o.key.size() <= prefix_.size() || o.key.compare(0, prefix_.size(), prefix_) != 0) {
      continue;  // the directory's own marker, or not under it
    }
    std::string name = o.key.substr(prefix_.size());
    if (!meta::ValidComponent(name)) continue;
    held_back_.push_back({std::move(name), meta::FileAttrFrom(o)});
  }
  std::vector<meta::DirChild> fresh;
  for (const std::string& cp : page.common_prefixes) {
    if (cp > last) last = cp;
    if (cp.size() <= prefix_.size() + 1 || cp.compare(0, prefix_.size(), prefix_) != 0 ||
        cp.back() != '/') {
      continue;
    }
    std::string name = cp.substr(prefix_.size(), cp.size() - prefix_.size() - 1);
    if (!meta::ValidComponent(name)) continue;
    // The directory hides a file of the same name.
    held_back_.erase(std::remove_if(held_back_.begin(), held_back_.end(),
                                    [&](const meta::DirChild& f) { return f.name == name; }),
                     held_back_.end());
    fresh.push_back({std::move(name), meta::DirAttr()});
  }
  // A file is settled once the listing is past where its directory ("name/") would sort.
  std::vector<meta::DirChild> still;
  for (meta::DirChild& f : held_back_) {
    if (!page.truncated || prefix_ + f.name + "/" <= last) {
      fresh.push_back(std::move(f));
    } else {
      still.push_back(std::move(f));
    }
  }
  held_back_ = std::move(still);
  std::sort(fresh.begin(), fresh.end(),
            [](const meta::DirChild& a, const meta::DirChild& b) { return a.name < b.name; });
  for (meta::DirChild& c : fresh) window_.push_back(std::move(c));
  while (window_.size() > kKeep) {
    window_.pop_front();
    ++base_;
  }
}

}  // namespace ossmount::fs
