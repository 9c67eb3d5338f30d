// Endpoint parsing, URL and header building for both addressing styles and both
// protocols, and the signer choice.
#include <catch2/catch.hpp>

#include "object/endpoint.h"
#include "object/request_builder.h"
#include "object/signer_choice.h"
#include "unit/object/harness.h"

using namespace ossmount;
using namespace ossmount::object;
using namespace ossmount::object::testing;

TEST_CASE("ParseEndpoint accepts bare hosts, schemes and ports") {
  struct Case {
    const char* in;
    const char* scheme;
    const char* host;
    bool ip;
  } cases[] = {
      {"oss-cn-hangzhou.aliyuncs.com", "https", "oss-cn-hangzhou.aliyuncs.com", false},
      {"https://oss-cn-hangzhou.aliyuncs.com/", "https", "oss-cn-hangzhou.aliyuncs.com", false},
      {"HTTP://127.0.0.1:9000", "http", "127.0.0.1:9000", true},
      {"http://localhost:4568", "http", "localhost:4568", true},
      {"[::1]:9000", "https", "[::1]:9000", true},
      {"Example.COM:443", "https", "example.com:443", false},
  };
  for (const auto& c : cases) {
    INFO(c.in);
    auto ep = ParseEndpoint(c.in, "--endpoint");
    REQUIRE(ep.ok());
    CHECK(ep->scheme == c.scheme);
    CHECK(ep->host == c.host);
    CHECK(ep->ip_literal == c.ip);
  }
}

TEST_CASE("ParseEndpoint rejects paths, other schemes and bad ports, naming the option") {
  for (const char* bad : {"", "ftp://host", "http://host/path", "host?x=1", "user@host",
                          "host:", "host:99999", "host:12a", "http://", "ho st", "[::1"}) {
    INFO(bad);
    auto ep = ParseEndpoint(bad, "--data-endpoint");
    REQUIRE_FALSE(ep.ok());
    CHECK(ep.status().code() == ErrorCode::kInvalidArgument);
    CHECK(ep.status().message().find("--data-endpoint") != std::string::npos);
  }
}

TEST_CASE("ValidateBucketName applies OSS rules, looser S3 rules") {
  CHECK(ValidateBucketName("my-bucket-1", Protocol::kOss).ok());
  CHECK_FALSE(ValidateBucketName("My_Bucket", Protocol::kOss).ok());
  CHECK(ValidateBucketName("My_Bucket.x", Protocol::kS3).ok());
  CHECK_FALSE(ValidateBucketName("ab", Protocol::kOss).ok());
  CHECK_FALSE(ValidateBucketName("-abc", Protocol::kS3).ok());
  CHECK_FALSE(ValidateBucketName("abc-", Protocol::kOss).ok());
  CHECK_FALSE(ValidateBucketName(std::string(64, 'a'), Protocol::kOss).ok());
}

TEST_CASE("Virtual-hosted URL: bucket in the host, key encoded with '/' kept") {
  Endpoint ep = ParseEndpoint("oss-cn-beijing.aliyuncs.com", "e").value();
  RequestSpec spec = HeadSpec("dir/a b+c%d/é\x01.jpg");
  WireRequest w = BuildWireRequest(spec, ep, "bkt", false);
  CHECK(w.url == "https://bkt.oss-cn-beijing.aliyuncs.com/dir/a%20b%2Bc%25d/%C3%A9%01.jpg");
  CHECK(*FindHeader(w.signable.headers, "host") == "bkt.oss-cn-beijing.aliyuncs.com");
  CHECK(w.signable.path == "/dir/a b+c%d/é\x01.jpg");
  CHECK(w.signable.bucket == "bkt");
  CHECK(w.signable.key == "dir/a b+c%d/é\x01.jpg");
  CHECK(w.signable.method == "HEAD");
}

TEST_CASE("Path-style URL: bucket in the path, bucket-level requests without a slash") {
  Endpoint ep = ParseEndpoint("http://127.0.0.1:4568", "e").value();
  WireRequest obj = BuildWireRequest(HeadSpec("a/b c"), ep, "bkt", true);
  CHECK(obj.url == "http://127.0.0.1:4568/bkt/a/b%20c");
  CHECK(obj.signable.path == "/bkt/a/b c");
  CHECK(*FindHeader(obj.signable.headers, "Host") == "127.0.0.1:4568");

  ListRequest lr;
  WireRequest list = BuildWireRequest(ListSpec(lr), ep, "bkt", true);
  CHECK(list.url == "http://127.0.0.1:4568/bkt?list-type=2&max-keys=1000&encoding-type=url");
  CHECK(list.signable.path == "/bkt");
  WireRequest vlist = BuildWireRequest(ListSpec(lr), ep, "bkt", false);
  CHECK(vlist.url == "http://bkt.127.0.0.1:4568/?list-type=2&max-keys=1000&encoding-type=url");
  CHECK(vlist.signable.path == "/");
}

