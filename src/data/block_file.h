// The on-disk format of one DiskBlockCache block file, and how blocks are named.
//
// A block's header is a fixed part followed by the key and etag bytes:
//
//   magic "OSMBLK\0\1" (8) | version u32 | key length u32 | etag length u32 | reserved u32 |
//   index u64 | data length u64 | XXH3-64 of the data u64 | header XXH3-64 u64 |
//   key | etag
//
// It lives in one of two places (BlockLayout):
//   - version 3, kHeaderInXattr: the file is exactly the block's bytes and the header's
//     fixed part alone (56 bytes: small enough to live inside an ext4 inode, so no extra
//     disk block per file) is its extended attribute "user.ossmount.block"; the key and
//     etag are not stored, but the header checksum covers them, so the header of another
//     block fails it. Such a file can back a FUSE passthrough open: the kernel reads it as
//     the object's bytes from offset 0.
//   - version 2, kHeaderInFile: the file is the header, then the block's bytes (for file
//     systems without user extended attributes, and caches written before version 3).
// A file with the attribute is read as version 3, one without as version 2; a header whose
// version does not match where it was found is rejected.
//
// All integers are little-endian. The header checksum covers every header byte before it
// plus the key and etag, so a header rewritten for another block is caught even when its
// data checksum is self-consistent; the data checksum is checked on every read. XXH3 (not
// CRC-64, which version 1 used) because that check runs on every cached read: at about
// 20 GB/s it costs a few microseconds per 100 KB image, where CRC-64 cost more than the
// copy. It detects corruption (bit rot, torn or foreign writes), not tampering: the
// directory is 0700 and its files 0600. Files of another version are dropped and refetched.
//
// File names are the hex SHA-256 of (key, etag, index) plus ".blk": a key ("../x", control
// characters, 10 KB long) never becomes part of a path. A block lives in the subdirectory
// named by its name's first two hex digits ("3f/3fa9...e1.blk"): 256 directories, so that no
// one directory outgrows what its file system indexes (ext4 without the large_dir feature,
// Debian's default, refuses new names in a directory of a few million). Caches written
// before that kept every block at the top level; DiskBlockCache moves them in when it opens.
// Temporary files start with "tmp." and live at the top level.
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/disk_block_cache.h"

namespace ossmount::data {

constexpr uint32_t kFileHeaderVersion = 2;   // BlockLayout::kHeaderInFile
constexpr uint32_t kXattrHeaderVersion = 3;  // BlockLayout::kHeaderInXattr
constexpr const char* kBlockXattrName = "user.ossmount.block";
constexpr size_t kBlockFixedHeaderSize = 56;
constexpr std::string_view kBlockSuffix = ".blk";
constexpr std::string_view kTempPrefix = "tmp.";

// The SHA-256 a block is named by. Uniformly distributed, so any 8 of its bytes make a hash.
struct BlockDigest {
  std::array<unsigned char, 32> bytes{};
  friend bool operator==(const BlockDigest&, const BlockDigest&) = default;
};
// Hashes a digest by its first 8 bytes (for unordered containers of digests).
struct BlockDigestHash {
  size_t operator()(const BlockDigest& digest) const noexcept {
    size_t h;
    std::memcpy(&h, digest.bytes.data(), sizeof(h));  // SHA-256 bytes: uniform already
    return h;
  }
};
BlockDigest DigestOf(const BlockId& id);

// "<64 hex digits>.blk".
std::string BlockFileName(const BlockDigest& digest);
inline std::string BlockFileName(const BlockId& id) { return BlockFileName(DigestOf(id)); }
// The block's file relative to the cache directory: "<2 hex digits>/<64 hex digits>.blk".
std::string BlockFilePath(const BlockDigest& digest);
inline std::string BlockFilePath(const BlockId& id) { return BlockFilePath(DigestOf(id)); }
// The subdirectory blocks whose digest starts with `first_byte` live in: "00" to "ff".
std::string BlockSubdirectory(unsigned char first_byte);
// The digest a name BlockFileName can produce stands for; nullopt for any other name.
std::optional<BlockDigest> ParseBlockFileName(std::string_view name);
inline bool IsBlockFileName(std::string_view name) { return ParseBlockFileName(name).has_value(); }

// The header (fixed part, key, etag) for `data` of block `id`, stored as `layout` says
// (kHeaderInFile or kHeaderInXattr).
std::string EncodeBlockHeader(const BlockId& id, const char* data, size_t size, BlockLayout layout);

// Why a block file was rejected; kOk when it is intact and is the block asked for.
enum class BlockCheck { kOk, kTruncated, kBadHeader, kWrongBlock, kWrongLength, kBadChecksum };
const char* BlockCheckName(BlockCheck check);

// The header size a block file for `id` has (fixed part plus key and etag).
size_t BlockHeaderSize(const BlockId& id);

// Checks a block file against `id` and `expected_length`. `header` is the header as found
// where `layout` keeps it (kHeaderInFile: up to BlockHeaderSize(id) bytes from the file's
// start; kHeaderInXattr: the attribute's value), `data` what was read of the block's bytes
// (up to expected_length bytes, right after the header or from offset 0), `file_size` the
// file's size. kOk means `data` is the block, intact.
BlockCheck CheckBlock(std::string_view header, BlockLayout layout, uint64_t file_size,
                      std::string_view data, const BlockId& id, uint64_t expected_length);

}  // namespace ossmount::data
