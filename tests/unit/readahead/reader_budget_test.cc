// SequentialReader backpressure: the shared MemoryBudget and the concurrency caps.
#include <algorithm>

#include "reader_harness.h"

using namespace readaheadtest;

namespace {

// Reads `key` sequentially in 128 KiB reads; true when every byte matched.
bool ReadAllSequential(SequentialReader& reader, const std::string& data) {
  bool exact = true;
  for (uint64_t off = 0; off < data.size(); off += 128 * KiB) {
    auto r = Harness::Read(reader, off, 128 * KiB);
    exact = exact && r.ok() && *r == data.substr(off, 128 * KiB);
  }
  return exact;
}

}  // namespace

TEST_CASE("With a small budget readahead shrinks: used() stays within limit plus on-demand parts") {
  Harness h(/*max_memory=*/4 * MiB);
  h.fake->set_latency(2ms);
  const std::string data = Content(40 * MiB, 11);
  h.fake->PutObject("big", data);
  ReaderOptions o = SmallParts();
  o.max_window = 16 * MiB;
  o.per_file_concurrency = 16;
  auto reader = h.Open("big", o);

  UsageSampler sampler(h.budget);
  CHECK(ReadAllSequential(*reader, data));
  const uint64_t peak = sampler.Stop();
  INFO("peak " << peak);
  // Readahead may fill the budget; only a part a reader waits for may go beyond it.
  CHECK(peak <= 4 * MiB + 1 * MiB);
  CHECK(peak >= 2 * MiB);  // readahead did use the budget
  // At most 4 parts fit the budget, plus the one the reader waits for.
  CHECK(h.fake->max_in_flight() <= 5);
  CHECK(h.fake->count(Op::kGet) == 40);  // no part fetched twice
  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0; }));
}

TEST_CASE("Concurrent readers share the budget: the overshoot is bounded by what they wait for") {
  Harness h(/*max_memory=*/6 * MiB);
  h.fake->set_latency(1ms);
  constexpr int kReaders = 4;
  std::vector<std::string> data;
  for (int i = 0; i < kReaders; ++i) {
    data.push_back(Content(12 * MiB + i * 1000, 20 + i));
    h.fake->PutObject("f" + std::to_string(i), data.back());
  }
  ReaderOptions o = SmallParts();
  o.max_window = 16 * MiB;
  o.per_file_concurrency = 8;
  UsageSampler sampler(h.budget);
  std::vector<std::shared_ptr<SequentialReader>> readers;
  for (int i = 0; i < kReaders; ++i) readers.push_back(h.Open("f" + std::to_string(i), o));
  std::atomic<int> exact{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kReaders; ++i) {
    threads.emplace_back([&, i]() {
      if (ReadAllSequential(*readers[i], data[i])) ++exact;
    });
  }
  for (auto& t : threads) t.join();
  const uint64_t peak = sampler.Stop();
  INFO("peak " << peak);
  CHECK(exact == kReaders);
  CHECK(peak <= 6 * MiB + kReaders * 1 * MiB);
  for (auto& r : readers) r->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0; }));
}

TEST_CASE("Per-file concurrency caps the GETs in flight of one reader") {
  Harness h;
  h.fake->set_latency(2ms);
  const std::string data = Content(24 * MiB, 12);
  h.fake->PutObject("big", data);
  ReaderOptions o = SmallParts();
  o.max_window = 16 * MiB;
  o.per_file_concurrency = 3;
  auto reader = h.Open("big", o);
  CHECK(ReadAllSequential(*reader, data));
  CHECK(h.fake->max_in_flight() <= 3);
  CHECK(h.fake->max_in_flight() >= 2);
  reader->Close();
}

TEST_CASE("Global concurrency caps readahead GETs across readers") {
  Harness h(/*max_memory=*/1ull << 30, /*global=*/3);
  h.fake->set_latency(2ms);
  constexpr int kReaders = 4;
  std::vector<std::string> data;
  for (int i = 0; i < kReaders; ++i) {
    data.push_back(Content(12 * MiB, 30 + i));
    h.fake->PutObject("f" + std::to_string(i), data.back());
  }
  ReaderOptions o = SmallParts();
  o.max_window = 16 * MiB;
  o.per_file_concurrency = 8;
  std::vector<std::shared_ptr<SequentialReader>> readers;
  for (int i = 0; i < kReaders; ++i) readers.push_back(h.Open("f" + std::to_string(i), o));
  std::atomic<int> exact{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kReaders; ++i) {
    threads.emplace_back([&, i]() {
      if (ReadAllSequential(*readers[i], data[i])) ++exact;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(exact == kReaders);
  CHECK(h.slots->max_in_use() <= 3);
  CHECK(h.slots->max_in_use() >= 1);
  // Readahead GETs within the global cap, plus at most one part each reader waits for.
  CHECK(h.fake->max_in_flight() <= 3 + kReaders);
  int prefetch = 0;
  for (const auto& rec : h.fake->requests()) prefetch += rec.priority == Priority::kPrefetch;
  CHECK(prefetch > 0);
  for (auto& r : readers) r->Close();
  CHECK(Eventually([&] { return h.slots->in_use() == 0; }));
}

TEST_CASE("With the budget spent, a waiting reader fetches small pieces instead of whole parts") {
  Harness h(/*max_memory=*/16 * MiB);
  const std::string data = Content(16 * MiB, 13);
  h.fake->PutObject("big", data);
  ReaderOptions o = SmallParts();
  o.part_size = 4 * MiB;  // a part is larger than the piece (initial_window, 1 MiB)
  auto reader = h.Open("big", o);
  h.budget->Reserve(16 * MiB);  // e.g. other files' buffers
  UsageSampler sampler(h.budget);
  CHECK(ReadAllSequential(*reader, data));
  const uint64_t peak = sampler.Stop();
  INFO("peak " << peak);
  // The piece being read, the next one, and the one a reply may still hold: the test's reader
  // moves on once it has copied the bytes, before the reply lets go of its piece (under load,
  // for the next piece's eight reads: 19 MiB in 4 of 400 runs).
  CHECK(peak <= 16 * MiB + 3 * MiB);
  const auto log = h.fake->requests();
  CHECK(log.size() == 16);  // one 1 MiB piece per 8 reads of 128 KiB
  for (const auto& rec : log) {
    CHECK(*rec.length == 1 * MiB);
    CHECK(rec.priority == Priority::kForeground);
  }
  // Once the memory is back, the reader returns to whole parts with readahead.
  h.budget->Release(16 * MiB);
  h.fake->ResetCounters();
  CHECK(*Harness::Read(*reader, 0, 128 * KiB) == data.substr(0, 128 * KiB));
  CHECK(*Harness::Read(*reader, 128 * KiB, 128 * KiB) == data.substr(128 * KiB, 128 * KiB));
  // The first read (back at 0) is random: its exact bytes; the next one is sequential.
  const auto after = h.fake->requests();
  REQUIRE(after.size() == 2);
  CHECK(*after[0].length == 128 * KiB);
  CHECK(*after[1].length == 4 * MiB);
  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0; }));
}
