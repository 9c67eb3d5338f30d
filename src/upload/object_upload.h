// ObjectUpload: one file written to the mount, going up while it is written. Bytes are
// copied into part buffers (PartBuffer, accounted in the UploadGate's budget); each full
// part is sent at once, without another copy, as an UploadPart of a multipart upload, many
// in flight; Finish sends the rest and completes the object. A file that ends within its
// first part goes up with one PutObject, and an empty one as an empty object.
//
// States: writing -> finishing -> done | failed. The first error sticks: every later Write
// and Finish gets it, and the multipart upload is aborted, so nothing partial ever appears
// under the key. Integrity is the client's: each part's CRC-64 is checked against the
// service's, and the object's, combined from the parts, against Complete's answer.
//
// Ownership: create with Make; operations in flight hold a reference.
// Thread-safety: thread-safe; mu_ is a leaf lock (never held while calling the client, the
// gate, the journal or a callback).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ossmount/object_client.h"
#include "upload/part_buffer.h"
#include "upload/upload_gate.h"
#include "upload/upload_journal.h"
#include "upload/upload_options.h"

namespace ossmount::upload {

// What a completed upload made.
struct UploadedObject {
  uint64_t size = 0;
  std::string etag;
  std::optional<uint64_t> crc64;
  int parts = 0;  // 0 for a single PutObject
  // Which completion of this upload made it: 1 for the first, 2 after bytes continued it, ...
  uint64_t completion = 0;
};

class ObjectUpload : public std::enable_shared_from_this<ObjectUpload> {
 public:
  // `journal` may be null (no crash record).
  static std::shared_ptr<ObjectUpload> Make(std::shared_ptr<ObjectClient> client,
                                            std::shared_ptr<UploadGate> gate,
                                            std::shared_ptr<UploadJournal> journal, std::string key,
                                            const UploadOptions& options,
                                            WriteOptions write_options);
  ~ObjectUpload();

  // Appends `size` bytes, copied before this returns; the sticky error when the upload failed.
  // Callers serialise their Appends (the order is the file's). Bytes appended after a Finish
  // completed the object continue it: the next Finish completes a new version holding the
  // old bytes and the new ones (copied on the server for a multipart object, from memory
  // for one that went up with one PUT), so an fsync in mid-file costs a copy, not the file.
  // While Finish is running, kInvalidArgument.
  Status Append(const char* data, size_t size);
  // The part the next byte appended goes into, as offsets in the file: [start, end).
  struct PartBounds {
    uint64_t start = 0;
    uint64_t end = 0;
  };
  PartBounds NextPart() const;
  // Appends `length` bytes copied on the server (UploadPartCopy) from `source_offset` of the
  // object at this upload's key, pinned to `source_etag` (a copy fails with
  // kPreconditionFailed when the object there is another one): bytes of a staged file that
  // did not change, never downloaded or sent again. Only from a part's start (NextPart), at
  // least that part's size or as the file's last part, and at most max_copy_part() bytes
  // (one copy may span what would be several parts); kInvalidArgument otherwise.
  Status AppendCopy(uint64_t source_offset, uint64_t length, const std::string& source_etag);
  uint64_t max_copy_part() const { return std::max(options_.copy_part_size, options_.part_size); }
  // Runs `resume` once the writer may write more: at once, or when memory frees
  // (backpressure, UploadGate::WaitForRoom).
  void WhenWritable(std::function<void()> resume);
  // Sends what is left and completes the object; `done` gets the object or the error. A
  // later call gets the same answer (after the first one's, when it is still running).
  void Finish(std::function<void(Result<UploadedObject>)> done);
  // Fails the upload with `why` (if it has not ended): aborts the multipart upload.
  void Abort(Status why);
  // Ends the upload as Abort does, for a file that goes on elsewhere (a staged copy of all
  // its bytes): not counted as a failed upload.
  void Withdraw(Status why);
  // When every byte written is still here (nothing was sent: no part, no PUT in flight),
  // moves them to *bytes and ends the upload with `why` (nothing to abort): a file that goes
  // on elsewhere (a staged copy). False, changing nothing, otherwise.
  bool Surrender(std::string* bytes, Status why);

  // When the request that makes the object (CompleteMultipartUpload, or the one PutObject)
  // failed without an answer (a timeout or a network error), the server may have received
  // it and may still apply it: the upload failed, but what is at the key is unknown.
  bool outcome_unknown() const;
  // Whether an unknown outcome will be settled (a multipart upload, which can be aborted).
  bool outcome_will_settle() const;
  // For a multipart upload, the abort that follows settles it: once the abort is answered
  // (no Complete can apply after it), a HEAD of the key tells whether one did. `settled`
  // gets the object there when it has the size and CRC-64 the Complete would have made (it
  // holds exactly the bytes written), nullopt when nothing of the upload is there. Not
  // called when the abort or the HEAD failed, or nothing can tell (no CRC-64), nor for a
  // PutObject. Both outcomes are logged. Set before Finish.
  void OnOutcomeSettled(std::function<void(std::optional<ObjectInfo>)> settled);

