#include "fs/dir_lister.h"

#include <spdlog/spdlog.h>

namespace ossmount::fs {

namespace {

struct ListState : std::enable_shared_from_this<ListState> {
  ListState(std::shared_ptr<ObjectClient> c, std::string p, ListingCallback d, KeepListing k)
      : client(std::move(c)),
        prefix(p),
        builder(std::move(p)),
        done(std::move(d)),
        keep_going(std::move(k)) {}

  void FetchPage(std::string token) {
    ListRequest request{
        .prefix = prefix,
        .delimiter = std::string(1, '/'),  // not "/": a GCC 12 -Wrestrict false positive
        .continuation_token = token,
        .max_keys = 1000};
    ++pages;
    client->List(request, [self = shared_from_this(), token](Result<ListPage> page) {
      self->OnPage(token, std::move(page));
    });
  }

  void OnPage(const std::string& token, Result<ListPage> page) {
    if (!page.ok()) {
      Status s = page.status();
      s.Prefix("listing '" + prefix + "'");
      done(s);
      return;
    }
    builder.AddPage(*page);
    if (page->truncated) {
      if (page->next_continuation_token.empty() || page->next_continuation_token == token) {
        done(Status(ErrorCode::kProtocol, "listing '" + prefix +
                                              "': truncated page without a new continuation "
                                              "token"));
        return;
      }
      if (keep_going && !keep_going(pages)) {
        done(Status(ErrorCode::kCancelled,
                    "listing '" + prefix + "' stopped after " + std::to_string(pages) + " pages"));
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

  std::shared_ptr<ObjectClient> client;
  std::string prefix;
  meta::DirectoryBuilder builder;
  ListingCallback done;
  KeepListing keep_going;
  int pages = 0;
};

}  // namespace

void ListDirectory(std::shared_ptr<ObjectClient> client, std::string list_prefix,
                   ListingCallback done, KeepListing keep_going) {
  auto state = std::make_shared<ListState>(std::move(client), std::move(list_prefix),
                                           std::move(done), std::move(keep_going));
  state->FetchPage("");
}

}  // namespace ossmount::fs
