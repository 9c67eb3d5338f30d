// WarmupJobs on its own: a job's listing steps, queue, starts and end, decided with no
// lister, fetcher or io_context.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "prefetch/control_memory.h"
#include "prefetch/warmup_jobs.h"

namespace {

using ossmount::prefetch::ControlMemory;
using ossmount::prefetch::DatasetPrefetchOptions;
using ossmount::prefetch::Drops;
using ossmount::prefetch::FetchOutcome;
using ossmount::prefetch::FetchResult;
using ossmount::prefetch::JobState;
using ossmount::prefetch::PrefetchItem;
using ossmount::prefetch::Requester;
using ossmount::prefetch::WarmupJobs;
using ossmount::prefetch::WarmupJobStatus;
using ossmount::prefetch::WarmupStart;

std::vector<PrefetchItem> ListedPage(const std::string& dir, int n) {
  std::vector<PrefetchItem> items;
  for (int i = 0; i < n; ++i) {
    PrefetchItem item;
    item.path = dir + "/" + std::to_string(i);
    item.key = item.path;
    item.size = 10;
    items.push_back(item);
  }
  return items;
}

WarmupJobStatus OnlyJob(const WarmupJobs& jobs) {
  std::vector<WarmupJobStatus> st;
  jobs.Status(st);
  REQUIRE(st.size() == 1);
  return st.front();
}

}  // namespace

TEST_CASE("WarmupJobs walks a job through its listing, its starts and its end", "[warmup_jobs]") {
  DatasetPrefetchOptions o;
  o.concurrency = 2;
  ControlMemory memory(o.control_memory);
  WarmupJobs jobs(o, memory);
  auto id = jobs.Start(Requester{}, {"a"}, 0);
  REQUIRE(id.ok());
  std::string path;
  CHECK(jobs.NextPath(*id, 0, &path) == WarmupJobs::ListStep::kPath);
  CHECK(path == "a");
  bool queued = false;
  CHECK(jobs.OnPage(*id, ListedPage("a", 3), &queued));
  CHECK(queued);
  CHECK(memory.Status().used > 0);  // the job and its queue
  CHECK(jobs.OnListingDone(*id, "a", ossmount::Status::Ok()) == WarmupJobs::ListingEnd::kNextPath);
  CHECK(jobs.NextPath(*id, 1, &path) == WarmupJobs::ListStep::kOver);

  int total = 1;  // one fetch of another kind (a hint) in flight already
  std::vector<WarmupStart> starts;
  jobs.Collect(total, starts);
  REQUIRE(starts.size() == 1);  // the job's concurrency counts it
  CHECK(total == 2);
  CHECK(starts[0].hold);  // no disk cache: held in memory until read
  Drops drop;
  for (int round = 0; round < 3 && !starts.empty(); ++round) {
    for (const WarmupStart& s : starts) {
      FetchResult r;
      r.outcome = FetchOutcome::kAlreadyCached;
      r.bytes = 10;
      CHECK_FALSE(jobs.OnFetchDone(s, std::move(r), drop));
    }
    starts.clear();
    total = 0;
    jobs.Collect(total, starts);
  }
  const WarmupJobStatus st = OnlyJob(jobs);
  CHECK(st.state == JobState::kDone);
  CHECK(st.files_cached == 3);
  CHECK(jobs.in_flight() == 0);
  CHECK(memory.Status().used == 0);
}

TEST_CASE("WarmupJobs stops handing out files while the disk cache is busy", "[warmup_jobs]") {
  DatasetPrefetchOptions o;
  o.concurrency = 4;
  o.disk_budget = 1000;
  ControlMemory memory(o.control_memory);
  WarmupJobs jobs(o, memory);
  auto added = jobs.AddFiles("listed:/a", ListedPage("a", 2));
  CHECK(added.second);
  int total = 0;
  std::vector<WarmupStart> starts;
  jobs.Collect(total, starts);
  REQUIRE(starts.size() == 2);
  CHECK_FALSE(starts[0].hold);  // disk mode holds nothing
  Drops drop;
  FetchResult busy;
  busy.outcome = FetchOutcome::kBusy;
  CHECK(jobs.OnFetchDone(starts[0], std::move(busy), drop));
  std::vector<WarmupStart> more;
  total = 1;
  jobs.Collect(total, more);
  CHECK(more.empty());
  jobs.EndBusyWait();
  jobs.Collect(total, more);
  REQUIRE(more.size() == 1);
  CHECK(more[0].item.path == starts[0].item.path);  // the busy file, first again
  CHECK(jobs.CancelAll() == 1);
  CHECK(OnlyJob(jobs).state == JobState::kCancelled);
}
