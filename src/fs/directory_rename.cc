#include "fs/directory_rename.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "upload/object_copy.h"

namespace ossmount::fs {
namespace {

// Every object under `prefix` (all pages), at most `limit` + 1 of them.
void ListAll(std::shared_ptr<ObjectClient> client, std::string prefix, size_t limit,
             std::function<void(Result<std::vector<ObjectInfo>>)> done,
             std::shared_ptr<std::vector<ObjectInfo>> so_far = nullptr, std::string token = "") {
  if (!so_far) so_far = std::make_shared<std::vector<ObjectInfo>>();
  ListRequest request;
  request.prefix = prefix;
  request.continuation_token = token;
  client->List(request, [client, prefix, limit, done = std::move(done), so_far,
                         token](Result<ListPage> page) mutable {
    if (!page.ok()) return done(page.status());
    for (auto& o : page->objects) so_far->push_back(std::move(o));
    if (so_far->size() > limit || !page->truncated || page->next_continuation_token.empty() ||
        page->next_continuation_token == token) {
      return done(std::move(*so_far));
    }
    ListAll(std::move(client), std::move(prefix), limit, std::move(done), so_far,
            page->next_continuation_token);
  });
}

// Whether the object at a copy's target is the source's: the same size, and the same ETag
// (a CopyObject keeps it) or, when the ETags differ (a copy of a multipart object), the same
// CRC-64 as the source has now.
void IsCopyOf(const std::shared_ptr<ObjectClient>& client, const ObjectInfo& source,
              const std::string& target, std::function<void(Result<bool>)> done) {
  client->Head(target, [client, source, done = std::move(done)](Result<ObjectInfo> found) {
    if (!found.ok()) {
      if (found.status().code() == ErrorCode::kNotFound) return done(false);
      return done(found.status());
    }
    if (found->size != source.size) return done(false);
    if (!source.etag.empty() && found->etag == source.etag) return done(true);
    if (!found->crc64) return done(false);
    client->Head(source.key, [crc = *found->crc64, done](Result<ObjectInfo> src) {
      if (!src.ok()) return done(src.status());
      done(src->crc64 && *src->crc64 == crc);
    });
  });
}

// One directory move in flight.
struct Mover : std::enable_shared_from_this<Mover> {
  std::shared_ptr<ObjectClient> client;
  std::shared_ptr<upload::UploadGate> gate;
  std::shared_ptr<upload::UploadJournal> journal;  // may be null
  upload::UploadOptions options;
  DirectoryMove move;
  std::function<void(Status)> done;

  std::mutex mu;  // guards the members below
  size_t pending = 0;
  Status first_error;
  std::vector<ObjectInfo> sources;   // every source, deleted at the end of a success
  std::vector<std::string> made;     // copies known complete
  std::vector<ObjectInfo> failed;    // sources whose copy failed: its target may exist
  std::vector<std::string> foreign;  // targets another client's object holds

  std::string TargetOf(const std::string& key) const {
    return move.to_prefix + key.substr(move.from_prefix.size());
  }

  void Start() {
    ListAll(client, move.from_prefix, move.limit,
            [self = shared_from_this()](Result<std::vector<ObjectInfo>> objects) {
              self->OnListed(std::move(objects));
            });
  }

  void OnListed(Result<std::vector<ObjectInfo>> objects) {
    if (!objects.ok()) return done(objects.status());
    if (objects->size() > move.limit) {
      spdlog::warn(
          "{} refused: the directory holds more than {} objects (--rename-dir-limit); "
          "copy it instead",
          move.what, move.limit);
      return done(
          Status(ErrorCode::kCrossDevice, move.what + ": more than " + std::to_string(move.limit) +
                                              " objects (--rename-dir-limit): copy it instead"));
    }
    sources = std::move(*objects);
    std::vector<ObjectInfo> to_copy;
    for (const ObjectInfo& o : sources) {
      // Onto an empty directory: its marker stays, the source's goes with the sources.
      if (move.target_marker && o.key == move.from_prefix) continue;
      to_copy.push_back(o);
    }
    if (to_copy.empty()) return Finish();
    pending = to_copy.size();
    for (const ObjectInfo& o : to_copy) Copy(o);
  }

  void Copy(const ObjectInfo& source) {
    WriteOptions never_replace;
    never_replace.forbid_overwrite = true;
    upload::CopyObjectOnServer(
        client, gate, journal, options, upload::CopySource{source.key, source.etag, source.size},
        TargetOf(source.key), never_replace,
        [self = shared_from_this(), source](Result<PutResult> r) {
          if (r.ok()) return self->Copied(source, Status::Ok());
          if (r.status().code() != ErrorCode::kAlreadyExists) {
            return self->Copied(source, r.status());
          }
          // Refused because the target exists: this rename's own copy, made by an attempt
          // whose answer was lost, or another client's object.
          const std::string target = self->TargetOf(source.key);
          IsCopyOf(self->client, source, target,
                   [self, source, target, refusal = r.status()](Result<bool> ours) {
                     if (ours.ok() && *ours) return self->Copied(source, Status::Ok());
                     if (ours.ok()) {
                       std::lock_guard lock(self->mu);
                       self->foreign.push_back(target);
                     }
                     self->Copied(source, refusal);
                   });
        });
  }

