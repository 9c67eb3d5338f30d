// RecordLog: a file of keyed records (put a key's payload, erase a key) that a process keeps
// current so that the next process can read what was live when the first one died.
//
// Each record goes to the file with one write(2) before the call returns, so a process killed
// at any point leaves every record before the one in flight and at worst a torn last one,
// which Load ignores (each record carries its length and a checksum). The file lives on a
// tmpfs such as /run: it outlives the process, not the machine, and nothing is synced.
// The file grows with every record; the owner says which records died (MarkDead: a put
// replaced or erased since) and rewrites the file from its live state when CompactionDue()
// says it is mostly dead records. A file of live records only (names the kernel keeps) is
// never rewritten.
//
// Thread-safety: none; the owner serializes every call (it records under the lock that
// guards the state it records, so the file's order is the state's order).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/unique_fd.h"
#include "ossmount/status.h"

namespace ossmount {

class RecordLog {
 public:
  using Records = std::map<uint64_t, std::string>;
  using Emit = std::function<void(uint64_t key, std::string_view payload)>;

  // Creates the file at `path` holding `initial` (replacing any file there whole, as Rewrite
  // does), open for more records.
  static Result<std::unique_ptr<RecordLog>> Create(const std::string& path,
                                                   const Records& initial = {});
  // The live records of the file at `path`: the last payload put for each key that was not
  // erased after it. kNotFound when there is no file; a torn or damaged tail ends the read.
  static Result<Records> Load(const std::string& path);

  // The first failure is kept (error()) and later calls do nothing: a record missing from
  // the middle would make the file lie.
  void Put(uint64_t key, std::string_view payload);
  // Erases `key`; the erase record itself counts as dead.
  void Erase(uint64_t key);
  // A record with a payload of `payload_size` bytes no longer counts (replaced or erased).
  void MarkDead(size_t payload_size);
  // More than half the file is dead records, and it holds at least 1 MiB.
  bool CompactionDue() const;
  // Replaces the file by one holding exactly the records `emit_all` emits (a new file renamed
  // over the old one, so a process killed meanwhile leaves one or the other whole).
  void Rewrite(const std::function<void(const Emit&)>& emit_all);

  const Status& error() const { return error_; }
  uint64_t bytes() const { return bytes_; }
  const std::string& path() const { return path_; }

 private:
  RecordLog(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  void Append(char op, uint64_t key, std::string_view payload);

  const std::string path_;
  UniqueFd fd_;
  uint64_t bytes_ = 0;
  uint64_t dead_bytes_ = 0;
  Status error_;
};

// Payload helpers: fields in order, each integer 8 bytes little-endian and each string its
// length then its bytes.
class RecordWriter {
 public:
  RecordWriter& U64(uint64_t value);
  RecordWriter& Str(std::string_view value);
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

class RecordReader {
 public:
  explicit RecordReader(std::string_view in) : in_(in) {}
  // False (and every later read fails too) when the payload is shorter than asked.
  bool U64(uint64_t& value);
  bool Str(std::string& value);

 private:
  std::string_view in_;
  bool ok_ = true;
};

}  // namespace ossmount
