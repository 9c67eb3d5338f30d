#include "common/url.h"

#include <catch2/catch.hpp>

using ossmount::PercentDecode;
using ossmount::PercentEncode;

TEST_CASE("percent-encoding keeps exactly the unreserved set") {
  CHECK(PercentEncode("AZaz09-_.~") == "AZaz09-_.~");
  CHECK(PercentEncode("1234+-/123/1.txt", true) == "1234%2B-/123/1.txt");
  CHECK(PercentEncode("a/b c", false) == "a%2Fb%20c");
  CHECK(PercentEncode("dir/img 001-\xC3\xA9.jpg", true) == "dir/img%20001-%C3%A9.jpg");
  CHECK(PercentEncode("|;") == "%7C%3B");
}

TEST_CASE("percent-decoding round-trips and rejects bad escapes") {
  for (std::string s : {"", "plain", "a b+c/d%e", "\x01\xff\x80 ..", "train/cls 1/"}) {
    auto decoded = PercentDecode(PercentEncode(s, true));
    REQUIRE(decoded.ok());
    CHECK(*decoded == s);
  }
  CHECK(*PercentDecode("a+b") == "a+b");
  CHECK(*PercentDecode("a+b", true) == "a b");
  CHECK(*PercentDecode("%2f%2F") == "//");
  CHECK_FALSE(PercentDecode("%").ok());
  CHECK_FALSE(PercentDecode("%4").ok());
  CHECK_FALSE(PercentDecode("%zz").ok());
}
