// UploadGate: the cap on parts in flight, the queue behind it, and writers held back while
// the budget is over its limit and parts are on their way.
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "data/memory_budget.h"
#include "upload/upload_gate.h"

using ossmount::data::MemoryBudget;
using ossmount::upload::UploadGate;

TEST_CASE("UploadGate: at most the cap of sends run, queued ones start in order as parts end") {
  auto budget = std::make_shared<MemoryBudget>(1000);
  UploadGate gate(budget, 2);
  std::vector<int> started;
  for (int i = 1; i <= 5; ++i) gate.Submit([&started, i] { started.push_back(i); });
  CHECK(started == std::vector<int>{1, 2});
  CHECK(gate.parts_pending() == 5);

  gate.PartEnded();
  CHECK(started == std::vector<int>{1, 2, 3});
  CHECK(gate.parts_pending() == 4);
  gate.PartEnded();
  gate.PartEnded();
  CHECK(started == std::vector<int>{1, 2, 3, 4, 5});
  CHECK(gate.parts_pending() == 2);
  gate.PartEnded();
  gate.PartEnded();
  CHECK(gate.parts_pending() == 0);

  // Room again: the next send runs at once.
  gate.Submit([&started] { started.push_back(6); });
  CHECK(started.back() == 6);
  gate.PartEnded();
  CHECK(gate.parts_pending() == 0);
}

TEST_CASE("UploadGate: a cap below 1 is taken as 1") {
  for (int cap : {0, -3}) {
    UploadGate gate(std::make_shared<MemoryBudget>(1000), cap);
    CHECK(gate.max_parts_in_flight() == 1);
    int runs = 0;
    gate.Submit([&runs] { ++runs; });
    gate.Submit([&runs] { ++runs; });
    CHECK(runs == 1);
    gate.PartEnded();
    CHECK(runs == 2);
    gate.PartEnded();
  }
}

TEST_CASE("UploadGate: buffered bytes are accounted in the budget, even past its limit") {
  auto budget = std::make_shared<MemoryBudget>(100);
  UploadGate gate(budget, 4);
  gate.AddBuffered(60);
  gate.AddBuffered(70);
  CHECK(budget->used() == 130);
  gate.ReleaseBuffered(130);
  CHECK(budget->used() == 0);
}

TEST_CASE("UploadGate: a writer waits only while the budget is over and a part is pending") {
  auto budget = std::make_shared<MemoryBudget>(100);
  UploadGate gate(budget, 4);

  // Over the limit but nothing on its way: waiting would never end, so no wait.
  gate.AddBuffered(150);
  CHECK_FALSE(gate.MustWait());
  int resumed = 0;
  gate.WaitForRoom([&resumed] { ++resumed; });
  CHECK(resumed == 1);

  // A part in flight and the budget over: the writer waits.
  gate.Submit([] {});
  CHECK(gate.MustWait());
  gate.WaitForRoom([&resumed] { ++resumed; });
  gate.WaitForRoom([&resumed] { resumed += 10; });
  CHECK(resumed == 1);

  // Memory frees to the limit: both waiting writers run.
  gate.ReleaseBuffered(50);
  CHECK(budget->used() == 100);
  CHECK_FALSE(gate.MustWait());
  CHECK(resumed == 12);
  gate.PartEnded();
  gate.ReleaseBuffered(100);
  CHECK(budget->used() == 0);
}

TEST_CASE("UploadGate: the end of the last pending part wakes writers even if still over") {
  auto budget = std::make_shared<MemoryBudget>(100);
  UploadGate gate(budget, 1);
  gate.AddBuffered(300);
  gate.Submit([] {});
  gate.Submit([] {});  // queued behind the cap
  int resumed = 0;
  gate.WaitForRoom([&resumed] { ++resumed; });
  CHECK(resumed == 0);
  gate.PartEnded();  // the queued part starts: still one pending
  CHECK(resumed == 0);
  CHECK(gate.parts_pending() == 1);
  gate.PartEnded();  // nothing pending: waiting could never end
  CHECK(resumed == 1);
  CHECK(budget->used() == 300);
  gate.ReleaseBuffered(300);
}
