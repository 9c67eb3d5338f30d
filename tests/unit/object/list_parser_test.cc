// ListObjectsV2 XML parsing: fields, url decoding, pagination tokens, malformed input.
#include <catch2/catch.hpp>

#include "common/url.h"
#include "object/error_mapping.h"
#include "object/list_parser.h"
#include "unit/object/harness.h"

using namespace ossmount;
using namespace ossmount::object;
using namespace ossmount::object::testing;

namespace {

std::string Contents(const std::string& key, const std::string& size = "10") {
  return "<Contents><Key>" + key +
         "</Key><LastModified>2023-10-12T02:03:53.000Z</LastModified>"
         "<ETag>&quot;5B3C1A2E053D763E1B002CC607C5A0FE&quot;</ETag><Type>Normal</Type><Size>" +
         size + "</Size><StorageClass>Standard</StorageClass></Contents>";
}

std::string Page(const std::string& inner, bool encoded = true) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult>\n  <Name>bkt</Name>\n" +
         std::string(encoded ? "  <EncodingType>url</EncodingType>\n" : "") + inner +
         "</ListBucketResult>";
}

}  // namespace

TEST_CASE("List page: objects with every field and common prefixes") {
  std::string xml = Page(
      "<Prefix>train%2F</Prefix><MaxKeys>1000</MaxKeys><Delimiter>%2F</Delimiter>"
      "<IsTruncated>false</IsTruncated><KeyCount>3</KeyCount>" +
      Contents("train%2Fa.jpg", "123456") +
      "<CommonPrefixes><Prefix>train%2Fcat%2F</Prefix></CommonPrefixes>"
      "<CommonPrefixes><Prefix>train%2Fdog%2F</Prefix></CommonPrefixes>");
  auto parsed = ParseListObjectsV2(xml);
  REQUIRE(parsed.ok());
  CHECK(parsed->url_encoded);
  CHECK(parsed->key_count == 3);
  const ListPage& page = parsed->page;
  CHECK_FALSE(page.truncated);
  CHECK(page.next_continuation_token.empty());
  REQUIRE(page.objects.size() == 1);
  CHECK(page.objects[0].key == "train/a.jpg");
  CHECK(page.objects[0].size == 123456);
  CHECK(page.objects[0].etag == "\"5B3C1A2E053D763E1B002CC607C5A0FE\"");
  CHECK(page.objects[0].mtime_sec == 1697076233);
  CHECK(page.objects[0].storage_class == "Standard");
  CHECK(page.common_prefixes == std::vector<std::string>{"train/cat/", "train/dog/"});
}

TEST_CASE("List page: url-decoding of spaces, '+', '%', unicode and control characters") {
  // Every awkward key, encoded the way OSS/S3 do with encoding-type=url (space as '+').
  std::vector<std::string> keys = {"a b.jpg",         "a+b.jpg",       "100%.txt",   "ü/日本語.png",
                                   "ctl\x01\x1f\x7f", "tab\tnl\ncr\r", "amp&lt<gt>", " "};
  std::string inner = "<IsTruncated>false</IsTruncated>";
  for (const auto& k : keys) {
    std::string enc = PercentEncode(k);
    // Spaces as '+', as AWS does.
    std::string plus;
    for (size_t i = 0; i < enc.size(); ++i) {
      if (enc.compare(i, 3, "%20") == 0) {
        plus += '+';
        i += 2;
      } else {
        plus += enc[i];
      }
    }
    inner += Contents(plus);
  }
  inner += "<CommonPrefixes><Prefix>dir+with%2Bplus%2F</Prefix></CommonPrefixes>";
  auto parsed = ParseListObjectsV2(Page(inner));
  REQUIRE(parsed.ok());
  REQUIRE(parsed->page.objects.size() == keys.size());
  for (size_t i = 0; i < keys.size(); ++i) CHECK(parsed->page.objects[i].key == keys[i]);
  CHECK(parsed->page.common_prefixes[0] == "dir with+plus/");
}

TEST_CASE("List page: without EncodingType keys are taken literally (s3rver)") {
  auto parsed = ParseListObjectsV2(
      Page("<IsTruncated>false</IsTruncated>" + Contents("a+b%20c &amp; d"), false));
  REQUIRE(parsed.ok());
  CHECK_FALSE(parsed->url_encoded);
  CHECK(parsed->page.objects[0].key == "a+b%20c & d");
}

