// DatasetPrefetcher and warm-up: hints and warm-up sharing the fetches in flight, jobs,
// their budgets and listings, and cancel (dataset_prefetcher_rig.h).
#include <string>
#include <vector>

#include "dataset_prefetcher_rig.h"

using namespace ossmount;
using namespace ossmount::prefetch;
using namespace ossmount::prefetch::rig;

TEST_CASE("hints go before warm-up within the shared concurrency", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 3;
  o.hint_concurrency = 3;
  o.hint_ahead_files = 2;
  Rig rig(o);
  rig.prefetcher->EnqueueFiles("job", Items(5, 10));
  CHECK(rig.fetcher.started() == std::vector<std::string>{"w0", "w1", "w2"});
  rig.prefetcher->SetHints({"h0", "h1", "h2"});
  rig.fetcher.Complete("w0");
  rig.fetcher.Complete("w1");
  // Freed slots go to hints first (up to hint_ahead_files), then to warm-up.
  CHECK(rig.fetcher.started() == std::vector<std::string>{"w0", "w1", "w2", "h0", "h1"});
  rig.fetcher.Complete("w2");
  CHECK(rig.fetcher.started().back() == "w3");
}

TEST_CASE("hints fill up to hint_concurrency, warm-up only below its own smaller one",
          "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 2;
  o.hint_concurrency = 4;
  o.hint_ahead_files = 10;
  Rig rig(o);
  rig.prefetcher->SetHints(Paths(10));
  CHECK(rig.fetcher.started() == std::vector<std::string>{"f0", "f1", "f2", "f3"});
  CHECK(rig.prefetcher->Status().in_flight == 4);
  // Warm-up waits while hints keep 2 or more in flight, and hints take each freed slot.
  rig.prefetcher->EnqueueFiles("job", Items(3, 10));
  CHECK(rig.fetcher.pending() == 4);
  rig.fetcher.Complete("f0");
  CHECK(rig.fetcher.started().back() == "f4");
  CHECK(rig.fetcher.pending() == 4);
  // Once the hints are all fetched, warm-up runs at its own concurrency.
  for (int i = 1; i < 10; ++i) rig.fetcher.Complete("f" + std::to_string(i));
  CHECK(rig.fetcher.pending() == 2);
  CHECK(rig.fetcher.started().back() == "w1");
}

TEST_CASE("a warm-up job runs at its concurrency and ends done", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 2;
  Rig rig(o);
  uint64_t id = rig.prefetcher->EnqueueFiles("job", Items(4, 10));
  CHECK(rig.fetcher.pending() == 2);
  CHECK(rig.fetcher.hold_of("w0"));  // no disk cache: held in memory
  rig.fetcher.Complete("w0", FetchOutcome::kFetched, 10);
  rig.fetcher.Complete("w1", FetchOutcome::kAlreadyCached, 10);
  rig.fetcher.Complete("w2", FetchOutcome::kFailed, 10);
  auto h3 = rig.fetcher.Complete("w3", FetchOutcome::kFetched, 10);
  auto st = rig.prefetcher->Status();
  const auto& job = Job(st, id);
  CHECK(job.state == JobState::kDone);
  CHECK(job.files_done == 4);
  CHECK(job.files_fetched == 2);
  CHECK(job.files_cached == 1);
  CHECK(job.files_failed == 1);
  CHECK(job.bytes_done == 30);
  CHECK(st.held_bytes == 20);
  // Memory-mode warm-up holds until the file is read once.
  CHECK_FALSE(h3.expired());
  rig.prefetcher->OnRead("w3");
  CHECK(h3.expired());
}

TEST_CASE("warm-up stops at the disk cache budget and says so", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 8;
  o.disk_budget = 250;
  Rig rig(o);
  uint64_t id = rig.prefetcher->EnqueueFiles("job", Items(5, 100));
  // Only what fits: 2 x 100 <= 250; the third would evict what was just fetched.
  CHECK(rig.fetcher.started() == std::vector<std::string>{"w0", "w1"});
  CHECK_FALSE(rig.fetcher.hold_of("w0"));  // disk mode: nothing held in memory
  rig.fetcher.Complete("w0");
  rig.fetcher.Complete("w1");
  auto st = rig.prefetcher->Status();
  const auto& job = Job(st, id);
  CHECK(job.state == JobState::kBudgetFull);
  CHECK(job.files_done == 2);
  CHECK(job.message.find("--max-cache-size") != std::string::npos);
  CHECK(st.held_bytes == 0);
  // An explicit new warm-up gets the whole cache again.
}

