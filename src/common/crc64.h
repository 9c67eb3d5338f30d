// CRC-64/XZ (a.k.a. CRC-64/ECMA-182 reflected, CRC-64/GO-ECMA): the checksum OSS returns in
// x-oss-hash-crc64ecma. Check value: Crc64("123456789") == 0x995DC9BBDF1939FA.
// Computed by liblzma (carry-less multiplication on x86-64: about 4-5 GB/s per core here).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ossmount {

// Continues a CRC: pass 0 to start, then the previous result for each further piece.
uint64_t Crc64(uint64_t crc, const void* data, size_t size);

// CRC of A followed by B, from crc(A), crc(B) and the length of B (zlib's GF(2) method).
uint64_t Crc64Combine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b);

}  // namespace ossmount