  void Copied(const ObjectInfo& source, Status s) {
    bool last = false;
    {
      std::lock_guard lock(mu);
      if (s.ok()) {
        made.push_back(TargetOf(source.key));
      } else {
        failed.push_back(source);
        if (first_error.ok()) first_error = s;
      }
      last = --pending == 0;
    }
    if (last) Finish();
  }

  void Finish() {
    if (!first_error.ok()) return Undo();
    std::vector<std::string> keys;
    keys.reserve(sources.size());
    for (const ObjectInfo& o : sources) keys.push_back(o.key);
    DeleteKeysLoggingFailures(
        client, std::move(keys), move.what + ": every object was copied; deleting the source",
        [self = shared_from_this()](Status deleted) {
          if (!deleted.ok()) {
            spdlog::error(
                "{}: every object was copied but not every source could be deleted "
                "({}); both trees exist",
                self->move.what, deleted.ToString());
          }
          self->done(deleted);
        });
  }

  // The rename failed: the copies it made go, and so do those it may have made.
  void Undo() {
    auto self = shared_from_this();
    auto remaining = std::make_shared<size_t>(failed.size());
    if (failed.empty()) return RemoveCopies();
    for (const ObjectInfo& source : failed) {
      const std::string target = TargetOf(source.key);
      const bool theirs = std::find(foreign.begin(), foreign.end(), target) != foreign.end();
      auto checked = [self, remaining, target](Result<bool> ours) {
        bool last = false;
        {
          std::lock_guard lock(self->mu);
          if (!ours.ok()) {
            spdlog::error(
                "{}: could not remove '{}', which a failed copy may have made: "
                "looking at it failed ({})",
                self->move.what, target, ours.status().ToString());
          } else if (*ours) {
            self->made.push_back(target);
          }
          last = --*remaining == 0;
        }
        if (last) self->RemoveCopies();
      };
      if (theirs) {
        checked(false);
      } else {
        IsCopyOf(client, source, target, std::move(checked));
      }
    }
  }

  void RemoveCopies() {
    const size_t count = made.size();
    DeleteKeysLoggingFailures(
        client, made, move.what + " failed; removing the copies it made",
        [self = shared_from_this(), count](Status removed) {
          if (removed.ok() && count > 0) {
            spdlog::info(
                "{} failed ({}); removed the {} copies it had made, the sources are "
                "untouched",
                self->move.what, self->first_error.message(), count);
          }
          self->done(self->first_error);
        });
  }
};

void DeleteEach(std::shared_ptr<ObjectClient> client,
                std::shared_ptr<std::vector<std::string>> keys, std::string what,
                std::function<void(Status)> done) {
  struct State {
    std::mutex mu;
    size_t pending = 0;
    Status first_error;
  };
  auto state = std::make_shared<State>();
  state->pending = keys->size();
  for (const std::string& key : *keys) {
    client->Delete(key, [state, key, what, done](Status s) {
      bool last = false;
      {
        std::lock_guard lock(state->mu);
        if (!s.ok()) {
          spdlog::error("{}: could not remove '{}': {}", what, key, s.ToString());
          if (state->first_error.ok()) state->first_error = s;
        }
        last = --state->pending == 0;
      }
      if (last) done(state->first_error);
    });
  }
}

}  // namespace

void DeleteKeysLoggingFailures(std::shared_ptr<ObjectClient> client, std::vector<std::string> keys,
                               std::string what, std::function<void(Status)> done) {
  if (keys.empty()) return done(Status::Ok());
  const size_t n = std::min<size_t>(keys.size(), 1000);
  auto batch = std::make_shared<std::vector<std::string>>(keys.end() - static_cast<ptrdiff_t>(n),
                                                          keys.end());
  keys.resize(keys.size() - n);
  client->DeleteMultiple(*batch, [client, batch, keys = std::move(keys), what,
                                  done = std::move(done)](Status s) mutable {
    auto next = [client, keys = std::move(keys), what, done](Status batch_status) mutable {
      DeleteKeysLoggingFailures(
          std::move(client), std::move(keys), what,
          [batch_status, done](Status rest) { done(batch_status.ok() ? rest : batch_status); });
    };
    if (s.ok()) return next(Status::Ok());
    // Which keys failed: one request each.
    DeleteEach(client, batch, what, std::move(next));
  });
}

void MoveDirectoryOnServer(std::shared_ptr<ObjectClient> client,
                           std::shared_ptr<upload::UploadGate> gate,
                           std::shared_ptr<upload::UploadJournal> journal,
                           const upload::UploadOptions& options, DirectoryMove move,
                           std::function<void(Status)> done) {
  auto mover = std::make_shared<Mover>();
  mover->client = std::move(client);
  mover->gate = std::move(gate);
  mover->journal = std::move(journal);
  mover->options = options;
  mover->move = std::move(move);
  mover->done = std::move(done);
  mover->Start();
}

}  // namespace ossmount::fs
