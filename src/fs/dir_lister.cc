#include "fs/dir_lister.h"

#include <spdlog/spdlog.h>

#include "fs/listing_guard.h"

namespace ossmount::fs {

namespace {

struct ListState : std::enable_shared_from_this<ListState> {
  ListState(std::shared_ptr<ObjectClient> c, std::string p, ListingCallback d, KeepListing k,
            int max_pages, size_t max_bytes)
      : max_bytes(max_bytes),
        client(std::move(c)),
        prefix(p),
        guard(p, max_pages),
        builder(std::move(p)),
        done(std::move(d)),
        keep_going(std::move(k)) {}

  void FetchPage(std::string token) {
    ListRequest request{
        .prefix = prefix,
        .delimiter = std::string(1, '/'),  // not "/": a GCC 12 -Wrestrict false positive
        .continuation_token = token,
        .max_keys = 1000};
    client->List(request, [self = shared_from_this()](Result<ListPage> page) {
      self->OnPage(std::move(page));
    });
  }

  void OnPage(Result<ListPage> page) {
    if (!page.ok()) {
      Status s = page.status();
      s.Prefix("listing '" + prefix + "'");
      done(s);
      return;
    }
    if (Status follow = guard.Follow(*page); !follow.ok()) {
      spdlog::error("{}: the directory fails with EIO", follow.message());
      done(std::move(follow));
      return;
    }
    builder.AddPage(*page);
    if (builder.MemoryBytes() > max_bytes) {
      done(Status(ErrorCode::kTooBig, "listing '" + prefix + "' would hold more than " +
                                          std::to_string(max_bytes >> 20) +
                                          " MiB of names (half of --max-metadata-memory) after " +
                                          std::to_string(guard.pages()) +
                                          " pages: it is read page by page instead"));
      return;
    }
    if (page->truncated) {
      if (keep_going && !keep_going(guard.pages())) {
        done(Status(ErrorCode::kCancelled, "listing '" + prefix + "' stopped after " +
                                               std::to_string(guard.pages()) + " pages"));
        return;
      }
      FetchPage(page->next_continuation_token);
      return;
    }
    auto snapshot = std::make_shared<const meta::DirSnapshot>(builder.Finish(), builder.hidden());
    if (snapshot->hidden().total() > 0) {
      std::string examples;
      for (const auto& k : builder.hidden_examples()) {
        if (!examples.empty()) examples += ", ";
        // Keys are not secret, but may be long: enough to find them in the bucket.
        examples += "'" + (k.size() > 80 ? k.substr(0, 77) + "..." : k) + "'";
      }
      spdlog::info(
          "listing '{}': {} entries shown, {} keys hidden as invalid POSIX names (e.g. {}), {} "
          "files hidden by a directory of the same name",
          prefix, snapshot->size(), snapshot->hidden().invalid,
          examples.empty() ? "none" : examples, snapshot->hidden().clashes);
    }
    done(std::move(snapshot));
  }

  const size_t max_bytes;
  std::shared_ptr<ObjectClient> client;
  std::string prefix;
  ListingGuard guard;
  meta::DirectoryBuilder builder;
  ListingCallback done;
  KeepListing keep_going;
};

}  // namespace

void ListDirectory(std::shared_ptr<ObjectClient> client, std::string list_prefix,
                   ListingCallback done, KeepListing keep_going, int max_pages, size_t max_bytes) {
  auto state =
      std::make_shared<ListState>(std::move(client), std::move(list_prefix), std::move(done),
                                  std::move(keep_going), max_pages, max_bytes);
  state->FetchPage("");
}

}  // namespace ossmount::fs
