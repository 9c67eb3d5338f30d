// Base64Encode / Base64Decode: RFC 4648's test vectors, and text that is not Base64.
#include "common/base64.h"

#include <catch2/catch.hpp>

using namespace ossmount;

TEST_CASE("Base64 round-trips the RFC 4648 vectors, padding included") {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    CHECK(Base64Encode(plain) == encoded);
    CHECK(Base64Decode(encoded) == std::optional<std::string>(plain));
  }
  const std::string binary("\0\xff\x10=", 4);
  CHECK(Base64Decode(Base64Encode(binary)) == std::optional<std::string>(binary));
}

TEST_CASE("Base64Decode refuses a wrong length or a character outside the alphabet") {
  CHECK_FALSE(Base64Decode("Zm9"));
  CHECK_FALSE(Base64Decode("Zm9*"));
  CHECK_FALSE(Base64Decode("Zm\"v"));
}