TEST_CASE("List query: prefix, delimiter, max-keys, token, encoding-type, all encoded") {
  ListRequest lr;
  lr.prefix = "train/cls 1/";
  lr.delimiter = "/";
  lr.max_keys = 2;
  lr.continuation_token = "tok+/=";
  RequestSpec spec = ListSpec(lr);
  CHECK(spec.method == "GET");
  CHECK(spec.key.empty());
  CHECK(EncodeQuery(spec.query) ==
        "list-type=2&prefix=train%2Fcls%201%2F&delimiter=%2F&max-keys=2&continuation-token="
        "tok%2B%2F%3D&encoding-type=url");
  // The signer sees decoded values.
  CHECK(spec.query[1] == auth::Params::value_type{"prefix", "train/cls 1/"});
}

TEST_CASE("GET headers: Range forms, If-Match, range behaviour only on OSS") {
  GetRequest whole;
  whole.key = "k";
  RequestSpec oss = GetSpec(whole, Dialect::For(Protocol::kOss));
  CHECK(FindHeader(oss.headers, "range") == nullptr);
  CHECK(*FindHeader(oss.headers, "x-oss-range-behavior") == "standard");
  RequestSpec s3 = GetSpec(whole, Dialect::For(Protocol::kS3));
  CHECK(FindHeader(s3.headers, "x-oss-range-behavior") == nullptr);
  CHECK(FindHeader(s3.headers, "if-match") == nullptr);

  GetRequest ranged = whole;
  ranged.offset = 100;
  ranged.length = 50;
  ranged.if_match = "\"etag1\"";
  RequestSpec r = GetSpec(ranged, Dialect::For(Protocol::kS3));
  CHECK(*FindHeader(r.headers, "range") == "bytes=100-149");
  CHECK(*FindHeader(r.headers, "if-match") == "\"etag1\"");
  CHECK(RangeHeaderValue(7, std::nullopt) == "bytes=7-");
  CHECK(RangeHeaderValue(0, 1) == "bytes=0-0");
  CHECK(RangeHeaderValue(0, std::nullopt).empty());
}

TEST_CASE("Multipart and write requests") {
  auto body = SharedBytes::Copy("data");
  RequestSpec put = PutSpec("k", body, {}, Dialect::For(Protocol::kOss));
  CHECK(put.method == "PUT");
  CHECK(*FindHeader(put.headers, "content-type") == "application/octet-stream");
  CHECK(put.body.data() == body.data());  // the same bytes, not a copy

  RequestSpec init = InitiateMultipartSpec("k", WriteOptions{}, Dialect::For(Protocol::kOss));
  CHECK(init.method == "POST");
  CHECK(EncodeQuery(init.query) == "uploads");

  RequestSpec part = UploadPartSpec("k", "id/1+", 3, body, Dialect::For(Protocol::kOss));
  CHECK(EncodeQuery(part.query) == "partNumber=3&uploadId=id%2F1%2B");

  RequestSpec complete =
      CompleteMultipartSpec("k", "U", {NumberedPart(1, "\"e1\""), NumberedPart(2, "\"e2\"")}, {},
                            Dialect::For(Protocol::kOss));
  CHECK(complete.method == "POST");
  CHECK(complete.body.view() ==
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&quot;e1&quot;</ETag>"
        "</Part><Part><PartNumber>2</PartNumber><ETag>&quot;e2&quot;</ETag></Part>"
        "</CompleteMultipartUpload>");
  CHECK(EncodeQuery(AbortMultipartSpec("k", "U").query) == "uploadId=U");
  CHECK(AbortMultipartSpec("k", "U").method == "DELETE");
  CHECK(DeleteSpec("k").method == "DELETE");
  CHECK(XmlEscape("a&<>\"'\t") == "a&amp;&lt;&gt;&quot;&apos;&#9;");
}

