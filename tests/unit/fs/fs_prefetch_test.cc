// Dataset prefetch through the filesystem: sampler-order hints, warm-up and
// --prefetch-on-list fetch at Priority::kPrefetch, within the memory budget, and a later
// read costs no second GET (single flight with a prefetch in flight).
#include <future>
#include <thread>

#include "fs_harness.h"
#include "support/memory_block_cache.h"

using namespace fstest;

namespace {

constexpr size_t kFileSize = 10000;

std::string FileName(int i) { return "d/f" + std::to_string(100 + i); }

// n files under d/, listed once so their attributes are cached (as ImageFolder does).
void MakeDataset(Harness& h, int n) {
  for (int i = 0; i < n; ++i) h.fake->PutObject(FileName(i), Content(kFileSize, i));
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  REQUIRE(h.List(d->attr.ino).ok());
}

std::vector<std::string> Names(int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(FileName(i));
  return v;
}

// Hints the n files in order and waits until the prefetcher has dealt with every position
// (fetched, or skipped for the page cache) and has nothing in flight.
std::shared_ptr<ossmount::prefetch::DatasetPrefetcher> HintAllAndSettle(Harness& h, int n) {
  auto prefetcher = h.prefetcher;
  prefetcher->SetHints(Names(n));
  REQUIRE(Eventually([&] {
    auto st = prefetcher->Status().hints;
    return st.next == static_cast<uint64_t>(n) && st.in_flight == 0;
  }));
  return prefetcher;
}

}  // namespace

TEST_CASE("Hinted files are prefetched at prefetch priority and read with no second GET") {
  FsOptions o = Harness::DefaultOptions();
  o.dataset_prefetch.hint_ahead_files = 100;
  Harness h(o);
  MakeDataset(h, 20);
  h.fake->ResetCounters();
  auto prefetcher = h.prefetcher;
  prefetcher->SetHints(Names(20));
  REQUIRE(Eventually([&] { return prefetcher->Status().hints.fetched == 20; }));
  CHECK(h.fake->count(Op::kGet) == 20);
  for (const auto& r : h.fake->requests()) {
    if (r.op == Op::kGet) CHECK(r.priority == Priority::kPrefetch);
  }
  for (int i = 0; i < 20; ++i) CHECK(h.ReadPath(FileName(i)) == Content(kFileSize, i));
  CHECK(h.fake->count(Op::kGet) == 20);
  CHECK(prefetcher->Status().hints.read == 20);
  CHECK(prefetcher->Status().held_bytes == 0);  // released as they were read
}

TEST_CASE("A read of a file whose prefetch is in flight joins it: one GET") {
  Harness h;
  MakeDataset(h, 1);
  h.fake->ResetCounters();
  h.fake->Pause();
  auto prefetcher = h.prefetcher;
  prefetcher->SetHints({FileName(0)});
  REQUIRE(Eventually([&] { return h.fake->count(Op::kGet) == 1; }));
  auto reader = std::async(std::launch::async, [&] { return h.ReadPath(FileName(0)); });
  std::this_thread::sleep_for(50ms);  // let the read reach the filesystem (not required)
  h.fake->Resume();
  CHECK(reader.get() == Content(kFileSize, 0));
  CHECK(h.fake->count(Op::kGet) == 1);
  REQUIRE(Eventually([&] { return prefetcher->Status().hints.outstanding_files == 0; }));
}

TEST_CASE("Hint prefetch stays within the memory budget and every file is fetched once") {
  FsOptions o = Harness::DefaultOptions();
  o.max_memory = 3 * kFileSize;
  o.dataset_prefetch.hint_ahead_files = 100;
  Harness h(o);
  MakeDataset(h, 10);
  h.fake->ResetCounters();
  auto prefetcher = h.prefetcher;
  prefetcher->SetHints(Names(10));
  REQUIRE(Eventually([&] {
    auto st = prefetcher->Status().hints;
    return st.budget_wait && st.fetched == 3 && st.in_flight == 0;
  }));
  CHECK(h.fs->memory_budget()->used() <= o.max_memory);
  // The reader is never refused (on-demand reads Reserve), and gets every byte right.
  for (int i = 0; i < 10; ++i) CHECK(h.ReadPath(FileName(i)) == Content(kFileSize, i));
  CHECK(h.fake->count(Op::kGet) == 10);
}

TEST_CASE("Warm-up of a directory fetches every file once, then reads cost no GET") {
  Harness h;
  for (int i = 0; i < 12; ++i) h.fake->PutObject(FileName(i), Content(kFileSize, i));
  h.fake->PutObject("d/sub/deep", Content(kFileSize, 99));
  h.fake->PutObject("other/x", "not warmed");
  auto prefetcher = h.prefetcher;
  uint64_t id = prefetcher->StartWarmup({"d"});
  auto job = [&] {
    for (const auto& j : prefetcher->Status().jobs) {
      if (j.id == id) return j;
    }
    return prefetch::WarmupJobStatus{};
  };
  REQUIRE(Eventually([&] { return job().state == prefetch::JobState::kDone; }));
  CHECK(job().files_total == 13);
  CHECK(job().files_fetched == 13);
  CHECK(job().bytes_done == 13 * kFileSize);
  const uint64_t gets = h.fake->count(Op::kGet);
  CHECK(gets == 13);
  for (int i = 0; i < 12; ++i) CHECK(h.ReadPath(FileName(i)) == Content(kFileSize, i));
  CHECK(h.fake->count(Op::kGet) == gets);

  uint64_t missing = prefetcher->StartWarmup({"nope"});
  REQUIRE(Eventually([&] {
    for (const auto& j : prefetcher->Status().jobs) {
      if (j.id == missing) return j.state == prefetch::JobState::kFailed;
    }
    return false;
  }));
}

