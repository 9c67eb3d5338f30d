#include "data/block_file.h"

#include <openssl/evp.h>
#include <xxhash.h>

#include <cstring>

namespace ossmount::data {

namespace {

constexpr char kMagic[8] = {'O', 'S', 'M', 'B', 'L', 'K', '\0', '\1'};

uint64_t DataChecksum(const char* data, size_t size) { return XXH3_64bits(data, size); }

// Over the fixed header's first 48 bytes, then the key and etag (a few hundred bytes: one
// copy is cheaper than xxhash's streaming state, which is opaque in the shared library).
uint64_t HeaderChecksum(const char* fixed48, std::string_view key, std::string_view etag) {
  std::string material;
  material.reserve(48 + key.size() + etag.size());
  material.append(fixed48, 48).append(key).append(etag);
  return XXH3_64bits(material.data(), material.size());
}

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t GetLE(std::string_view s, size_t pos, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(s[pos + i])) << (8 * i);
  }
  return v;
}

void AppendLengthPrefixed(std::string& out, std::string_view s) {
  PutU64(out, s.size());
  out.append(s);
}

}  // namespace

BlockDigest DigestOf(const BlockId& id) {
  // Length-prefixed fields: ("a", "bc") and ("ab", "c") must not collide.
  std::string material;
  AppendLengthPrefixed(material, id.key);
  AppendLengthPrefixed(material, id.etag);
  PutU64(material, id.index);
  BlockDigest digest;
  unsigned int digest_len = 0;
  EVP_Digest(material.data(), material.size(), digest.bytes.data(), &digest_len, EVP_sha256(),
             nullptr);
  return digest;
}

namespace {
constexpr char kHex[] = "0123456789abcdef";

void AppendHex(std::string& out, const unsigned char* bytes, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 0xf]);
  }
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is not a name BlockFileName makes
}
}  // namespace

std::string BlockFileName(const BlockDigest& digest) {
  std::string name;
  name.reserve(digest.bytes.size() * 2 + kBlockSuffix.size());
  AppendHex(name, digest.bytes.data(), digest.bytes.size());
  name.append(kBlockSuffix);
  return name;
}

std::string BlockSubdirectory(unsigned char first_byte) {
  std::string dir;
  AppendHex(dir, &first_byte, 1);
  return dir;
}

std::string BlockFilePath(const BlockDigest& digest) {
  std::string path;
  path.reserve(3 + digest.bytes.size() * 2 + kBlockSuffix.size());
  AppendHex(path, digest.bytes.data(), 1);
  path.push_back('/');
  AppendHex(path, digest.bytes.data(), digest.bytes.size());
  path.append(kBlockSuffix);
  return path;
}

