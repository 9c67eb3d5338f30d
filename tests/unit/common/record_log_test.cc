// RecordLog: what a killed process leaves is what the next one loads.
#include "common/record_log.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>

using ossmount::RecordLog;
using ossmount::RecordReader;
using ossmount::RecordWriter;

namespace {

std::string TempPath(const char* name) {
  return "/tmp/record_log_test." + std::to_string(getpid()) + "." + name;
}

uint64_t FileSize(const std::string& path) {
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace

TEST_CASE("RecordLog loads the last put of each key that was not erased") {
  const std::string path = TempPath("live");
  {
    auto log = RecordLog::Create(path);
    REQUIRE(log.ok());
    (*log)->Put(1, "one");
    (*log)->Put(2, "two");
    (*log)->Put(1, "uno");
    (*log)->Erase(2);
    (*log)->Put(3, std::string("\0three", 6));
    REQUIRE((*log)->error().ok());
  }
  auto loaded = RecordLog::Load(path);
  REQUIRE(loaded.ok());
  CHECK(loaded->size() == 2);
  CHECK(loaded->at(1) == "uno");
  CHECK(loaded->at(3) == std::string("\0three", 6));
  // Create empties an old file.
  REQUIRE(RecordLog::Create(path).ok());
  CHECK(RecordLog::Load(path)->empty());
  std::remove(path.c_str());
  CHECK(RecordLog::Load(path).status().code() == ossmount::ErrorCode::kNotFound);
}

TEST_CASE("RecordLog ignores a torn or damaged last record") {
  const std::string path = TempPath("torn");
  {
    auto log = RecordLog::Create(path);
    REQUIRE(log.ok());
    (*log)->Put(7, "seven");
    (*log)->Put(8, "eight");
  }
  const uint64_t whole = FileSize(path);
  // Torn: the process died within the last write.
  REQUIRE(truncate(path.c_str(), static_cast<off_t>(whole - 3)) == 0);
  auto torn = RecordLog::Load(path);
  REQUIRE(torn.ok());
  CHECK(torn->size() == 1);
  CHECK(torn->count(7) == 1);
  // Damaged: a byte of the last record's payload changed.
  {
    auto log = RecordLog::Create(path);
    (*log)->Put(7, "seven");
    (*log)->Put(8, "eight");
  }
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(whole - 8 - 2));
    f.put('X');
  }
  auto damaged = RecordLog::Load(path);
  REQUIRE(damaged.ok());
  CHECK(damaged->size() == 1);
  CHECK(damaged->at(7) == "seven");
  std::remove(path.c_str());
}

TEST_CASE("RecordLog asks for a rewrite when mostly dead, never when all live") {
  const std::string path = TempPath("compact");
  auto log = RecordLog::Create(path);
  REQUIRE(log.ok());
  RecordLog& l = **log;
  const std::string payload(1000, 'p');
  uint64_t key = 0;
  l.Put(0, payload);  // live records only are never rewritten
  for (int i = 0; i < 2000; ++i) l.Put(1000000 + i, payload);
  CHECK(l.bytes() >= (1u << 20));
  CHECK_FALSE(l.CompactionDue());
  while (!l.CompactionDue()) {
    l.Put(++key, payload);
    l.MarkDead(payload.size());
    l.Erase(key);
  }
  CHECK(l.bytes() >= (1u << 20));
  l.Put(5000000, "kept");
  l.Rewrite([](const RecordLog::Emit& emit) { emit(5000000, "kept"); });
  REQUIRE(l.error().ok());
  CHECK(FileSize(path) == l.bytes());
  CHECK(l.bytes() < 100);
  CHECK_FALSE(l.CompactionDue());
  l.Put(9, "after");  // goes to the new file
  auto loaded = RecordLog::Load(path);
  REQUIRE(loaded.ok());
  CHECK(loaded->size() == 2);
  CHECK(loaded->at(9) == "after");
  std::remove(path.c_str());
}

TEST_CASE("RecordLog keeps its first write error and writes nothing after it") {
  const std::string path = TempPath("full");
  auto log = RecordLog::Create(path);
  REQUIRE(log.ok());
  // A file size limit makes the write fail (EFBIG) as a full file system would (ENOSPC).
  rlimit before{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &before) == 0);
  auto* old_handler = signal(SIGXFSZ, SIG_IGN);
  rlimit small = before;
  small.rlim_cur = 64;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
  (*log)->Put(1, std::string(100, 'x'));
  const uint64_t bytes = (*log)->bytes();
  (*log)->Put(2, "y");
  REQUIRE(setrlimit(RLIMIT_FSIZE, &before) == 0);
  signal(SIGXFSZ, old_handler);
  CHECK_FALSE((*log)->error().ok());
  CHECK((*log)->error().message().find(path) != std::string::npos);
  CHECK(bytes == 0);
  CHECK((*log)->bytes() == 0);  // nothing after the first error, not even what would fit
  std::remove(path.c_str());
}

TEST_CASE("RecordWriter and RecordReader round-trip fields and refuse short payloads") {
  RecordWriter w;
  w.U64(42).Str("path/to/file").U64(~uint64_t{0}).Str("");
  RecordReader r(w.bytes());
  uint64_t a = 0, b = 0;
  std::string s, e = "x";
  REQUIRE(r.U64(a));
  REQUIRE(r.Str(s));
  REQUIRE(r.U64(b));
  REQUIRE(r.Str(e));
  CHECK(a == 42);
  CHECK(s == "path/to/file");
  CHECK(b == ~uint64_t{0});
  CHECK(e.empty());
  CHECK_FALSE(r.U64(a));
  RecordReader shortened(std::string_view(w.bytes()).substr(0, 12));
  CHECK(shortened.U64(a));
  CHECK_FALSE(shortened.Str(s));
}