TEST_CASE("Automatic mode (--prefetch-on-list) warms a directory's files after it is listed") {
  FsOptions o = Harness::DefaultOptions();
  o.prefetch_on_list = true;
  Harness h(o);
  for (int i = 0; i < 8; ++i) h.fake->PutObject(FileName(i), Content(kFileSize, i));
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  h.fake->ResetCounters();
  REQUIRE(h.List(d->attr.ino).ok());
  auto prefetcher = h.prefetcher;
  REQUIRE(Eventually([&] {
    auto st = prefetcher->Status();
    return !st.jobs.empty() && st.jobs.back().state == prefetch::JobState::kDone;
  }));
  CHECK(h.fake->count(Op::kGet) == 8);
  for (int i = 0; i < 8; ++i) CHECK(h.ReadPath(FileName(i)) == Content(kFileSize, i));
  CHECK(h.fake->count(Op::kGet) == 8);
}

TEST_CASE("Warm-up into a disk cache stores a large file's parts, then reading it costs no GET") {
  auto disk = std::make_shared<ossmount::testing::MemoryBlockCache>();
  FsOptions o = Harness::DefaultOptions();
  o.small_file_threshold = 64 * 1024;
  o.readahead.part_size = 64 * 1024;
  o.disk_cache = disk;
  Harness h(o);
  const std::string data = Content(200 * 1024, 42);  // 4 parts, the last one short
  h.fake->PutObject("big/blob", data);
  auto prefetcher = h.prefetcher;
  auto job_state = [&](uint64_t id) {
    for (const auto& j : prefetcher->Status().jobs) {
      if (j.id == id) return j;
    }
    return prefetch::WarmupJobStatus{};
  };
  uint64_t id = prefetcher->StartWarmup({"big"});
  REQUIRE(Eventually([&] { return job_state(id).state == prefetch::JobState::kDone; }));
  CHECK(job_state(id).files_fetched == 1);
  CHECK(disk->Stats().blocks == 4);
  CHECK(h.fake->count(Op::kGet) == 4);
  for (const auto& r : h.fake->requests()) {
    if (r.op == Op::kGet) CHECK(r.priority == Priority::kPrefetch);
  }
  // Nothing held once written (the writer thread drops its reference just after the block
  // is indexed, so this settles a moment after `blocks` reads 4).
  CHECK(Eventually([&] { return h.fs->memory_budget()->used() == 0; }));

  h.fake->ResetCounters();
  auto d = h.Lookup(kRootInode, "big");
  REQUIRE(d.ok());
  auto f = h.Lookup(d->attr.ino, "blob");
  REQUIRE(f.ok());
  CHECK(h.ReadFile(f->attr.ino) == data);
  CHECK(h.fake->count(Op::kGet) == 0);

  uint64_t again = prefetcher->StartWarmup({"big"});
  REQUIRE(Eventually([&] { return job_state(again).state == prefetch::JobState::kDone; }));
  CHECK(job_state(again).files_cached == 1);
  CHECK(h.fake->count(Op::kGet) == 0);
}

TEST_CASE(
    "A hinted file the kernel was given is not fetched again, and its reopen moves the "
    "list") {
  FsOptions o = Harness::DefaultOptions();  // indefinite TTL: opens keep the page cache
  o.dataset_prefetch.hint_ahead_files = 100;
  Harness h(o);
  MakeDataset(h, 10);
  for (int i = 0; i < 5; ++i) h.ReadPath(FileName(i));  // the kernel now holds these
  h.fake->ResetCounters();
  auto prefetcher = HintAllAndSettle(h, 10);
  CHECK(h.fake->count(Op::kGet) == 5);  // files 5 to 9 only
  CHECK(prefetcher->Status().hints.page_cached == 5);
  CHECK(prefetcher->Status().hints.fetched == 5);
  // The kernel serves file 0 from its page cache: an open and a release, no READ. The
  // list counts it read all the same.
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  auto f0 = h.Lookup(d->attr.ino, FileName(0).substr(2));
  REQUIRE(f0.ok());
  auto open = h.Open(f0->attr.ino);
  REQUIRE(open.ok());
  h.fs->Release(f0->attr.ino, open->fh);
  CHECK(prefetcher->Status().hints.read == 1);
}

TEST_CASE(
    "Reopens that miss the page cache end the trust: skipped files are fetched after "
    "all") {
  FsOptions o = Harness::DefaultOptions();
  o.dataset_prefetch.hint_ahead_files = 100;
  Harness h(o);
  MakeDataset(h, 40);
  for (int i = 0; i < 40; ++i) h.ReadPath(FileName(i));
  h.fake->ResetCounters();
  auto prefetcher = HintAllAndSettle(h, 40);
  CHECK(h.fake->count(Op::kGet) == 0);
  CHECK(prefetcher->Status().hints.page_cached == 40);
  // The kernel dropped them all: every reopen's READ reaches the filesystem. The eighth
  // miss in a row ends the trust, and the 32 files not read yet are prefetched after all.
  for (int i = 0; i < 8; ++i) CHECK(h.ReadPath(FileName(i)) == Content(kFileSize, i));
  REQUIRE(Eventually([&] {
    auto st = prefetcher->Status().hints;
    return st.fetched == 32 && st.in_flight == 0;
  }));
  CHECK(prefetcher->Status().hints.page_cached == 8);  // skipped, then read on demand
  for (int i = 8; i < 40; ++i) CHECK(h.ReadPath(FileName(i)) == Content(kFileSize, i));
  CHECK(h.fake->count(Op::kGet) == 40);  // one per file: 8 on demand, 32 prefetched
  CHECK(prefetcher->Status().hints.read == 40);
}
