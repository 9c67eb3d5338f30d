// FileWriter: how the bytes of one file open for writing reach the bucket. Three kinds:
//   - streaming (MakeStreamingWriter): the fast path. Bytes written in order from offset 0
//     go up while they are written (upload::ObjectUpload); a write anywhere else is
//     kNotSupported. The file can move to staging while it keeps a local copy of every byte
//     (TakeCopy), or while every byte it took is still in memory (TakeBytes).
//   - staged (MakeStagedWriter): a local copy (upload::StagedFile) that takes writes at any
//     offset, reads, truncation and preallocation, and goes up whole at each completion. One
//     opened on an existing object is filled with its bytes first (Load).
//   - appending (MakeAppendingWriter): a file opened with O_APPEND on a service with
//     appendable objects (OSS). Bytes go to the object with AppendObject as they come (at
//     most an interval later), so other readers see it grow; every write goes at the end
//     (O_APPEND), and reads and truncation are kNotSupported.
// Either way, Finish completes the object and answers with the upload's result, an object
// appears only complete, and the first error sticks.
//
// Thread-safety: thread-safe. Writes of one file are ordered by its caller.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ossmount/object_client.h"
#include "upload/object_upload.h"
#include "upload/staging_area.h"
#include "upload/upload_gate.h"
#include "upload/upload_journal.h"
#include "upload/upload_options.h"

namespace ossmount::fs {

using FinishCallback = std::function<void(Result<upload::UploadedObject>)>;

class FileWriter {
 public:
  virtual ~FileWriter() = default;

