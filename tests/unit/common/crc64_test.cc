#include "common/crc64.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>

using ossmount::Crc64;
using ossmount::Crc64Combine;

// Check values of CRC-64/XZ as the OSS SDKs test it (aliyun-oss-cpp-sdk Crc64Test.cc).
TEST_CASE("crc64 matches the official check values") {
  std::string check = "123456789";
  CHECK(Crc64(0, check.data(), check.size()) == 0x995DC9BBDF1939FAULL);
  CHECK(Crc64(0, check.data(), check.size()) == 11051210869376104954ULL);
  std::string broadcast = "This is a test of the emergency broadcast system.";
  CHECK(Crc64(0, broadcast.data(), broadcast.size()) == 2871916124362751090ULL);
  CHECK(Crc64(0, "", 0) == 0);
}

TEST_CASE("crc64 is incremental at every split point") {
  std::string data(1000, '\0');
  std::mt19937 rng(42);
  for (auto& c : data) c = static_cast<char>(rng());
  uint64_t whole = Crc64(0, data.data(), data.size());
  for (size_t split : {0, 1, 7, 8, 9, 63, 500, 999, 1000}) {
    uint64_t a = Crc64(0, data.data(), split);
    CHECK(Crc64(a, data.data() + split, data.size() - split) == whole);
  }
}

TEST_CASE("crc64 combine equals the crc of the concatenation") {
  std::string a = "123456789";
  std::string b = "This is a test of the emergency broadcast system.";
  std::string ab = a + b;
  uint64_t ca = Crc64(0, a.data(), a.size());
  uint64_t cb = Crc64(0, b.data(), b.size());
  CHECK(Crc64Combine(ca, cb, b.size()) == Crc64(0, ab.data(), ab.size()));
  CHECK(Crc64Combine(ca, 0, 0) == ca);
  std::string big(1 << 20, 'x');
  uint64_t cbig = Crc64(0, big.data(), big.size());
  std::string abig = a + big;
  CHECK(Crc64Combine(ca, cbig, big.size()) == Crc64(0, abig.data(), abig.size()));
}