  // Bytes written so far.
  uint64_t size() const;
  // The sticky error, OK while none.
  Status error() const;
  // Writing or finishing: not (yet) a complete object, and not failed.
  bool active() const;
  // Writing: bytes (or none yet) that no Finish has been asked to complete.
  bool writing() const;
  // Bytes of a completed single-PUT object kept (in the budget) until this upload goes, so
  // that bytes appended later can continue it.
  uint64_t kept_bytes() const;
  const std::string& key() const { return key_; }

 private:
  enum class State { kWriting, kFinishing, kDone, kFailed };
  using FinishCallback = std::function<void(Result<UploadedObject>)>;
  // A part to send: bytes, or (data null) a server-side copy of bytes [copy_offset,
  // copy_offset + copy_length) of the object this upload completed before (Continue).
  struct Part {
    int number = 0;
    std::shared_ptr<PartBuffer> data;
    uint64_t copy_offset = 0;
    uint64_t copy_length = 0;
    std::string copy_etag;
    uint64_t bytes() const { return data ? data->size() : copy_length; }
  };

  ObjectUpload(std::shared_ptr<ObjectClient> client, std::shared_ptr<UploadGate> gate,
               std::shared_ptr<UploadJournal> journal, std::string key,
               const UploadOptions& options, WriteOptions write_options);

  // Copies bytes into the current part, sealing each part that fills; kTooBig (with the bytes
  // before it taken) where a part past the 10,000th would begin. REQUIRES mu_.
  Status AppendLocked(const char* data, size_t size, std::vector<Part>& sealed);
  // Ends the current part (if it holds bytes) as the next part. REQUIRES mu_.
  void SealLocked(std::vector<Part>& sealed);
  // Sends sealed parts, starting the multipart upload first if needed.
  void SendParts(std::vector<Part> parts);
  void StartMultipart();
  void OnInitiated(Result<std::string> id);
  void SendPart(Part part);
  void OnPartDone(int number, uint64_t bytes, Result<PartInfo> r);
  void PutWhole(std::shared_ptr<PartBuffer> body);
  void CompleteIfReady();
  void OnCompleted(Result<PutResult> r, int parts);
  void Fail(Status why, bool counted = true);
  // The abort of a failed upload answered: the journal forgets it, and an unknown outcome
  // is settled and logged.
  void OnAborted(const std::string& id, const Status& s);
  // After that abort, for an unknown outcome: `found` (a HEAD of the key) is this upload's
  // object when its size and CRC-64 are the ones the Complete would have made.
  void SettleUnknownOutcome(const Result<ObjectInfo>& found);
  // Turns a done upload back into a writing one whose first bytes are the completed object's.
  // REQUIRES mu_ and state_ == kDone.
  void ContinueLocked(std::vector<Part>& copies);
  // Hands the final answer to every waiting Finish.
  void Settle();
  // The options of the request that completes the object.
  WriteOptions CompletionOptions() const;

  const std::shared_ptr<ObjectClient> client_;
  const std::shared_ptr<UploadGate> gate_;
  const std::shared_ptr<UploadJournal> journal_;
  const std::string key_;
  const UploadOptions options_;
  const std::optional<UserMetadata> user_meta_;  // sent with the PutObject or Initiate
  const std::chrono::steady_clock::time_point started_;

  // mu_ guards every member below.
  mutable std::mutex mu_;
  State state_ = State::kWriting;
  Status error_;
  uint64_t size_ = 0;
  std::shared_ptr<PartBuffer> current_;  // the part being filled
  uint64_t current_limit_ = 0;           // its size when full
  int next_part_ = 1;
  bool multipart_ = false;  // parts were sealed: this is a multipart upload
  bool outcome_unknown_ = false;
  // The object must not replace one at its key (WriteOptions::forbid_overwrite): until the
  // first completion, after which the key holds this upload's own object.
  bool forbid_overwrite_ = false;
  std::function<void(std::optional<ObjectInfo>)> outcome_settled_;
  std::optional<uint64_t> completed_crc_;  // of the object the last Complete sent makes
  bool initiating_ = false;                // InitiateMultipart in flight
  std::string upload_id_;                  // once initiated
  std::vector<Part> unsent_;               // sealed before the upload id was known
  int parts_out_ = 0;                      // parts sent and not yet answered
  std::map<int, PartInfo> done_parts_;
  bool completing_ = false;  // Complete or the single PUT was sent
  std::optional<UploadedObject> result_;
  // The body of a completed single-PUT object, kept (and counted in the budget) so that
  // bytes appended after its completion can continue it.
  std::shared_ptr<PartBuffer> last_body_;
  uint64_t completions_ = 0;
  std::vector<FinishCallback> finish_waiters_;
};

}  // namespace ossmount::upload