  // Writes `size` bytes at `offset`, copied before this returns. The sticky error once the
  // file failed; kNotSupported where this kind of writer cannot write (a streaming writer
  // off its next offset); kBusy while a completion reads the staged copy (WhenIdle).
  virtual Status Write(uint64_t offset, const char* data, size_t size) = 0;
  // Runs `resume` once the writer may write more (memory backpressure): now, or later.
  virtual void WhenWritable(std::function<void()> resume) = 0;
  // Runs `resume` once no completion is reading the staged copy: now, or later.
  virtual void WhenIdle(std::function<void()> resume) { resume(); }
  // Up to `size` bytes at `offset` (fewer at the end). kNotSupported for a streaming writer.
  virtual Result<size_t> Read(uint64_t offset, char* out, size_t size) = 0;
  // Sets the size: kNotSupported for a streaming writer unless it changes nothing; kBusy as
  // Write.
  virtual Status Truncate(uint64_t size) = 0;
  // posix_fallocate: the file is at least `size` bytes from now on, zeros past what was
  // written.
  virtual Status Reserve(uint64_t size) = 0;
  // The file's size: bytes written (or truncated to), or reserved if more.
  virtual uint64_t size() const = 0;
  // Whether the next completion would change what is in the bucket.
  virtual bool changed() const = 0;
  // Completes the object with the bytes so far; a later call after more writes completes a
  // new version. `done` gets the object or the error.
  virtual void Finish(FinishCallback done) = 0;
  // Fails the file with `why`: nothing (more) is saved.
  virtual void Abort(Status why) = 0;
  // The sticky error; OK while none.
  virtual Status error() const = 0;
  // Bytes no completion has been asked to save, and not failed.
  virtual bool writing() const = 0;
  // Not complete and not failed (writing or completing).
  virtual bool active() const = 0;
  // Where a failed completion's outcome is unknown (upload::ObjectUpload).
  virtual bool outcome_unknown() const { return false; }
  virtual bool outcome_will_settle() const { return false; }
  // Every byte of a streaming writer that has not sent any, which then ends (see the top);
  // nullopt when some went up, or for a staged writer.
  virtual std::optional<std::string> TakeBytes() { return std::nullopt; }
  // A streaming writer's local copy of every byte (and reserved size), its upload aborted
  // (nothing of it is saved); null, changing nothing, when it has no complete copy.
  virtual std::shared_ptr<upload::StagedFile> TakeCopy() { return nullptr; }
  // Whether this writer appends to an appendable object (what it completes is one).
  virtual bool appends() const { return false; }
  // The local copy of a staged writer; null for a streaming one.
  virtual std::shared_ptr<upload::StagedFile> staged_file() const { return nullptr; }
  // A staged writer of an existing object (made with `existing`): the file takes the
  // object's size now, and its bytes are fetched (ranged GETs pinned to its etag) only where
  // a read (Fetch) or a completion needs them; parts no write touches are copied on the
  // server instead. kNoSpace when the staging budget cannot hold the size.
  virtual Status StartFrom(const ObjectInfo& source) {
    (void)source;
    return Status(ErrorCode::kNotSupported, "only a staged writer starts from an object");
  }
  // Makes bytes [offset, offset + size) of the file local (StartFrom), then `done`.
  virtual void Fetch(uint64_t offset, uint64_t size, std::function<void(Status)> done) {
    (void)offset, (void)size;
    done(Status::Ok());
  }
  // Whether every byte of the file is local (nothing of StartFrom's object left to fetch).
  virtual bool holds_every_byte() const { return true; }
  // The key completions go to from now on (a rename of the open file, whose saved bytes the
  // caller moves along), and whether the first completion there must not replace an object.
  // Only a staged writer can follow a rename; a streaming one, or one completing, answers
  // false.
  virtual bool Rekey(const std::string& key, bool forbid_overwrite) {
    (void)key;
    (void)forbid_overwrite;
    return false;
  }
};

// What both kinds need to make an upload.
struct WriterContext {
  boost::asio::any_io_executor executor;  // timers (the appending writer's interval)
  std::shared_ptr<ObjectClient> client;
  std::shared_ptr<upload::UploadGate> gate;
  std::shared_ptr<upload::UploadJournal> journal;  // may be null
  upload::UploadOptions options;
  uint64_t max_stream_copy = 0;  // a streaming writer's local copy goes past this size
  // Set once the server refused a part copy as unsupported (s3rver, some S3-compatible
  // servers): staged files then go up whole. Shared by every writer of the mount.
  std::shared_ptr<std::atomic<bool>> part_copies_refused;
};

// Told what is at the key once a completion whose answer was lost learns it
// (upload::ObjectUpload::OnOutcomeSettled).
using SettledCallback = std::function<void(std::optional<ObjectInfo>)>;

// A streaming writer of `key`. `write_options` guard its first completion. `mirror` (may be
// null): an empty staged file that keeps a copy of every byte written while the staging
// area has room and the file is at most context.max_stream_copy bytes, so that an
// out-of-order write can move the file to staging (TakeCopy).
std::shared_ptr<FileWriter> MakeStreamingWriter(const WriterContext& context, std::string key,
                                                WriteOptions write_options,
                                                SettledCallback on_settled,
                                                std::shared_ptr<upload::StagedFile> mirror);
// A staged writer of `key` holding `file` (its current bytes). `write_options` guard its first
// completion. `existing`: the object the file starts as (its bytes loaded into `file` before
// the first change, by the caller); until a change, a completion leaves it as it is.
std::shared_ptr<FileWriter> MakeStagedWriter(const WriterContext& context, std::string key,
                                             WriteOptions write_options,
                                             std::shared_ptr<upload::StagedFile> file,
                                             SettledCallback on_settled,
                                             std::optional<ObjectInfo> existing);

// Where an appending writer starts: a new object (position 0), or the end of an appendable
// one (its length and, when known, its CRC-64).
struct AppendStart {
  uint64_t position = 0;
  std::optional<uint64_t> crc64;
};
// Told of each append the server took (the object's new length, etag and CRC-64).
using AppendedCallback = std::function<void(const AppendResult&)>;

// An appending writer of `key` from `start`; bytes written go up at most `interval` later.
std::shared_ptr<FileWriter> MakeAppendingWriter(const WriterContext& context, std::string key,
                                                AppendStart start,
                                                std::chrono::milliseconds interval,
                                                AppendedCallback on_appended);

// Fetches `ranges` of `source` (a version pinned by its etag: a changed object is
// kPreconditionFailed) in ranged GETs of at most `piece` bytes, several at once, handing each
// to `sink` (offset, bytes) as it arrives; `done` gets the first error, or OK.
using FetchedSink = std::function<Status(uint64_t offset, std::string_view bytes)>;
void FetchRanges(std::shared_ptr<ObjectClient> client, ObjectInfo source,
                 std::vector<std::pair<uint64_t, uint64_t>> ranges, uint64_t piece,
                 FetchedSink sink, std::function<void(Status)> done);

}  // namespace ossmount::fs
