#include "upload/object_copy.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace ossmount::upload {
namespace {

// One multipart copy: parts go out through the gate; the first failure aborts the upload.
struct PartCopy : std::enable_shared_from_this<PartCopy> {
  std::shared_ptr<ObjectClient> client;
  std::shared_ptr<UploadGate> gate;
  std::shared_ptr<UploadJournal> journal;  // may be null
  CopySource source;
  std::string dest;
  WriteOptions write_options;
  uint64_t part_size = 0;
  std::function<void(Result<PutResult>)> done;

  std::string upload_id;
  std::mutex mu;  // guards the members below
  int outstanding = 0;
  Status error;
  std::map<int, PartInfo> parts;

  void Start() {
    client->InitiateMultipartWith(dest, write_options,
                                  [self = shared_from_this()](Result<std::string> id) {
                                    if (!id.ok()) return self->done(id.status());
                                    self->upload_id = *id;
                                    if (self->journal) {
                                      Status recorded = self->journal->Add(self->dest, *id);
                                      if (!recorded.ok()) {
                                        recorded.Prefix("cannot record the copy to '" + self->dest +
                                                        "' in the upload journal");
                                        return self->Abandon(recorded);
                                      }
                                    }
                                    self->SendAll();
                                  });
  }

  void SendAll() {
    const int count = static_cast<int>((source.size + part_size - 1) / part_size);
    {
      std::lock_guard lock(mu);
      outstanding = count;
    }
    for (int i = 0; i < count; ++i) {
      const uint64_t offset = static_cast<uint64_t>(i) * part_size;
      const uint64_t length = std::min(part_size, source.size - offset);
      gate->Submit([self = shared_from_this(), number = i + 1, offset, length] {
        self->client->UploadPartCopy(self->dest, self->upload_id, number, self->source.key,
                                     self->source.etag, offset, length,
                                     [self, number, length](Result<PartInfo> r) {
                                       self->gate->PartEnded();
                                       self->OnPart(number, length, std::move(r));
                                     });
      });
    }
  }

  void OnPart(int number, uint64_t length, Result<PartInfo> r) {
    bool last = false;
    {
      std::lock_guard lock(mu);
      if (r.ok()) {
        PartInfo info = std::move(*r);
        info.part_number = number;
        info.size = length;
        parts[number] = std::move(info);
      } else if (error.ok()) {
        error = r.status();
      }
      last = --outstanding == 0;
    }
    if (!last) return;
    if (!error.ok()) return Abandon(error);
    std::vector<PartInfo> ordered;
    for (auto& [n, info] : parts) ordered.push_back(info);
    client->CompleteMultipart(dest, upload_id, std::move(ordered), write_options,
                              [self = shared_from_this()](Result<PutResult> r) {
                                if (!r.ok()) return self->Abandon(r.status());
                                if (self->journal) self->journal->Remove(self->upload_id);
                                self->done(std::move(r));
                              });
  }

  void Abandon(Status why) {
    client->AbortMultipart(dest, upload_id, [journal = journal, id = upload_id](Status s) {
      // An abort that failed stays recorded: the next mount with the journal retries it.
      if (s.ok() && journal) journal->Remove(id);
    });
    done(std::move(why));
  }
};

}  // namespace

void CopyObjectOnServer(std::shared_ptr<ObjectClient> client, std::shared_ptr<UploadGate> gate,
                        std::shared_ptr<UploadJournal> journal, const UploadOptions& options,
                        CopySource source, std::string dest_key, WriteOptions write_options,
                        std::function<void(Result<PutResult>)> done) {
  if (source.size <= options.copy_object_limit) {
    client->CopyObject(source.key, source.etag, dest_key, write_options, std::move(done));
    return;
  }
  auto copy = std::make_shared<PartCopy>();
  copy->client = std::move(client);
  copy->gate = std::move(gate);
  copy->journal = std::move(journal);
  copy->source = std::move(source);
  copy->dest = std::move(dest_key);
  copy->write_options = write_options;
  // At most 10,000 parts, and at least the configured size.
  copy->part_size = std::max(options.copy_part_size, (copy->source.size + 9999) / 10000);
  copy->done = std::move(done);
  copy->Start();
}

}  // namespace ossmount::upload
