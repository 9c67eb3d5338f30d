#include "common/crc64.h"

#include <lzma.h>

namespace ossmount {
namespace {

constexpr uint64_t kReflectedPoly = 0xC96C5795D7870F42ULL;

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
  // liblzma computes the same CRC (XZ's check) with carry-less multiplication where the CPU
  // has it: measured 2.3-2.6x faster than slicing-by-8 here, and the CRC of every disk
  // cache block read was 30% of the daemon's CPU in an epoch served from the disk cache.
  return lzma_crc64(static_cast<const uint8_t*>(data), size, crc);
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
