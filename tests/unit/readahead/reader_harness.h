// Test harness for SequentialReader: a FakeObjectClient on an io_context run by two threads,
// a shared budget and slots, and a blocking Read wrapper with a generous timeout.
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "readahead/sequential_reader.h"
#include "support/byte_units.h"
#include "support/eventually.h"
#include "support/fake_object_client.h"
#include "support/memory_block_cache.h"

namespace readaheadtest {

using namespace ossmount;
using namespace ossmount::readahead;
using ossmount::testing::Eventually;
using ossmount::testing::FakeObjectClient;
using ossmount::testing::MemoryBlockCache;
using ossmount::testing::Op;
using ossmount::testing::RequestRecord;
using namespace std::chrono_literals;

using ossmount::testing::KiB;
using ossmount::testing::MiB;

inline std::string Content(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(size, '\0');
  for (size_t i = 0; i + 4 <= size; i += 4) {
    uint32_t v = rng();
    std::memcpy(&s[i], &v, 4);
  }
  for (size_t i = size & ~size_t{3}; i < size; ++i) s[i] = static_cast<char>(rng());
  return s;
}

// A clock only the test moves (ReaderOptions::clock), so that the idle rules see exactly the
// pauses a test makes, however slowly a loaded machine runs its reads.
class ManualClock {
 public:
  using Clock = std::chrono::steady_clock;
  std::function<Clock::time_point()> Function() const {
    return [ticks = ticks_] { return Clock::time_point(Clock::duration(ticks->load())); };
  }
  void Advance(std::chrono::milliseconds by) {
    *ticks_ += std::chrono::duration_cast<Clock::duration>(by).count();
  }

 private:
  std::shared_ptr<std::atomic<Clock::rep>> ticks_ = std::make_shared<std::atomic<Clock::rep>>(
      std::chrono::duration_cast<Clock::duration>(24h).count());
};

struct Harness {
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard;
  std::shared_ptr<FakeObjectClient> fake;
  std::shared_ptr<data::MemoryBudget> budget;
  std::shared_ptr<FetchSlots> slots;
  std::shared_ptr<MemoryBlockCache> disk;
  // Readers opened without a clock of their own read this one: time stands still for the
  // idle rules (piece_idle) until a test advances it.
  ManualClock clock;
  std::vector<std::thread> threads;

  explicit Harness(uint64_t max_memory = 1ull << 30, int global = 64)
      : guard(boost::asio::make_work_guard(io)),
        fake(std::make_shared<FakeObjectClient>(io)),
        budget(std::make_shared<data::MemoryBudget>(max_memory)),
        slots(std::make_shared<FetchSlots>(global)) {
    for (int i = 0; i < 2; ++i) threads.emplace_back([this]() { io.run(); });
  }
  ~Harness() {
    fake->Resume();
    guard.reset();
    for (auto& t : threads) t.join();
  }

  std::shared_ptr<SequentialReader> Open(const std::string& key, ReaderOptions options) {
    auto info = fake->Info(key);
    REQUIRE(info);
    SharedReadState shared{budget, slots, disk};
    if (!options.clock) options.clock = clock.Function();
    return std::make_shared<SequentialReader>(io, fake, key, info->size, info->etag, options,
                                              shared);
  }

  static Result<std::string> Read(SequentialReader& reader, uint64_t offset, size_t size) {
    auto promise = std::make_shared<std::promise<Result<std::string>>>();
    auto future = promise->get_future();
    reader.Read(offset, size, [promise](Result<ReadBytes> r) {
      if (!r.ok()) return promise->set_value(r.status());
      promise->set_value(std::string(r->data, r->size));
    });
    if (future.wait_for(60s) != std::future_status::ready) {
      FAIL("read did not complete");
    }
    return future.get();
  }
};

// Starts a read and returns its future result (the reply, its owner kept).
inline std::future<Result<ReadBytes>> StartRead(SequentialReader& reader, uint64_t offset,
                                                size_t size) {
  auto promise = std::make_shared<std::promise<Result<ReadBytes>>>();
  auto future = promise->get_future();
  reader.Read(offset, size, [promise](Result<ReadBytes> r) { promise->set_value(std::move(r)); });
  return future;
}

inline bool Answered(std::future<Result<ReadBytes>>& f, std::chrono::milliseconds wait) {
  return f.wait_for(wait) == std::future_status::ready;
}

// Waits (up to 60 s, against hangs only) for a started read and checks that it answered
// `object`'s bytes at `offset`.
inline void ExpectBytes(std::future<Result<ReadBytes>>& f, const std::string& object,
                        uint64_t offset) {
  REQUIRE(Answered(f, std::chrono::seconds(60)));
  auto r = f.get();
  REQUIRE(r.ok());
  CHECK(std::string(r->data, r->size) == object.substr(offset, r->size));
}

// Records the largest budget->used() seen while it runs.
class UsageSampler {
 public:
  explicit UsageSampler(std::shared_ptr<data::MemoryBudget> budget)
      : budget_(std::move(budget)), thread_([this]() {
          while (!stop_) {
            uint64_t u = budget_->used();
            uint64_t m = max_.load();
            if (u > m) max_ = u;
            std::this_thread::yield();
          }
        }) {}
  ~UsageSampler() { Stop(); }
  uint64_t Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return max_;
  }

 private:
  std::shared_ptr<data::MemoryBudget> budget_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> max_{0};
  std::thread thread_;
};

inline ReaderOptions SmallParts() {
  ReaderOptions o;
  o.initial_window = 1 * MiB;
  o.max_window = 8 * MiB;
  o.part_size = 1 * MiB;
  o.per_file_concurrency = 4;
  return o;
}

}  // namespace readaheadtest
