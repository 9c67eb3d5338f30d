// PartCrcFold: the CRC-64 of an object read in aligned parts (index = offset / part_size),
// combined in index order as the run of parts from offset 0 grows, and compared with the
// object's own CRC-64 (x-oss-hash-crc64ecma) once that run covers the whole object.
//
// A ranged GET's bytes have no checksum of their own (OSS sends the whole object's CRC-64 on
// every GET, ranged ones included), so a server or proxy that damages bytes inside a range
// of the right length goes unnoticed part by part; only the whole object read in order shows
// it. Parts complete out of order: those beyond the first part not yet recorded wait (their
// CRC only, 8 bytes each) until the gap is filled, then Crc64Combine folds them in.
//
//   - Arm() starts a fold (a reader asked for the object's first part); a fold already armed
//     goes on. Nothing is recorded while disarmed.
//   - It ends, disarmed, with a verdict once it covers the object (kMatch / kMismatch, or
//     kUnknown when no CRC of the object is known), or is abandoned (kAbandoned) when more
//     than `max_waiting` parts wait beyond a gap: the reader does not read the object in
//     order (random reads, or parts it read as pieces), so the fold would never complete.
//   - NoteNoCrc(): a GET came without the header and none is known (S3, a server that does
//     not send it): nothing can be checked, so it disarms and Arm() does nothing, until a CRC
//     becomes known after all.
// Pure logic, no I/O. Not thread-safe: its owner serialises calls (SequentialReader::mu_).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>

namespace ossmount::readahead {

class PartCrcFold {
 public:
  enum class Verdict { kOpen, kMatch, kMismatch, kUnknown, kAbandoned };

  // `expected`: the object's CRC-64 when its metadata knows it (a HEAD, a manifest).
  PartCrcFold(uint64_t object_size, uint64_t part_size, size_t max_waiting,
              std::optional<uint64_t> expected);

  void Arm();
  bool armed() const { return armed_; }
  // The object's CRC-64 as a GET reported it; it replaces one from the metadata (the
  // server's word on the pinned version), later GETs' do not replace it.
  void SetExpected(uint64_t crc);
  void NoteNoCrc();
  std::optional<uint64_t> expected() const { return expected_; }

  // Whether part `index`'s CRC is worth computing now (a part recorded already may be
  // recorded again: the later fetch's bytes are the ones the reader got).
  bool Wants(uint64_t index) const { return armed_ && index >= next_ && index < parts_; }
  // Whether part `index` has been folded or waits to be.
  bool Recorded(uint64_t index) const { return index < next_ || waiting_.count(index) > 0; }
  struct Outcome {
    Verdict verdict = Verdict::kOpen;
    uint64_t computed = 0;  // with a verdict: the CRC-64 of the whole object as read
  };
  // Records the CRC-64 of part `index`'s bytes and folds every part now contiguous from 0.
  // kOpen unless this ended the fold. Ignored while disarmed.
  Outcome Add(uint64_t index, uint64_t crc);

  uint64_t next() const { return next_; }    // the first part not folded yet
  uint64_t parts() const { return parts_; }  // how many parts the object has

 private:
  void Disarm();
  uint64_t PartLength(uint64_t index) const;

  const uint64_t size_;
  const uint64_t part_size_;
  const uint64_t parts_;
  const size_t max_waiting_;
  std::optional<uint64_t> expected_;
  bool expected_from_get_ = false;
  bool unavailable_ = false;  // a GET said no CRC is sent, and none is known
  bool armed_ = false;
  uint64_t next_ = 0;
  uint64_t crc_ = 0;                      // of parts [0, next_)
  std::map<uint64_t, uint64_t> waiting_;  // index -> CRC, parts beyond a gap
};

}  // namespace ossmount::readahead