TEST_CASE("List page: pagination token is decoded and required when truncated") {
  auto parsed = ParseListObjectsV2(
      Page("<IsTruncated>true</IsTruncated><NextContinuationToken>CgJh%2BYg%3D%3D</"
           "NextContinuationToken>" +
           Contents("a")));
  REQUIRE(parsed.ok());
  CHECK(parsed->page.truncated);
  CHECK(parsed->page.next_continuation_token == "CgJh+Yg==");

  auto missing = ParseListObjectsV2(Page("<IsTruncated>true</IsTruncated>" + Contents("a")));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == ErrorCode::kProtocol);
}

TEST_CASE("List page: malformed documents are protocol errors") {
  for (std::string bad :
       {std::string("not xml"), std::string("<Error><Code>x</Code></Error>"),
        Page(Contents("a", "12x")), Page(Contents("a", "")), Page(Contents("bad%zz")),
        Page(Contents("")), Page("<KeyCount>abc</KeyCount>"),
        Page("<Contents><Key>a</Key><Size>1</Size><LastModified>yesterday</LastModified></"
             "Contents>"),
        std::string("<ListBucketResult><Contents><Key>a</Key>")}) {
    INFO(bad);
    auto parsed = ParseListObjectsV2(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == ErrorCode::kProtocol);
  }
}

TEST_CASE("List page: a million nested elements cost no recursion, in listings and errors") {
  // pugixml's parser and its document's destructor are iterative: nesting, which a hostile
  // server chooses freely within the 16 MiB body limit, cannot overflow the stack.
  const std::size_t depth = 1'000'000;
  std::string nest;
  nest.reserve(depth * 7);
  for (std::size_t i = 0; i < depth; ++i) nest += "<a>";
  for (std::size_t i = 0; i < depth; ++i) nest += "</a>";
  auto parsed = ParseListObjectsV2(Page(nest + Contents("k")));
  REQUIRE(parsed.ok());
  REQUIRE(parsed->page.objects.size() == 1);
  CHECK(parsed->page.objects[0].key == "k");
  auto open = ParseListObjectsV2(Page(nest.substr(0, depth * 3)));
  CHECK(open.status().code() == ErrorCode::kProtocol);
  auto error = ParseErrorXml("<Error><Code>SlowDown</Code>" + nest + "</Error>");
  REQUIRE(error.has_value());
  CHECK(error->code == "SlowDown");
}

TEST_CASE("List page: empty listing") {
  auto parsed = ParseListObjectsV2(Page("<IsTruncated>false</IsTruncated><KeyCount>0</KeyCount>"));
  REQUIRE(parsed.ok());
  CHECK(parsed->page.objects.empty());
  CHECK(parsed->page.common_prefixes.empty());
  CHECK(parsed->key_count == 0);
}

TEST_CASE("Client List: sends the request, parses the page, follows tokens") {
  Harness h;
  h.executor->respond = [](const SeenRequest& r, int index) {
    if (index == 0) {
      CHECK(r.url.find("continuation-token") == std::string::npos);
      return FakeReply::Ok(
          Page("<IsTruncated>true</IsTruncated><NextContinuationToken>t%2B1"
               "</NextContinuationToken>" +
               Contents("k1")));
    }
    CHECK(r.url.find("continuation-token=t%2B1") != std::string::npos);
    return FakeReply::Ok(Page("<IsTruncated>false</IsTruncated>" + Contents("k2")));
  };
  ListRequest lr;
  lr.delimiter = "/";
  auto first = h.List(lr);
  REQUIRE(first.ok());
  CHECK(first->objects[0].key == "k1");
  REQUIRE(first->truncated);
  lr.continuation_token = first->next_continuation_token;
  CHECK(lr.continuation_token == "t+1");
  auto second = h.List(lr);
  REQUIRE(second.ok());
  CHECK(second->objects[0].key == "k2");
  CHECK_FALSE(second->truncated);
  CHECK(h.executor->seen()[0].url ==
        "https://bkt.oss-cn-hangzhou.aliyuncs.com/?list-type=2&delimiter=%2F&max-keys=1000&"
        "encoding-type=url");
}

TEST_CASE("ListObjects: Type Symlink marks a link") {
  std::string link = Contents("models%2Flatest", "0");
  link.replace(link.find("<Type>Normal</Type>"), 19, "<Type>Symlink</Type>");
  auto parsed = ParseListObjectsV2(Page(Contents("models%2Fa.bin") + link));
  REQUIRE(parsed.ok());
  REQUIRE(parsed->page.objects.size() == 2);
  CHECK_FALSE(parsed->page.objects[0].symlink);
  CHECK(parsed->page.objects[1].symlink);
  CHECK(parsed->page.objects[1].key == "models/latest");
}
