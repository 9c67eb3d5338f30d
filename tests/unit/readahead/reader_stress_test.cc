// SequentialReader under concurrent readers of one open file, each mixing sequential runs,
// random reads, long reads and reads past the end (forked DataLoader workers and threads
// sharing a descriptor): every byte is right, the budget's overshoot stays bounded, and
// Close gives back every reservation, slot and GET. A change of the object while they read
// fails reads with ESTALE and never mixes versions. The scripts are seeded, so a failure
// repeats; the sanitizer builds run them for races and leaks.
#include <algorithm>
#include <atomic>
#include <functional>

#include "reader_harness.h"

using namespace readaheadtest;

namespace {

// One reader's script: what it read, and how it went.
struct ReaderOutcome {
  int reads = 0;
  int wrong = 0;       // bytes that differ from every allowed version
  int failed = 0;      // reads that failed with anything but ESTALE
  int stale = 0;       // reads that failed with ESTALE (allowed only after a change)
  uint64_t bytes = 0;  // bytes delivered
};

// Checks one read's bytes: they must equal `offset`'s bytes of one of the `versions`.
bool MatchesAVersion(const std::string& got, uint64_t offset, size_t size,
                     const std::vector<const std::string*>& versions) {
  for (const std::string* v : versions) {
    const std::string want = offset >= v->size() ? std::string() : v->substr(offset, size);
    if (got == want) return true;
  }
  return false;
}

// A worker's reads: sequential runs of 128 KiB to 1 MiB reads from a random offset (or 0)
// for 256 KiB to 6 MiB, single random reads of 1 byte to 256 KiB, long reads of 1 to 3
// MiB, and reads that cross or start past the end.
void RunScript(SequentialReader& reader, uint64_t object_size, uint32_t seed, int operations,
               const std::vector<const std::string*>& versions, ReaderOutcome& out) {
  std::mt19937_64 rng(seed);
  auto read = [&](uint64_t offset, size_t size) {
    ++out.reads;
    auto r = Harness::Read(reader, offset, size);
    if (!r.ok()) {
      if (r.status().code() == ErrorCode::kPreconditionFailed) {
        ++out.stale;
      } else {
        ++out.failed;
      }
      return;
    }
    out.bytes += r->size();
    if (!MatchesAVersion(*r, offset, size, versions)) ++out.wrong;
  };
  for (int op = 0; op < operations; ++op) {
    const unsigned kind = rng() % 100;
    if (kind < 50) {
      uint64_t at = rng() % 8 == 0 ? 0 : rng() % object_size;
      const uint64_t end = std::min(object_size, at + 256 * KiB + rng() % (6 * MiB));
      const size_t step = rng() % 2 == 0 ? 128 * KiB : 1 * MiB;
      for (; at < end; at += step) read(at, step);
    } else if (kind < 75) {
      read(rng() % object_size, 1 + rng() % (256 * KiB));
    } else if (kind < 90) {
      read(rng() % object_size, 1 * MiB + rng() % (2 * MiB));
    } else {
      read(object_size - rng() % (512 * KiB), 1 * MiB);
      read(object_size + rng() % 4096, 4096);
    }
  }
}

struct StressResult {
  ReaderOutcome total;
  uint64_t peak = 0;
};

StressResult RunReaders(Harness& h, SequentialReader& reader, uint64_t object_size, int readers,
                        int operations, const std::vector<const std::string*>& versions,
                        const std::function<void()>& midway = nullptr) {
  UsageSampler sampler(h.budget);
  std::vector<ReaderOutcome> outcomes(readers);
  std::vector<std::thread> threads;
  std::atomic<int> finished_half{0};
  for (int i = 0; i < readers; ++i) {
    threads.emplace_back([&, i] {
      RunScript(reader, object_size, 100 + i, operations / 2, versions, outcomes[i]);
      ++finished_half;
      RunScript(reader, object_size, 200 + i, operations - operations / 2, versions, outcomes[i]);
    });
  }
  if (midway) {
    while (finished_half < 1) std::this_thread::sleep_for(1ms);
    midway();
  }
  for (auto& t : threads) t.join();
  StressResult result;
  result.peak = sampler.Stop();
  for (const auto& o : outcomes) {
    result.total.reads += o.reads;
    result.total.wrong += o.wrong;
    result.total.failed += o.failed;
    result.total.stale += o.stale;
    result.total.bytes += o.bytes;
  }
  return result;
}

// Close gives back everything: no part kept, no GET in flight, no reservation, no slot.
void CheckCloseReleasesAll(Harness& h, SequentialReader& reader) {
  reader.Close();
  CHECK(Eventually(
      [&] { return h.budget->used() == 0 && h.slots->in_use() == 0 && h.fake->in_flight() == 0; }));
  CHECK(reader.stats().parts == 0);
  CHECK(!Harness::Read(reader, 0, 4096).ok());
}

}  // namespace

