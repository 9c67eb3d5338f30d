#include <catch2/catch.hpp>

#include "data/memory_budget.h"

using ossmount::data::MemoryBudget;
using ossmount::data::Reservation;

TEST_CASE("MemoryBudget: Reserve always succeeds, TryReserve respects the limit") {
  auto budget = std::make_shared<MemoryBudget>(100);
  CHECK(budget->TryReserve(60));
  CHECK_FALSE(budget->TryReserve(50));
  budget->Reserve(50);  // on-demand: past the limit
  CHECK(budget->used() == 110);
  CHECK(budget->available() == 0);
  budget->Release(110);
  CHECK(budget->used() == 0);
}

TEST_CASE("Reservation releases its bytes when destroyed or moved from") {
  auto budget = std::make_shared<MemoryBudget>(100);
  {
    budget->Reserve(30);
    Reservation a(budget, 30);
    Reservation b(std::move(a));
    CHECK(a.bytes() == 0);
    CHECK(budget->used() == 30);
    Reservation c;
    c = std::move(b);
    CHECK(budget->used() == 30);
  }
  CHECK(budget->used() == 0);
}
