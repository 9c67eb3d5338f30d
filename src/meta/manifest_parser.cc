#include "meta/manifest_parser.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "common/strings.h"

namespace ossmount::meta {

namespace {

struct ParsedLine {
  std::string_view key;  // relative to the mount prefix
  uint64_t size = ManifestIndex::kUnknownSize;
  std::string_view etag;  // unquoted; empty = none
};

// A key or field for an error message: printable, and short enough to read.
std::string Show(std::string_view s) {
  std::string out;
  for (unsigned char c : s.substr(0, 80)) {
    if (c < 0x20 || c == 0x7F) {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > 80) out += "...";
  return "'" + out + "'";
}

// Splits at `sep` into at most out.size() fields; returns the number of fields found
// (out.size() + 1 when there are more). No allocation: this runs once per manifest line.
template <size_t N>
size_t Split(std::string_view s, char sep, std::array<std::string_view, N>& out) {
  size_t n = 0;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    if (n == N) return N + 1;
    out[n++] = s.substr(start, p == std::string_view::npos ? std::string_view::npos : p - start);
    if (p == std::string_view::npos) return n;
    start = p + 1;
  }
}

// Fields separated by runs of spaces, leading and trailing spaces ignored (the connector's
// example parser strips the line and splits it on ' ').
std::vector<std::string_view> SplitSpaces(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    if (i == s.size()) break;
    size_t j = s.find(' ', i);
    if (j == std::string_view::npos) j = s.size();
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// Resolves a key field to a key relative to the mount prefix. Returns an error text or "".
std::string ResolveKey(std::string_view field, const ManifestScope& scope, std::string_view* key) {
  if (field.empty()) return "the key is empty";
  if (!IsValidUtf8(field)) return "the key is not valid UTF-8";
  std::string_view k = field;
  for (std::string_view scheme : {std::string_view("oss://"), std::string_view("s3://")}) {
    if (field.compare(0, scheme.size(), scheme) != 0) continue;
    std::string_view rest = field.substr(scheme.size());
    size_t slash = rest.find('/');
    std::string_view bucket = rest.substr(0, slash);
    if (bucket != scope.bucket) {
      return "the URI " + Show(field) + " names bucket " + Show(bucket) +
             ", but the mount is of bucket " + Show(scope.bucket);
    }
    std::string_view full = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
    if (full.compare(0, scope.mount_prefix.size(), scope.mount_prefix) != 0) {
      return "the URI " + Show(field) + " is outside the mounted prefix " +
             Show(scope.mount_prefix) + " (relative keys are relative to it)";
    }
    k = full.substr(scope.mount_prefix.size());
    if (k.empty()) return "the URI " + Show(field) + " names the mounted prefix, not an object";
    break;
  }
  if (scope.mount_prefix.size() + k.size() > kMaxKeyBytes) {
    return "the key " + Show(k) + " is longer than " + std::to_string(kMaxKeyBytes) +
           " bytes with the mounted prefix (the OSS limit)";
  }
  *key = k;
  return "";
}

std::string ParseSize(std::string_view field, uint64_t* size) {
  if (field.empty()) return "the size field is empty (expected decimal bytes)";
  uint64_t v = 0;
  for (char c : field) {
    if (c < '0' || c > '9') {
      return "the size " + Show(field) + " is not a decimal number of bytes";
    }
    if (v > (UINT64_MAX / 2 - 9) / 10) return "the size " + Show(field) + " is too large";
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *size = v;
  return "";
}

std::string ParseEtag(std::string_view field, std::string_view* etag) {
  std::string_view e = field;
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  if (e.size() > kMaxEtagBytes) {
    return "the etag is longer than " + std::to_string(kMaxEtagBytes) + " bytes";
  }
  for (unsigned char c : e) {
    if (c <= 0x20 || c >= 0x7F || c == '"') {
      return "the etag " + Show(field) +
             " has a character an etag cannot have (space, quote, control or non-ASCII)";
    }
  }
  *etag = e;
  return "";
}

// Parses one non-empty, non-comment line. Returns an error text or "".
std::string ParseLine(std::string_view line, const ManifestScope& scope, ParsedLine* out) {
  if (line.find('\t') != std::string_view::npos) {
    std::array<std::string_view, 4> f;
    size_t fields = Split(line, '\t', f);
    if (fields > 4) {
      return "too many tab-separated fields (" +
             std::to_string(std::count(line.begin(), line.end(), '\t') + 1) +
             "; expected KEY<TAB>SIZE[<TAB>ETAG[<TAB>LABEL]])";
    }
    if (std::string e = ResolveKey(f[0], scope, &out->key); !e.empty()) return e;
    if (fields < 2) return "no size after the tab (expected KEY<TAB>SIZE)";
    if (std::string e = ParseSize(f[1], &out->size); !e.empty()) return e;
    if (fields >= 3) {
      if (std::string e = ParseEtag(f[2], &out->etag); !e.empty()) return e;
    }
    return "";
  }
  std::vector<std::string_view> f = SplitSpaces(line);
  if (f.size() > 2) {
    return std::to_string(f.size()) +
           " space-separated fields: expected 'KEY' or 'KEY LABEL' (the connector form), or "
           "tab-separated KEY<TAB>SIZE[<TAB>ETAG[<TAB>LABEL]]";
  }
  return ResolveKey(f[0], scope, &out->key);
}

bool Blank(std::string_view line) {
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

}  // namespace

Result<ManifestIndex> ParseManifest(std::istream& in, std::string_view name,
                                    const ManifestScope& scope, ManifestStats* stats_out) {
  ManifestIndex::Builder builder;
  ManifestStats stats;
  std::vector<std::string> errors;
  uint64_t error_count = 0;
  auto report = [&](uint64_t line, const std::string& what) {
    ++error_count;
    if (errors.size() < kMaxReportedErrors) {
      errors.push_back("  line " + std::to_string(line) + ": " + what);
    }
  };

  std::string line;
  uint64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::string_view l = line;
    if (number == 1 && l.compare(0, 3, "\xEF\xBB\xBF") == 0) l.remove_prefix(3);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (Blank(l) || l.front() == '#') continue;
    if (number > UINT32_MAX) {
      report(number, "the manifest has more than 4294967295 lines");
      break;
    }
    ParsedLine parsed;
    if (std::string e = ParseLine(l, scope, &parsed); !e.empty()) {
      report(number, e);
      continue;
    }
    if (parsed.size == ManifestIndex::kUnknownSize) ++stats.without_size;
    if (parsed.etag.empty()) ++stats.without_etag;
    builder.Add(parsed.key, parsed.size, parsed.etag, static_cast<uint32_t>(number));
  }
  stats.lines = number;
  if (in.bad()) {
    return Status(
        ErrorCode::kInvalidArgument,
        "manifest " + std::string(name) + ": read error at line " + std::to_string(number + 1));
  }

  std::vector<ManifestIndex::Builder::Duplicate> duplicates;
  ManifestIndex index = builder.Finish(&duplicates);
  for (const auto& d : duplicates) {
    report(d.line, "the key " + Show(d.key) + " repeats line " + std::to_string(d.first_line));
  }
  if (error_count > 0) {
    std::string message = "manifest " + std::string(name) + ": " + std::to_string(error_count) +
                          (error_count == 1 ? " malformed line" : " malformed lines") + ":";
    for (const auto& e : errors) message += "\n" + e;
    if (error_count > errors.size()) {
      message += "\n  ... and " + std::to_string(error_count - errors.size()) + " more";
    }
    return Status(ErrorCode::kInvalidArgument, message);
  }
  if (index.size() == 0) {
    return Status(ErrorCode::kInvalidArgument,
                  "manifest " + std::string(name) +
                      ": no entries (every line is empty or a comment): check the file");
  }
  stats.entries = index.size();
  if (stats_out) *stats_out = stats;
  return index;
}

Result<LoadedManifest> LoadManifestFile(const std::string& path, const ManifestScope& scope) {
  std::vector<char> buffer(1 << 20);
  std::ifstream in;
  in.rdbuf()->pubsetbuf(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  in.open(path, std::ios::binary);
  if (!in) {
    return Status(ErrorCode::kInvalidArgument,
                  "manifest " + path + ": cannot open: " + std::strerror(errno));
  }
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return Status(ErrorCode::kInvalidArgument, "manifest " + path + ": is a directory");
  }
  LoadedManifest loaded;
  auto index = ParseManifest(in, path, scope, &loaded.stats);
  if (!index.ok()) return index.status();
  loaded.index = std::make_shared<const ManifestIndex>(std::move(*index));
  loaded.mtime_sec = static_cast<int64_t>(st.st_mtime);
  return loaded;
}

}  // namespace ossmount::meta