TEST_CASE(
    "Concurrent readers of one open file mixing runs, random, long and past-the-end reads get "
    "every byte right within the budget") {
  constexpr int kReaders = 6;
  constexpr uint64_t kBudget = 12 * MiB;
  Harness h(kBudget);
  h.fake->set_latency(1ms);
  const std::string data = Content(48 * MiB + 777, 41);
  h.fake->PutObject("big", data);
  ReaderOptions o;
  SECTION("small parts, many runs and windows") {
    o = SmallParts();
    o.piece_idle = 50ms;
    // Real time here: pieces and windows go idle at whatever moments the threads make.
    o.clock = [] { return std::chrono::steady_clock::now(); };
  }
  SECTION("the daemon's defaults (8 MiB parts, a window up to 64 MiB)") {}
  SECTION("with a disk cache, random reads fetching whole parts") {
    o = SmallParts();
    h.disk = std::make_shared<MemoryBlockCache>();
  }
  SECTION("small parts whose GETs report their first bytes before completing") {
    o = SmallParts();
    h.fake->set_early_bytes(200 * KiB);
  }
  auto reader = h.Open("big", o);
  const StressResult r = RunReaders(h, *reader, data.size(), kReaders, 24, {&data});
  INFO("reads " << r.total.reads << ", bytes " << r.total.bytes << ", peak " << r.peak << ", GETs "
                << h.fake->requests().size());
  CHECK(r.total.reads > kReaders * 24);
  CHECK(r.total.wrong == 0);
  CHECK(r.total.failed == 0);
  CHECK(r.total.stale == 0);
  // Beyond the budget only pieces Reserve()d for waiting readers (at least their read, at
  // most 3 MiB here): one per waiting reader, one per reply still being delivered, and the
  // one the file keeps. (Parts and short runs' pieces are taken within the budget.)
  CHECK(r.peak <= kBudget + (2 * kReaders + 1) * 3 * MiB);
  CheckCloseReleasesAll(h, *reader);
}

TEST_CASE(
    "Concurrent readers of one open file see an object change as ESTALE, never as mixed "
    "versions") {
  constexpr int kReaders = 4;
  Harness h;
  h.fake->set_latency(1ms);
  const std::string v1 = Content(24 * MiB + 99, 51);
  const std::string v2 = Content(24 * MiB + 99, 52);  // same size: only the etag tells
  h.fake->PutObject("big", v1);
  ReaderOptions o = SmallParts();
  auto reader = h.Open("big", o);
  // Reads must return the version pinned at open; after the change, bytes already fetched
  // (v1's) may still be served, anything else fails with ESTALE. v2's bytes never appear.
  const StressResult r =
      RunReaders(h, *reader, v1.size(), kReaders, 20, {&v1}, [&] { h.fake->PutObject("big", v2); });
  INFO("reads " << r.total.reads << ", stale " << r.total.stale);
  CHECK(r.total.wrong == 0);
  CHECK(r.total.failed == 0);
  CHECK(r.total.stale > 0);  // the change was seen (reads after it fetch new parts)
  CheckCloseReleasesAll(h, *reader);
}
