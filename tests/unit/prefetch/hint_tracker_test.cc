// HintTracker, HintWindow and ControlMemory on their own: the decisions of hint prefetch
// (what starts, what a read or a fetch's end releases, what the control memory admits)
// with no fetcher, no io_context and no thread.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "prefetch/control_memory.h"
#include "prefetch/hint_tracker.h"

namespace {

using ossmount::prefetch::ControlMemory;
using ossmount::prefetch::DatasetPrefetchOptions;
using ossmount::prefetch::Drops;
using ossmount::prefetch::FetchOutcome;
using ossmount::prefetch::FetchResult;
using ossmount::prefetch::HintGrant;
using ossmount::prefetch::HintPaths;
using ossmount::prefetch::HintSender;
using ossmount::prefetch::HintStart;
using ossmount::prefetch::HintTracker;
using ossmount::prefetch::HintWindow;
using ossmount::prefetch::PrefetchStatus;
using ossmount::prefetch::Requester;

// A tracker with its control memory.
struct TrackerRig {
  explicit TrackerRig(DatasetPrefetchOptions o) : memory(o.control_memory), hints(o, memory) {}
  // Puts a list of `n` paths "<prefix>0".. in place for sender `pid`, as SetHints does.
  void Send(const std::string& prefix, int n, int pid) {
    HintPaths paths;
    paths.Reserve(n, n * (prefix.size() + 4));
    for (int i = 0; i < n; ++i) paths.Add(prefix + std::to_string(i));
    paths.Index();
    HintSender sender;
    sender.pid = pid;
    auto list =
        std::make_unique<HintWindow>(sender, std::make_shared<const HintPaths>(std::move(paths)));
    list->set_charged(list->Bytes(hints.stale_distance()));
    HintGrant grant;
    HintTracker::Gone gone;
    Drops drop;
    hints.Replace(std::move(list), grant, gone, drop);
  }
  std::vector<std::string> Collect(int slots) {
    std::vector<HintStart> starts;
    hints.Collect(slots, starts);
    std::vector<std::string> paths;
    for (const auto& s : starts) {
      paths.push_back(s.path);
      started.push_back(s);
    }
    return paths;
  }
  // Ends the fetch of `path` (started by Collect); a kFetched one is held.
  std::weak_ptr<const void> End(const std::string& path, FetchOutcome outcome, Drops& drop) {
    for (auto it = started.begin(); it != started.end(); ++it) {
      if (it->path != path) continue;
      FetchResult r;
      r.outcome = outcome;
      r.bytes = 100;
      auto hold = std::make_shared<int>(1);
      if (outcome == FetchOutcome::kFetched) r.hold = hold;
      const HintStart start = *it;
      started.erase(it);
      hints.OnFetchDone(start, std::move(r), drop);
      return hold;
    }
    FAIL("no fetch of " << path);
    return {};
  }

  ControlMemory memory;
  HintTracker hints;
  std::vector<HintStart> started;
};

}  // namespace

TEST_CASE("HintTracker starts the window, holds what is fetched and releases it on read",
          "[hint_tracker]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 2;
  TrackerRig t(o);
  t.Send("f", 5, 101);
  CHECK(t.Collect(10) == std::vector<std::string>{"f0", "f1"});
  CHECK(t.hints.in_flight() == 2);
  Drops drop;
  auto h0 = t.End("f0", FetchOutcome::kFetched, drop);
  CHECK(drop.empty());
  CHECK(t.Collect(10).empty());  // two positions past the furthest read (none): full
  CHECK(t.hints.OnRead("f0", drop));
  REQUIRE(drop.size() == 1);
  drop.clear();
  CHECK(h0.expired());  // the hold went out with the read, to be freed by the caller
  CHECK(t.Collect(10) == std::vector<std::string>{"f2"});
  CHECK_FALSE(t.hints.OnRead("elsewhere", drop));
  PrefetchStatus st;
  const uint64_t bytes = t.hints.Status(st);
  CHECK(st.hints.read == 1);
  CHECK(st.hints.outstanding_files == 2);  // f1 and f2 in flight
  CHECK(bytes == t.memory.Status().used);
}

TEST_CASE("HintTracker shares the slots it is given round-robin among the lists",
          "[hint_tracker]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 4;
  TrackerRig t(o);
  t.Send("a", 8, 101);
  t.Send("b", 8, 102);
  CHECK(t.Collect(3) == std::vector<std::string>{"a0", "b0", "b1"});
  CHECK(t.Collect(0).empty());
  CHECK(t.Collect(-2).empty());  // more in flight than the limit: nothing
}

TEST_CASE("HintTracker waits after a budget refusal until told memory was freed",
          "[hint_tracker]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 2;
  TrackerRig t(o);
  t.Send("f", 4, 101);
  CHECK(t.Collect(10) == std::vector<std::string>{"f0", "f1"});
  Drops drop;
  t.End("f0", FetchOutcome::kBudgetFull, drop);
  CHECK(t.Collect(10).empty());
  t.hints.EndBudgetWait();
  CHECK(t.Collect(10) == std::vector<std::string>{"f0"});  // the refused position again
}

TEST_CASE("HintTracker reserves, refuses and gives back control memory",
          "[hint_tracker][control_memory]") {
  DatasetPrefetchOptions o;
  o.control_memory = 1 << 20;
  TrackerRig t(o);
  HintSender sender;
  sender.pid = 7;
  HintTracker::Gone gone;
  Drops drop;
  auto grant = t.hints.Reserve(sender, 1000, 20000, /*append=*/false, gone, drop);
  REQUIRE(grant.ok());
  CHECK(grant->bytes == t.hints.ListBytesFor(1000, 20000));
  CHECK(t.memory.Status().used == grant->bytes);
  auto refused = t.hints.Reserve(sender, 100000, 2000000, /*append=*/false, gone, drop);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("(--control-memory 1MiB)") != std::string::npos);
  t.hints.ReleaseGrant(*grant);
  CHECK(t.memory.Status().used == 0);
}

TEST_CASE("ControlMemory keeps other users to their quarter and counts credits as free",
          "[control_memory]") {
  ControlMemory memory(4 << 20);
  const Requester owner{0, true};
  const Requester other{1000, false};
  CHECK(memory.TryCharge(other, 1 << 20));
  CHECK_FALSE(memory.Fits(other, 1));
  CHECK(memory.Fits(other, 1 << 10, /*credit=*/1 << 20));  // a list it is about to replace
  CHECK(memory.NoRoomMessage(other, 1).find("share a quarter") != std::string::npos);
  CHECK(memory.TryCharge(owner, 3 << 20));
  CHECK_FALSE(memory.Fits(owner, 1));
  memory.Uncharge(other, 1 << 20);
  memory.Uncharge(owner, 3 << 20);
  CHECK(memory.Status().used == 0);
  CHECK(memory.Status().other_users_used == 0);
}