TEST_CASE("warm-up stops at what the disk cache's file system leaves room for, and says why",
          "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 8;
  o.disk_budget = 1000;
  uint64_t capacity = 350;  // --cache-min-free leaves room for less than --max-cache-size
  o.disk_capacity = [&capacity] { return capacity; };
  Rig rig(o);
  uint64_t id = rig.prefetcher->EnqueueFiles("job", Items(5, 100));
  CHECK(rig.fetcher.started() == std::vector<std::string>{"w0", "w1", "w2"});
  rig.fetcher.Complete("w0");
  rig.fetcher.Complete("w1");
  rig.fetcher.Complete("w2");
  auto st = rig.prefetcher->Status();
  const auto& job = Job(st, id);
  CHECK(job.state == JobState::kBudgetFull);
  CHECK(job.files_done == 3);
  CHECK(job.message.find("--cache-min-free") != std::string::npos);
  CHECK(job.message.find("--max-cache-size") != std::string::npos);
}

TEST_CASE("warm-up with room for all of --max-cache-size stops at --max-cache-size",
          "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 16;
  o.disk_budget = 1000;
  o.disk_capacity = [] { return uint64_t{5000}; };
  Rig rig(o);
  uint64_t id = rig.prefetcher->EnqueueFiles("job", Items(12, 100));
  CHECK(rig.fetcher.pending() == 10);
  for (int i = 0; i < 10; ++i) rig.fetcher.Complete("w" + std::to_string(i));
  auto st = rig.prefetcher->Status();
  const auto& job = Job(st, id);
  CHECK(job.state == JobState::kBudgetFull);
  CHECK(job.files_done == 10);
  CHECK(job.message.find("--cache-min-free") == std::string::npos);
  CHECK(job.message.find("--max-cache-size") != std::string::npos);
}

TEST_CASE("warm-up in memory stops when the memory budget refuses", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 1;
  Rig rig(o);
  uint64_t id = rig.prefetcher->EnqueueFiles("job", Items(3, 10));
  rig.fetcher.Complete("w0");
  rig.fetcher.Complete("w1", FetchOutcome::kBudgetFull);
  const auto st = rig.prefetcher->Status();
  const auto& job = Job(st, id);
  CHECK(job.state == JobState::kBudgetFull);
  CHECK(job.message.find("--max-memory") != std::string::npos);
  CHECK(rig.fetcher.started().size() == 2);
}

TEST_CASE("a busy disk cache delays warm-up instead of dropping files", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 1;
  o.disk_budget = 1000;
  o.busy_retry = 1ms;
  Rig rig(o);
  uint64_t id = rig.prefetcher->EnqueueFiles("job", Items(2, 10));
  rig.fetcher.Complete("w0", FetchOutcome::kBusy);
  // Retried after busy_retry (on the io thread).
  REQUIRE(ossmount::testing::Eventually([&] { return rig.fetcher.pending() != 0; }));
  REQUIRE(rig.fetcher.started() == std::vector<std::string>{"w0", "w0"});
  rig.fetcher.Complete("w0");
  rig.fetcher.Complete("w1");
  CHECK(Job(rig.prefetcher->Status(), id).state == JobState::kDone);
  CHECK(Job(rig.prefetcher->Status(), id).files_fetched == 2);
}

