#include "upload/staged_upload.h"

#include <atomic>
#include <vector>

namespace ossmount::upload {
namespace {

// Bytes read from the staged file per Append.
constexpr size_t kPiece = 1 << 20;

struct Sender : std::enable_shared_from_this<Sender> {
  std::shared_ptr<StagedFile> file;
  std::shared_ptr<ObjectUpload> upload;
  std::function<void(Result<UploadedObject>)> done;
  std::optional<UnchangedBytes> unchanged;
  FetchBytes fetch;
  uint64_t fetched_until = 0;  // the file's bytes are local up to here
  uint64_t size = 0;
  uint64_t offset = 0;
  std::vector<char> buffer;

  // Whether the part starting at `offset` and ending at `end` holds only unchanged bytes.
  bool Unchanged(uint64_t end) const {
    return unchanged && boost::icl::contains(unchanged->ranges,
                                             ByteRanges::interval_type::right_open(offset, end));
  }

  void Fail(Status why) {
    upload->Abort(why);
    upload->Finish(std::move(done));
  }

  void Fetched(const Status& outcome) {
    if (!outcome.ok()) return Fail(outcome);
    Next();
  }

  void Next() {
    while (offset < size) {
      const ObjectUpload::PartBounds part = upload->NextPart();
      const uint64_t part_end = std::min(part.end, size);
      if (part.start == offset && Unchanged(part_end)) {
        // One copy takes the whole unchanged run, up to one copy request's size (a handful of
        // requests for a large checkpoint rather than one per part). What follows it starts
        // a part of its own, of any size the upload would give it.
        uint64_t copy_end = std::min(size, offset + upload->max_copy_part());
        auto run = unchanged->ranges.find(offset);
        copy_end = std::min(copy_end, boost::icl::last_next(*run));
        Status copied_part = upload->AppendCopy(offset, copy_end - offset, unchanged->etag);
        if (!copied_part.ok()) return Fail(copied_part);
        offset = copy_end;
        continue;
      }
      if (fetch && offset >= fetched_until) {
        // The part goes up from the file: first the bytes it has not fetched. As with
        // backpressure below, whoever comes second goes on (no recursion when the answer
        // comes at once): 0 = not yet, 1 = answered before this loop looked, 2 = left to
        // the answer.
        const uint64_t end = std::min(size, part.end);
        auto turn = std::make_shared<std::atomic<int>>(0);
        auto outcome = std::make_shared<Status>();
        fetch(offset, end, [self = shared_from_this(), end, turn, outcome](Status fetched) {
          *outcome = fetched;
          if (fetched.ok()) self->fetched_until = end;
          int expected = 0;
          if (!turn->compare_exchange_strong(expected, 1)) self->Fetched(*outcome);
        });
        int expected = 0;
        if (turn->compare_exchange_strong(expected, 2)) return;  // Fetched() goes on
        if (!outcome->ok()) return Fail(*outcome);
        continue;
      }
      const size_t want =
          static_cast<size_t>(std::min<uint64_t>(kPiece, std::min(size, part.end) - offset));
      Result<size_t> got = file->Read(offset, buffer.data(), want);
      if (!got.ok() || *got != want) {
        return Fail(got.ok() ? Status(ErrorCode::kInternal,
                                      "the staged file shrank while it was being uploaded")
                             : got.status());
      }
      Status appended = upload->Append(buffer.data(), want);
      if (!appended.ok()) return upload->Finish(std::move(done));
      offset += want;
      // Backpressure: the next piece waits for room in the memory budget. Whoever comes
      // second, this loop or the resumption, goes on: 0 = not yet, 1 = resumed before this
      // loop looked, 2 = this loop left it to the resumption.
      auto turn = std::make_shared<std::atomic<int>>(0);
      upload->WhenWritable([self = shared_from_this(), turn] {
        int expected = 0;
        if (!turn->compare_exchange_strong(expected, 1)) self->Next();
      });
      int expected = 0;
      if (turn->compare_exchange_strong(expected, 2)) return;  // Next() runs when memory frees
    }
    upload->Finish(std::move(done));
  }
};

}  // namespace

void UploadStagedFile(std::shared_ptr<StagedFile> file, std::shared_ptr<ObjectUpload> upload,
                      std::optional<UnchangedBytes> unchanged, FetchBytes fetch,
                      std::function<void(Result<UploadedObject>)> done) {
  auto sender = std::make_shared<Sender>();
  sender->fetch = std::move(fetch);
  sender->size = file->size();
  // One part goes up with one PUT, which a copy cannot be part of.
  if (unchanged && sender->size > upload->NextPart().end) sender->unchanged = std::move(unchanged);
  sender->file = std::move(file);
  sender->upload = std::move(upload);
  sender->done = std::move(done);
  sender->buffer.resize(kPiece);
  sender->Next();
}

}  // namespace ossmount::upload
