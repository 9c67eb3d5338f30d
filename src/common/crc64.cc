#include "common/crc64.h"

#include <array>
#include <cstring>

namespace ossmount {
namespace {

constexpr uint64_t kReflectedPoly = 0xC96C5795D7870F42ULL;

struct Tables {
  std::array<std::array<uint64_t, 256>, 8> t{};
  constexpr Tables() {
    for (uint64_t n = 0; n < 256; ++n) {
      uint64_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kReflectedPoly : c >> 1;
      t[0][n] = c;
    }
    for (int n = 0; n < 256; ++n) {
      uint64_t c = t[0][n];
      for (int k = 1; k < 8; ++k) {
        c = t[0][c & 0xFF] ^ (c >> 8);
        t[k][n] = c;
      }
    }
  }
};

constexpr Tables kTables;

// GF(2) matrix helpers for Crc64Combine (zlib's crc32_combine, widened to 64 bits).
uint64_t Gf2MatrixTimes(const uint64_t* mat, uint64_t vec) {
  uint64_t sum = 0;
  while (vec) {
    if (vec & 1) sum ^= *mat;
    vec >>= 1;
    ++mat;
  }
  return sum;
}

void Gf2MatrixSquare(uint64_t* square, const uint64_t* mat) {
  for (int n = 0; n < 64; ++n) square[n] = Gf2MatrixTimes(mat, mat[n]);
}

}  // namespace

uint64_t Crc64(uint64_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  const auto& t = kTables.t;
  crc = ~crc;
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);  // little-endian host assumed (x86_64, aarch64)
    crc ^= word;
    crc = t[7][crc & 0xFF] ^ t[6][(crc >> 8) & 0xFF] ^ t[5][(crc >> 16) & 0xFF] ^
          t[4][(crc >> 24) & 0xFF] ^ t[3][(crc >> 32) & 0xFF] ^ t[2][(crc >> 40) & 0xFF] ^
          t[1][(crc >> 48) & 0xFF] ^ t[0][crc >> 56];
    p += 8;
    size -= 8;
  }
  while (size--) crc = t[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

uint64_t Crc64Combine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b) {
  if (len_b == 0) return crc_a;
  uint64_t even[64];
  uint64_t odd[64];
  odd[0] = kReflectedPoly;  // operator for one zero bit
  uint64_t row = 1;
  for (int n = 1; n < 64; ++n) {
    odd[n] = row;
    row <<= 1;
  }
  Gf2MatrixSquare(even, odd);  // two zero bits
  Gf2MatrixSquare(odd, even);  // four zero bits
  do {
    Gf2MatrixSquare(even, odd);
    if (len_b & 1) crc_a = Gf2MatrixTimes(even, crc_a);
    len_b >>= 1;
    if (len_b == 0) break;
    Gf2MatrixSquare(odd, even);
    if (len_b & 1) crc_a = Gf2MatrixTimes(odd, crc_a);
    len_b >>= 1;
  } while (len_b != 0);
  return crc_a ^ crc_b;
}

}  // namespace ossmount
