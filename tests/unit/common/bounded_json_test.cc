// ParseBoundedJson: nesting and size limits, error messages, parse flags.
#include "common/bounded_json.h"

#include <catch2/catch.hpp>
#include <string>

namespace ossmount {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::Equals;

// `depth` arrays nested in one another, closed when `closed`.
std::string NestedArrays(std::size_t depth, bool closed = true) {
  return std::string(depth, '[') + (closed ? std::string(depth, ']') : std::string());
}

}  // namespace

TEST_CASE("bounded json: a million nested '[' is refused by depth without recursing") {
  rapidjson::Document doc;
  const std::string deep = NestedArrays(1'000'000, /*closed=*/false);
  Status s = ParseBoundedJson(deep, {64u << 20}, &doc);
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == ErrorCode::kInvalidArgument);
  CHECK_THAT(s.message(), Equals("nested deeper than 32 levels at offset 32"));
  CHECK(doc.IsNull());

  // Closed, and with the limit raised past it: the iterative parser builds it on the heap,
  // and the Document's destructor frees it without visiting each level.
  {
    rapidjson::Document big;
    REQUIRE(ParseBoundedJson(NestedArrays(1'000'000), {64u << 20, 2'000'000}, &big).ok());
    CHECK(big.IsArray());
  }
}

TEST_CASE("bounded json: max_values counts every value, containers included") {
  rapidjson::Document doc;
  // [0,0,0] is 4 values: the array and three numbers.
  CHECK(ParseBoundedJson("[0,0,0]", {.max_bytes = 64, .max_values = 4}, &doc).ok());
  Status s = ParseBoundedJson("[0,0,0]", {.max_bytes = 64, .max_values = 3}, &doc);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.message(), Contains("more than 3 values at offset"));
  CHECK(doc.IsNull());
  CHECK(ParseBoundedJson(R"({"a":"b","c":[1,{}]})", {.max_bytes = 64, .max_values = 5}, &doc).ok());
  CHECK_FALSE(
      ParseBoundedJson(R"({"a":"b","c":[1,{}]})", {.max_bytes = 64, .max_values = 4}, &doc).ok());
  CHECK(ParseBoundedJson("[0,0,0]", {.max_bytes = 64}, &doc).ok());  // 0: no count limit
}

TEST_CASE("bounded json: nesting exactly at the limit is accepted, one more level is not") {
  rapidjson::Document doc;
  CHECK(ParseBoundedJson(NestedArrays(32), {1024}, &doc).ok());
  CHECK(doc.IsArray());
  Status s = ParseBoundedJson(NestedArrays(33), {1024}, &doc);
  CHECK_THAT(s.message(), Equals("nested deeper than 32 levels at offset 32"));

  // Objects count as levels too; scalars do not.
  CHECK(ParseBoundedJson(R"({"a":{"b":[1,"x",null]}})", {1024, 3}, &doc).ok());
  CHECK(std::string(doc["a"]["b"][1].GetString()) == "x");
  s = ParseBoundedJson(R"({"a":{"b":[{}]}})", {1024, 3}, &doc);
  CHECK_THAT(s.message(), Equals("nested deeper than 3 levels at offset 11"));
  CHECK(ParseBoundedJson("7", {1024, 0}, &doc).ok());
  CHECK(doc.GetInt() == 7);
  CHECK_FALSE(ParseBoundedJson("[]", {1024, 0}, &doc).ok());
}

TEST_CASE("bounded json: text over max_bytes is refused before parsing, naming the limit") {
  rapidjson::Document doc;
  const std::string text = R"({"command":"stats"})";  // 19 bytes
  CHECK(ParseBoundedJson(text, {text.size()}, &doc).ok());
  Status s = ParseBoundedJson(text, {text.size() - 1}, &doc);
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == ErrorCode::kInvalidArgument);
  CHECK_THAT(s.message(), Equals("19 bytes, over the 18-byte limit"));
  CHECK(doc.IsNull());
  // A default JsonLimits accepts nothing: a caller must choose its size.
  CHECK_FALSE(ParseBoundedJson("1", JsonLimits{}, &doc).ok());
}

TEST_CASE("bounded json: invalid JSON names the offset and RapidJSON's reason, never the text") {
  rapidjson::Document doc;
  Status s = ParseBoundedJson(R"({"secret": "SECRET-x",})", {1024}, &doc);
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == ErrorCode::kInvalidArgument);
  CHECK_THAT(s.message(), Equals("not valid JSON at offset 22: Missing a name for object member."));
  CHECK_THAT(s.message(), !Contains("SECRET"));
  CHECK(doc.IsNull());

  // Text of several lines: the line and column too.
  s = ParseBoundedJson("{\"endpoint\": \"x\",\n  \"region\" \"r\"}", {1024}, &doc);
  CHECK_THAT(s.message(), Equals("not valid JSON at line 2, column 12 (offset 29): Missing a "
                                 "colon after a name of object member."));

  CHECK_THAT(ParseBoundedJson("", {1024}, &doc).message(),
             Equals("not valid JSON at offset 0: The document is empty."));
  CHECK_THAT(ParseBoundedJson("[1] [2]", {1024}, &doc).message(),
             Contains("The document root must not be followed by other values."));
  // RapidJSON stops at a NUL byte: what follows one must not pass unseen.
  CHECK_THAT(ParseBoundedJson(std::string("{}\0{\"x\":1}", 10), {1024}, &doc).message(),
             Equals("not valid JSON at offset 2: The document root must not be followed by "
                    "other values."));
}

TEST_CASE("bounded json: comment and trailing-comma flags are passed through") {
  rapidjson::Document doc;
  const std::string commented = "// ossmount\n{\"a\": 1, /* why */ \"b\": [2,],}";
  CHECK_THAT(ParseBoundedJson(commented, {1024}, &doc).message(), Contains("not valid JSON"));
  CHECK_FALSE(ParseBoundedJson(commented, {1024}, &doc, rapidjson::kParseCommentsFlag).ok());
  REQUIRE(ParseBoundedJson(commented, {1024}, &doc,
                           rapidjson::kParseCommentsFlag | rapidjson::kParseTrailingCommasFlag)
              .ok());
  CHECK(doc["a"].GetInt() == 1);
  CHECK(doc["b"].Size() == 1);
  CHECK(ParseBoundedJson("[1,]", {1024}, &doc, rapidjson::kParseTrailingCommasFlag).ok());

  // The depth limit holds with the flags on as well.
  CHECK_THAT(ParseBoundedJson(NestedArrays(100'000, false), {1 << 20}, &doc,
                              rapidjson::kParseCommentsFlag | rapidjson::kParseTrailingCommasFlag)
                 .message(),
             Contains("nested deeper than 32 levels"));

  Status s = ParseBoundedJson("1", {1024}, &doc, rapidjson::kParseInsituFlag);
  CHECK(s.code() == ErrorCode::kInternal);
}

}  // namespace ossmount