TEST_CASE("Signer choice: OSS V4 with a region, else V1 - S3 SigV4 defaulting to us-east-1") {
  ClientOptions o;
  o.protocol = Protocol::kOss;
  o.region = "cn-beijing";
  CHECK(ChooseSigner(o, false).kind == SignerKind::kOssV4);
  CHECK(ChooseSigner(o, false).region == "cn-beijing");
  o.data_signing_region = "cn-beijing-h";
  CHECK(ChooseSigner(o, true).region == "cn-beijing-h");
  CHECK(ChooseSigner(o, false).region == "cn-beijing");
  o.oss_signature = OssSignatureVersion::kV1;
  CHECK(ChooseSigner(o, false).kind == SignerKind::kOssV1);
  o.oss_signature = OssSignatureVersion::kV4;
  o.region.clear();
  o.data_signing_region.clear();
  CHECK(ChooseSigner(o, false).kind == SignerKind::kOssV1);
  o.protocol = Protocol::kS3;
  CHECK(ChooseSigner(o, false).kind == SignerKind::kAwsSigV4);
  CHECK(ChooseSigner(o, false).region == "us-east-1");
  o.region = "eu-west-1";
  CHECK(ChooseSigner(o, true).region == "eu-west-1");
}

TEST_CASE("Real signers put an Authorization header of the right scheme on the wire") {
  for (auto protocol : {Protocol::kOss, Protocol::kS3}) {
    for (const char* region : {"", "cn-hangzhou"}) {
      Harness h;
      h.options.protocol = protocol;
      h.options.region = region;
      h.signer = nullptr;
      ClientParts parts{h.executor, h.clock, MakeSigner(ChooseSigner(h.options, false)), nullptr};
      h.client = NewObjectClient(h.io, h.options, parts).value();
      h.executor->respond = [](const SeenRequest&, int) {
        return FakeReply::Ok("", {{"Content-Length", "0"}});
      };
      REQUIRE(h.Head("a b").ok());
      auto seen = h.executor->seen();
      REQUIRE(seen.size() == 1);
      const std::string* auth = seen[0].Header("authorization");
      REQUIRE(auth);
      std::string expect = protocol == Protocol::kS3 ? "AWS4-HMAC-SHA256 Credential=AK0/"
                           : *region                 ? "OSS4-HMAC-SHA256 Credential=AK0/"
                                                     : "OSS AK0:";
      INFO(*auth);
      CHECK(auth->rfind(expect, 0) == 0);
      CHECK(auth->find("SECRET") == std::string::npos);
      CHECK(seen[0].url == "https://bkt.oss-cn-hangzhou.aliyuncs.com/a%20b");
    }
  }
}

TEST_CASE("Client requests: path style forced for IP endpoints, Host and auth headers") {
  Harness h;
  h.options.endpoint = "http://127.0.0.1:9000";
  h.executor->respond = [](const SeenRequest&, int) {
    return FakeReply::Ok("", {{"Content-Length", "3"}});
  };
  REQUIRE(h.Head("x/y").ok());
  auto seen = h.executor->seen();
  CHECK(seen[0].url == "http://127.0.0.1:9000/bkt/x/y");
  CHECK(*seen[0].Header("host") == "127.0.0.1:9000");
  CHECK(seen[0].Header("authorization")->rfind("FAKE main AK0", 0) == 0);
  CHECK(h.signer->signed_requests()[0].path == "/bkt/x/y");
}

TEST_CASE("NewObjectClient validates the options") {
  {
    Harness h;
    h.options.bucket = "Bad_Bucket";
    auto made = NewObjectClient(h.io, h.options, {h.executor, h.clock, h.signer, nullptr});
    REQUIRE_FALSE(made.ok());
    CHECK(made.status().message().find("--bucket") != std::string::npos);
  }
  {
    Harness h;
    h.options.data_endpoint = "ftp://x";
    auto made = NewObjectClient(h.io, h.options, {h.executor, h.clock, h.signer, nullptr});
    REQUIRE_FALSE(made.ok());
    CHECK(made.status().message().find("--data-endpoint") != std::string::npos);
  }
  {
    Harness h;
    h.options.credentials = nullptr;
    auto made = NewObjectClient(h.io, h.options, {h.executor, h.clock, h.signer, nullptr});
    REQUIRE_FALSE(made.ok());
    CHECK(made.status().message().find("credentials") != std::string::npos);
  }
}