TEST_CASE("warm-up lists its paths in order and fails on a listing error", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 16;
  Lister lister = [](const std::string& path, ListBatch batch, std::function<void(Status)> done) {
    if (path == "missing") return done(Status(ErrorCode::kNotFound, "no such directory"));
    std::vector<PrefetchItem> items;
    for (int i = 0; i < 2; ++i) {
      PrefetchItem item;
      item.path = path + "/" + std::to_string(i);
      item.key = item.path;
      item.size = 5;
      items.push_back(item);
    }
    batch(items);
    done(Status::Ok());
  };
  Rig rig(o, lister);
  uint64_t ok = rig.prefetcher->StartWarmup({"a", "b"});
  CHECK(rig.fetcher.started() == std::vector<std::string>{"a/0", "a/1", "b/0", "b/1"});
  for (const auto& p : rig.fetcher.started()) rig.fetcher.Complete(p);
  CHECK(Job(rig.prefetcher->Status(), ok).state == JobState::kDone);
  CHECK(Job(rig.prefetcher->Status(), ok).bytes_total == 20);

  uint64_t bad = rig.prefetcher->StartWarmup({"missing"});
  const auto st = rig.prefetcher->Status();
  CHECK(Job(st, bad).state == JobState::kFailed);
  CHECK(Job(st, bad).message.find("missing") != std::string::npos);
}

TEST_CASE("cancelling warm-up stops queued work", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 1;
  Rig rig(o);
  uint64_t id = rig.prefetcher->EnqueueFiles("job", Items(3, 10));
  CHECK(rig.prefetcher->CancelWarmups() == 1);
  rig.fetcher.Complete("w0");
  CHECK(rig.fetcher.started().size() == 1);
  CHECK(Job(rig.prefetcher->Status(), id).state == JobState::kCancelled);
  CHECK(StatusJson(*rig.prefetcher).find("\"cancelled\"") != std::string::npos);
}

TEST_CASE("cancel during a listing stops its next page and lists no further path",
          "[dataset_prefetcher][cancel]") {
  DatasetPrefetchOptions o;
  o.concurrency = 2;
  PagedLister lister(/*pages=*/100, /*per_page=*/10);
  Rig rig(o, lister.AsLister());
  const uint64_t id = rig.prefetcher->StartWarmup({"a", "b"});
  const uint64_t queued = rig.prefetcher->StartWarmup({"c"});  // lists beside the first
  REQUIRE(lister.listed() == std::vector<std::string>{"a", "c"});
  CHECK(lister.Next());  // a's first page: 10 files queued, 2 fetching
  CHECK(rig.fetcher.pending() == 2);
  CHECK(Job(rig.prefetcher->Status(), id).queued_files == 8);
  CHECK(rig.prefetcher->Status().control_memory.warmup_bytes > 0);

  CHECK(rig.prefetcher->CancelWarmups() == 2);
  auto st = rig.prefetcher->Status();
  CHECK(Job(st, id).state == JobState::kCancelled);
  CHECK(Job(st, id).queued_files == 0);  // the queue went with the cancel
  CHECK(st.control_memory.used == 0);
  // The pages in flight come back refused: the listings stop there and report kCancelled,
  // which neither overwrites the cancelled state nor lists the job's next path ("b").
  CHECK_FALSE(lister.Next());
  CHECK_FALSE(lister.Next());
  CHECK(lister.active() == 0);
  CHECK(lister.pages_sent() == 3);
  CHECK(lister.listed() == std::vector<std::string>{"a", "c"});
  st = rig.prefetcher->Status();
  CHECK(Job(st, id).state == JobState::kCancelled);
  CHECK(Job(st, id).message == "cancelled");
  CHECK(Job(st, queued).state == JobState::kCancelled);
  // Fetches in flight finish; nothing else starts.
  rig.fetcher.Complete("a/00000000.JPEG");
  rig.fetcher.Complete("a/00000001.JPEG");
  CHECK(rig.fetcher.started().size() == 2);
  CHECK(rig.prefetcher->Status().control_memory.used == 0);
}

TEST_CASE("a job cancelled between two of its paths does not list the next one",
          "[dataset_prefetcher][cancel]") {
  DatasetPrefetchOptions o;
  o.concurrency = 1;
  PagedLister lister(/*pages=*/1, /*per_page=*/3);
  Rig rig(o, lister.AsLister());
  const uint64_t id = rig.prefetcher->StartWarmup({"a", "b", "c"});
  CHECK(lister.Next());  // a's only page; then "b" is listed
  REQUIRE(lister.listed() == std::vector<std::string>{"a", "b"});
  rig.prefetcher->CancelWarmups();
  CHECK_FALSE(lister.Next());  // b's page refused
  CHECK(lister.listed() == std::vector<std::string>{"a", "b"});
  CHECK(Job(rig.prefetcher->Status(), id).state == JobState::kCancelled);
}
