#include "common/bounded_json.h"

#include <rapidjson/encodedstream.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <string>

namespace ossmount {
namespace {

// The Document's own SAX handler, behind a count of the arrays and objects open: a container
// that would open past the limit stops the parse (the reader reports kParseErrorTermination)
// before the Document builds anything for it.
class DepthLimitedHandler {
 public:
  using Ch = char;
  DepthLimitedHandler(rapidjson::Document& doc, std::size_t max_depth, std::size_t max_values)
      : doc_(doc), max_depth_(max_depth), max_values_(max_values) {}

  bool Null() { return Count() && doc_.Null(); }
  bool Bool(bool b) { return Count() && doc_.Bool(b); }
  bool Int(int i) { return Count() && doc_.Int(i); }
  bool Uint(unsigned u) { return Count() && doc_.Uint(u); }
  bool Int64(int64_t i) { return Count() && doc_.Int64(i); }
  bool Uint64(uint64_t u) { return Count() && doc_.Uint64(u); }
  bool Double(double d) { return Count() && doc_.Double(d); }
  bool RawNumber(const Ch* s, rapidjson::SizeType n, bool copy) {
    return Count() && doc_.RawNumber(s, n, copy);
  }
  bool String(const Ch* s, rapidjson::SizeType n, bool copy) {
    return Count() && doc_.String(s, n, copy);
  }
  bool Key(const Ch* s, rapidjson::SizeType n, bool copy) { return doc_.Key(s, n, copy); }
  bool StartObject() { return Open() && doc_.StartObject(); }
  bool EndObject(rapidjson::SizeType members) {
    --depth_;
    return doc_.EndObject(members);
  }
  bool StartArray() { return Open() && doc_.StartArray(); }
  bool EndArray(rapidjson::SizeType elements) {
    --depth_;
    return doc_.EndArray(elements);
  }

  bool too_deep() const { return too_deep_; }
  bool too_many() const { return too_many_; }

 private:
  bool Count() {
    if (max_values_ != 0 && ++values_ > max_values_) {
      too_many_ = true;
      return false;
    }
    return true;
  }
  bool Open() {
    if (!Count()) return false;
    if (depth_ >= max_depth_) {
      too_deep_ = true;
      return false;
    }
    ++depth_;
    return true;
  }

  rapidjson::Document& doc_;
  const std::size_t max_depth_;
  const std::size_t max_values_;
  std::size_t depth_ = 0;
  std::size_t values_ = 0;
  bool too_deep_ = false;
  bool too_many_ = false;
};

// "offset N", or "line L, column C (offset N)" in text of several lines (a config file).
std::string Position(std::string_view text, std::size_t offset) {
  if (text.find('\n') == std::string_view::npos) return "offset " + std::to_string(offset);
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column) + " (offset " +
         std::to_string(offset) + ")";
}

struct Outcome {
  rapidjson::ParseResult result;
  std::size_t end = 0;  // where the reader stopped
  bool too_deep = false;
  bool too_many = false;
};

template <unsigned kFlags>
Outcome Run(std::string_view text, const JsonLimits& limits, rapidjson::Document* doc) {
  Outcome out;
  auto generate = [&](rapidjson::Document& handler) {
    rapidjson::MemoryStream bytes(text.empty() ? "" : text.data(), text.size());
    rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> in(bytes);
    DepthLimitedHandler limited(handler, limits.max_depth, limits.max_values);
    rapidjson::Reader reader;
    out.result = reader.Parse<kFlags | rapidjson::kParseIterativeFlag>(in, limited);
    out.end = in.Tell();
    out.too_deep = limited.too_deep();
    out.too_many = limited.too_many();
    return !out.result.IsError();
  };
  // Populate runs the generator with the Document as the handler and, when it succeeds,
  // moves the one value built into the Document; on failure it discards what was built.
  doc->Populate(generate);
  return out;
}

}  // namespace

Status ParseBoundedJson(std::string_view text, const JsonLimits& limits, rapidjson::Document* doc,
                        unsigned extra_flags) {
  doc->SetNull();
  if (text.size() > limits.max_bytes) {
    return Status(ErrorCode::kInvalidArgument, std::to_string(text.size()) + " bytes, over the " +
                                                   std::to_string(limits.max_bytes) +
                                                   "-byte limit");
  }
  constexpr unsigned kComments = rapidjson::kParseCommentsFlag;
  constexpr unsigned kTrailing = rapidjson::kParseTrailingCommasFlag;
  if ((extra_flags & ~(kComments | kTrailing)) != 0) {
    return Status(ErrorCode::kInternal,
                  "ParseBoundedJson: unsupported parse flags " + std::to_string(extra_flags));
  }
  // Parse flags are template arguments: one instantiation per combination allowed.
  Outcome out;
  switch (extra_flags) {
    case 0:
      out = Run<0>(text, limits, doc);
      break;
    case kComments:
      out = Run<kComments>(text, limits, doc);
      break;
    case kTrailing:
      out = Run<kTrailing>(text, limits, doc);
      break;
    default:
      out = Run<kComments | kTrailing>(text, limits, doc);
      break;
  }
  if (out.too_deep) {
    doc->SetNull();
    return Status(ErrorCode::kInvalidArgument,
                  "nested deeper than " + std::to_string(limits.max_depth) + " levels at " +
                      Position(text, out.result.Offset()));
  }
  if (out.too_many) {
    doc->SetNull();
    return Status(ErrorCode::kInvalidArgument, "more than " + std::to_string(limits.max_values) +
                                                   " values at " +
                                                   Position(text, out.result.Offset()));
  }
  rapidjson::ParseErrorCode code = out.result.Code();
  std::size_t offset = out.result.Offset();
  if (code == rapidjson::kParseErrorNone && out.end < text.size()) {
    // The reader stopped at a NUL byte: whatever follows it was never looked at.
    code = rapidjson::kParseErrorDocumentRootNotSingular;
    offset = out.end;
  }
  if (code != rapidjson::kParseErrorNone) {
    doc->SetNull();
    return Status(ErrorCode::kInvalidArgument, "not valid JSON at " + Position(text, offset) +
                                                   ": " + rapidjson::GetParseError_En(code));
  }
  return Status::Ok();
}

}  // namespace ossmount
