// PageCacheTrust: the hit rate of reopens decides whether hinted prefetch may skip files the
// kernel was given; trust ends below kDistrustBelow and returns only at kTrustFrom.
#include <catch2/catch.hpp>

#include "fs/page_cache_trust.h"

using ossmount::fs::PageCacheTrust;

TEST_CASE("PageCacheTrust starts trusted and stays so while reopens hit") {
  PageCacheTrust trust;
  CHECK(trust.trusted());
  for (int i = 0; i < 1000; ++i) CHECK_FALSE(trust.Record(true));
  CHECK(trust.trusted());
  CHECK(trust.hit_rate() == Approx(1.0));
}

TEST_CASE("PageCacheTrust ends after a run of misses and says so exactly once") {
  PageCacheTrust trust;
  int ended_at = -1;
  for (int i = 1; i <= 50; ++i) {
    if (trust.Record(false)) {
      CHECK(ended_at == -1);
      ended_at = i;
    }
  }
  // (1 - 1/32)^7 = 0.80, ^8 = 0.78: the eighth miss in a row takes the rate below 0.8.
  CHECK(ended_at == 8);
  CHECK_FALSE(trust.trusted());
}

TEST_CASE("PageCacheTrust ignores a scattered miss") {
  PageCacheTrust trust;
  // One miss in ten is a rate of 0.9: trust holds.
  for (int i = 0; i < 500; ++i) CHECK_FALSE(trust.Record(i % 10 != 0));
  CHECK(trust.trusted());
}

TEST_CASE("PageCacheTrust returns only once the rate reaches kTrustFrom") {
  PageCacheTrust trust;
  for (int i = 0; i < 8; ++i) trust.Record(false);
  REQUIRE_FALSE(trust.trusted());
  // Between the two thresholds the decision stays where it is (no flip on every sample).
  while (trust.hit_rate() < PageCacheTrust::kDistrustBelow + 0.05) trust.Record(true);
  CHECK_FALSE(trust.trusted());
  int hits = 0;
  while (!trust.trusted() && hits < 1000) {
    trust.Record(true);
    ++hits;
  }
  CHECK(trust.trusted());
  CHECK(trust.hit_rate() >= PageCacheTrust::kTrustFrom);
  CHECK(trust.hit_rate() < PageCacheTrust::kTrustFrom + 0.01);
}
