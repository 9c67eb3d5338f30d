#include "common/time_util.h"

#include <catch2/catch.hpp>

using namespace ossmount;

TEST_CASE("wire time formats") {
  SystemTime t = std::chrono::system_clock::from_time_t(1702743657);
  CHECK(FormatIso8601Basic(t) == "20231216T162057Z");
  CHECK(FormatYyyymmdd(t) == "20231216");
  CHECK(FormatIso8601(t) == "2023-12-16T16:20:57Z");
  CHECK(FormatRfc1123(std::chrono::system_clock::from_time_t(1672223261)) ==
        "Wed, 28 Dec 2022 10:27:41 GMT");
}

TEST_CASE("wire time parsing") {
  CHECK(*ParseRfc1123("Wed, 28 Dec 2022 10:27:41 GMT") == 1672223261);
  CHECK(*ParseIso8601("2023-12-16T16:20:57.000Z") == 1702743657);
  CHECK(*ParseIso8601("2023-12-16T16:20:57Z") == 1702743657);
  CHECK(*ParseIso8601("20231216T162057Z") == 1702743657);
  CHECK_FALSE(ParseRfc1123("yesterday").ok());
  CHECK_FALSE(ParseRfc1123("Wed, 28 Foo 2022 10:27:41 GMT").ok());
  CHECK_FALSE(ParseIso8601("2023-13-16T16:20:57Z").ok());
  CHECK_FALSE(ParseIso8601("").ok());
}

TEST_CASE("SystemTimeFromUnix refuses times system_clock cannot hold") {
  // Regression (fuzz_credentials): "Expiration": "4048-01-01T00:00:00Z" parses to seconds
  // whose nanosecond count overflows int64; converting it unchecked was undefined behaviour.
  Result<int64_t> far = ParseIso8601("4048-01-01T00:00:00Z");
  REQUIRE(far.ok());
  CHECK_FALSE(SystemTimeFromUnix(*far).ok());
  CHECK_FALSE(SystemTimeFromUnix(ParseIso8601("9999-12-31T23:59:59Z").value()).ok());
  Result<SystemTime> ok = SystemTimeFromUnix(ParseIso8601("2262-01-01T00:00:00Z").value());
  REQUIRE(ok.ok());
  CHECK(FormatIso8601(*ok) == "2262-01-01T00:00:00Z");
  CHECK(SystemTimeFromUnix(0).value() == SystemTime());
}
