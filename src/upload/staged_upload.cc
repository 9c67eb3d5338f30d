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
  uint64_t size = 0;
  uint64_t offset = 0;
  std::vector<char> buffer;

  void Next() {
    while (offset < size) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(kPiece, size - offset));
      Result<size_t> got = file->Read(offset, buffer.data(), want);
      if (!got.ok() || *got != want) {
        Status why = got.ok() ? Status(ErrorCode::kInternal,
                                       "the staged file shrank while it "
                                       "was being uploaded")
                              : got.status();
        upload->Abort(why);
        return upload->Finish(std::move(done));
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
                      std::function<void(Result<UploadedObject>)> done) {
  auto sender = std::make_shared<Sender>();
  sender->size = file->size();
  sender->file = std::move(file);
  sender->upload = std::move(upload);
  sender->done = std::move(done);
  sender->buffer.resize(kPiece);
  sender->Next();
}

}  // namespace ossmount::upload
