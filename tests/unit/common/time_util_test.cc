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