std::optional<BlockDigest> ParseBlockFileName(std::string_view name) {
  BlockDigest digest;
  if (name.size() != digest.bytes.size() * 2 + kBlockSuffix.size()) return std::nullopt;
  if (name.substr(digest.bytes.size() * 2) != kBlockSuffix) return std::nullopt;
  for (size_t i = 0; i < digest.bytes.size(); ++i) {
    const int hi = HexValue(name[2 * i]);
    const int lo = HexValue(name[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    digest.bytes[i] = static_cast<unsigned char>(hi << 4 | lo);
  }
  return digest;
}

namespace {
uint32_t VersionOf(BlockLayout layout) {
  return layout == BlockLayout::kHeaderInXattr ? kXattrHeaderVersion : kFileHeaderVersion;
}
}  // namespace

std::string EncodeBlockHeader(const BlockId& id, const char* data, size_t size,
                              BlockLayout layout) {
  std::string h;
  h.reserve(kBlockFixedHeaderSize + id.key.size() + id.etag.size());
  h.append(kMagic, sizeof(kMagic));
  PutU32(h, VersionOf(layout));
  PutU32(h, static_cast<uint32_t>(id.key.size()));
  PutU32(h, static_cast<uint32_t>(id.etag.size()));
  PutU32(h, 0);
  PutU64(h, id.index);
  PutU64(h, size);
  PutU64(h, DataChecksum(data, size));
  PutU64(h, HeaderChecksum(h.data(), id.key, id.etag));
  if (layout == BlockLayout::kHeaderInXattr) return h;  // key and etag: in the checksum only
  h.append(id.key);
  h.append(id.etag);
  return h;
}

const char* BlockCheckName(BlockCheck check) {
  switch (check) {
    case BlockCheck::kOk:
      return "ok";
    case BlockCheck::kTruncated:
      return "truncated";
    case BlockCheck::kBadHeader:
      return "bad header";
    case BlockCheck::kWrongBlock:
      return "header names another block";
    case BlockCheck::kWrongLength:
      return "unexpected length";
    case BlockCheck::kBadChecksum:
      return "data checksum mismatch";
  }
  return "?";
}

size_t BlockHeaderSize(const BlockId& id) {
  return kBlockFixedHeaderSize + id.key.size() + id.etag.size();
}

BlockCheck CheckBlock(std::string_view header, BlockLayout layout, uint64_t file_size,
                      std::string_view data, const BlockId& id, uint64_t expected_length) {
  if (header.size() < kBlockFixedHeaderSize) return BlockCheck::kTruncated;
  if (std::memcmp(header.data(), kMagic, sizeof(kMagic)) != 0) return BlockCheck::kBadHeader;
  if (GetLE(header, 8, 4) != VersionOf(layout)) return BlockCheck::kBadHeader;
  const uint64_t key_len = GetLE(header, 12, 4);
  const uint64_t etag_len = GetLE(header, 16, 4);
  const uint64_t index = GetLE(header, 24, 8);
  const uint64_t length = GetLE(header, 32, 8);
  const uint64_t data_sum = GetLE(header, 40, 8);
  const uint64_t header_sum = GetLE(header, 48, 8);
  if (layout == BlockLayout::kHeaderInXattr) {
    if (header.size() != kBlockFixedHeaderSize) return BlockCheck::kBadHeader;
    if (key_len != id.key.size() || etag_len != id.etag.size() || index != id.index) {
      return BlockCheck::kWrongBlock;
    }
    // The checksum covers the key and etag asked for: another block's header fails here.
    if (HeaderChecksum(header.data(), id.key, id.etag) != header_sum) {
      return BlockCheck::kBadHeader;
    }
  } else {
    const uint64_t names_end = kBlockFixedHeaderSize + key_len + etag_len;
    if (key_len != id.key.size() || etag_len != id.etag.size()) {
      return file_size < names_end ? BlockCheck::kTruncated : BlockCheck::kWrongBlock;
    }
    if (header.size() < names_end) return BlockCheck::kTruncated;
    if (HeaderChecksum(header.data(), header.substr(kBlockFixedHeaderSize, key_len),
                       header.substr(kBlockFixedHeaderSize + key_len, etag_len)) != header_sum) {
      return BlockCheck::kBadHeader;
    }
    if (header.substr(kBlockFixedHeaderSize, key_len) != id.key ||
        header.substr(kBlockFixedHeaderSize + key_len, etag_len) != id.etag || index != id.index) {
      return BlockCheck::kWrongBlock;
    }
  }
  // Where the block's bytes start in the file.
  const uint64_t data_offset = layout == BlockLayout::kHeaderInFile ? BlockHeaderSize(id) : 0;
  if (file_size < data_offset + length) return BlockCheck::kTruncated;
  if (file_size > data_offset + length) return BlockCheck::kBadHeader;  // trailing bytes
  if (length != expected_length) return BlockCheck::kWrongLength;
  if (data.size() != length) return BlockCheck::kTruncated;
  if (DataChecksum(data.data(), data.size()) != data_sum) return BlockCheck::kBadChecksum;
  return BlockCheck::kOk;
}

}  // namespace ossmount::data
