// A write whose answer was lost: the retry is refused because the first attempt succeeded
// (Complete: NoSuchUpload; forbid-overwrite: already exists). The client HEADs the key and
// reports success only when the object there is the one it sent.
#include <catch2/catch.hpp>

#include "object/content_md5.h"
#include "unit/object/harness.h"

using namespace ossmount;
using namespace ossmount::object;
using namespace ossmount::object::testing;

namespace {

constexpr const char* kHostL = "https://bkt.oss-cn-hangzhou.aliyuncs.com";

const std::string kPart1L(200, 'x');
const std::string kPart2L = "the last part";

PartInfo PartL(int n, const std::string& data, std::string etag) {
  PartInfo p;
  p.part_number = n;
  p.etag = std::move(etag);
  p.size = data.size();
  p.crc64 = Crc64(0, data.data(), data.size());
  return p;
}

std::vector<PartInfo> PartsL() {
  return {PartL(1, kPart1L, "\"" + HexLower(Md5(kPart1L)) + "\""),
          PartL(2, kPart2L, "\"" + HexLower(Md5(kPart2L)) + "\"")};
}

std::string WholeL() { return kPart1L + kPart2L; }

FakeReply HeadL(uint64_t size, std::optional<std::string> crc, std::string etag = "\"final\"") {
  http::HeaderList headers = {{"Content-Length", std::to_string(size)}, {"ETag", etag}};
  if (crc) headers.emplace_back("x-oss-hash-crc64ecma", *crc);
  return FakeReply::Ok("", headers);
}

// Complete's first answer is lost (connection reset), its retry says `retry_answer`, and
// the HEAD that follows says `head`.
void LoseFirstCompleteL(Harness& h, FakeReply retry_answer, FakeReply head) {
  h.executor->respond = [retry_answer, head](const SeenRequest& r, int i) {
    if (r.method == "HEAD") return head;
    return i == 0 ? FakeReply::Transport(ErrorCode::kNetwork) : retry_answer;
  };
}

Result<PutResult> CompleteL(Harness& h, WriteOptions options = {}) {
  return h.Call<Result<PutResult>>(
      [&](auto cb) { h.Client().CompleteMultipart("ck/model.pt", "U1", PartsL(), options, cb); });
}

}  // namespace

TEST_CASE("Lost Complete answer: the object there is the one sent - success from the HEAD") {
  Harness h;
  // The HEAD goes to the main endpoint: an accelerator may not have seen the write yet.
  h.options.data_endpoint = "http://accelerator.internal:8080";
  LoseFirstCompleteL(h, FakeReply::Error(404, "NoSuchUpload"),
                     HeadL(WholeL().size(), Crc(WholeL())));
  auto done = CompleteL(h);
  REQUIRE(done.ok());
  CHECK(done->etag == "\"final\"");
  CHECK(done->crc64 == Crc64(0, WholeL().data(), WholeL().size()));
  auto seen = h.executor->seen();
  REQUIRE(seen.size() == 3);
  CHECK(seen[1].method == "POST");
  CHECK(seen[2].method == "HEAD");
  CHECK(seen[2].url == std::string(kHostL) + "/ck/model.pt");
}

TEST_CASE("Lost Complete answer: no object at the key - the outcome is unknown, kIntegrity") {
  Harness h;
  LoseFirstCompleteL(h, FakeReply::Error(404, "NoSuchUpload"), FakeReply::Error(404, ""));
  auto done = CompleteL(h);
  REQUIRE_FALSE(done.ok());
  CHECK(done.status().code() == ErrorCode::kIntegrity);
  CHECK_FALSE(done.status().retryable());
  CHECK(done.status().message() ==
        "CompleteMultipartUpload of 'ck/model.pt': the answer was lost and the outcome of the "
        "upload is unknown: there is no object at 'ck/model.pt'");
  CHECK(h.executor->count() == 3);
}

TEST_CASE("Lost Complete answer: another object at the key - kIntegrity, never success") {
  SECTION("another size") {
    Harness h;
    LoseFirstCompleteL(h, FakeReply::Error(404, "NoSuchUpload"),
                       HeadL(WholeL().size() + 1, Crc(WholeL())));
    auto done = CompleteL(h);
    CHECK(done.status().code() == ErrorCode::kIntegrity);
    CHECK(done.status().message().find("has " + std::to_string(WholeL().size() + 1) + " bytes") !=
          std::string::npos);
  }
  SECTION("the same size, another CRC-64") {
    Harness h;
    std::string other = WholeL();
    other[5] ^= 1;
    LoseFirstCompleteL(h, FakeReply::Error(404, "NoSuchUpload"), HeadL(other.size(), Crc(other)));
    auto done = CompleteL(h);
    CHECK(done.status().code() == ErrorCode::kIntegrity);
    CHECK(done.status().message().find("outcome of the upload is unknown") != std::string::npos);
  }
  SECTION("the same size, no CRC-64 to compare (OSS)") {
    Harness h;
    LoseFirstCompleteL(h, FakeReply::Error(404, "NoSuchUpload"), HeadL(WholeL().size(), {}));
    CHECK(CompleteL(h).status().code() == ErrorCode::kIntegrity);
  }
  SECTION("the HEAD itself fails") {
    Harness h;
    LoseFirstCompleteL(h, FakeReply::Error(404, "NoSuchUpload"),
                       FakeReply::Error(403, "AccessDenied"));
    auto done = CompleteL(h);
    CHECK(done.status().code() == ErrorCode::kIntegrity);
    CHECK(done.status().message().find("checking the object at 'ck/model.pt' failed") !=
          std::string::npos);
  }
}

TEST_CASE("Lost Complete answer on S3: the multipart ETag decides when there is no CRC-64") {
  std::vector<std::string> etags;
  for (const PartInfo& p : PartsL()) etags.push_back(p.etag);
  const std::string multipart = *S3MultipartEtag(etags);
  for (bool same : {true, false}) {
    INFO("same etag " << same);
    Harness h;
    h.options.protocol = Protocol::kS3;
    LoseFirstCompleteL(h, FakeReply::Error(404, "NoSuchUpload"),
                       HeadL(WholeL().size(), {}, same ? multipart : "\"0123-2\""));
    auto done = CompleteL(h);
    if (same) {
      REQUIRE(done.ok());
      CHECK(done->etag == multipart);
    } else {
      CHECK(done.status().code() == ErrorCode::kIntegrity);
    }
  }
}

TEST_CASE("NoSuchUpload on the first Complete attempt is checked with a HEAD too") {
  // libcurl sends a request again on a fresh connection when the reused one was reset before
  // any answer, so the client's "first" attempt may meet its own completed upload.
  SECTION("no object there: the upload's outcome is unknown, and the Complete failed") {
    Harness h;
    h.executor->respond = [](const SeenRequest&, int) {
      return FakeReply::Error(404, "NoSuchUpload");
    };
    auto done = CompleteL(h);
    REQUIRE_FALSE(done.ok());
    CHECK(done.status().code() == ErrorCode::kIntegrity);
    CHECK(h.executor->count() == 2);
  }
  SECTION("the object sent is there: success") {
    Harness h;
    h.executor->respond = [](const SeenRequest& r, int) {
      if (r.method == "HEAD") return HeadL(WholeL().size(), Crc(WholeL()));
      return FakeReply::Error(404, "NoSuchUpload");
    };
    auto done = CompleteL(h);
    REQUIRE(done.ok());
    CHECK(h.executor->count() == 2);
  }
}

TEST_CASE("A Complete answer whose CRC-64 is not the parts' combined one is kIntegrity") {
  Harness h;
  h.executor->respond = [](const SeenRequest&, int) {
    return FakeReply::Ok(
        "<CompleteMultipartUploadResult><ETag>\"w\"</ETag></CompleteMultipartUploadResult>",
        {{"x-oss-hash-crc64ecma", Crc(WholeL() + "!")}});
  };
  auto done = CompleteL(h);
  REQUIRE_FALSE(done.ok());
  CHECK(done.status().code() == ErrorCode::kIntegrity);
  CHECK_FALSE(done.status().retryable());
  CHECK(done.status().message().find("combine to " + Crc(WholeL())) != std::string::npos);
  CHECK(h.executor->count() == 1);
}

TEST_CASE("Lost forbid-overwrite Complete: already exists on the retry, and it is ours") {
  Harness h;
  WriteOptions no_replace;
  no_replace.forbid_overwrite = true;
  LoseFirstCompleteL(h, FakeReply::Error(409, "FileAlreadyExists"),
                     HeadL(WholeL().size(), Crc(WholeL())));
  REQUIRE(CompleteL(h, no_replace).ok());
  CHECK(h.executor->count() == 3);
}

TEST_CASE("Lost forbid-overwrite PUT: the retry's already exists is settled by a HEAD") {
  auto body = SharedBytes::Copy("checkpoint");
  WriteOptions no_replace;
  no_replace.forbid_overwrite = true;
  for (bool ours : {true, false}) {
    INFO("ours " << ours);
    Harness h;
    const std::string there = ours ? std::string(body.view()) : std::string("checkpoinT");
    h.executor->respond = [there](const SeenRequest& r, int i) {
      if (r.method == "HEAD") return HeadL(there.size(), Crc(there));
      return i == 0 ? FakeReply::Transport(ErrorCode::kNetwork)
                    : FakeReply::Error(409, "FileAlreadyExists");
    };
    auto put =
        h.Call<Result<PutResult>>([&](auto cb) { h.Client().Put("ck/a", body, no_replace, cb); });
    CHECK(h.executor->count() == 3);
    if (ours) {
      REQUIRE(put.ok());
      CHECK(put->etag == "\"final\"");
    } else {
      // Someone else's object is there: the refusal stands.
      CHECK(put.status().code() == ErrorCode::kAlreadyExists);
    }
  }
}

TEST_CASE("A forbid-overwrite PUT refused on its first attempt is kAlreadyExists at once") {
  Harness h;
  h.executor->respond = [](const SeenRequest&, int) {
    return FakeReply::Error(409, "FileAlreadyExists");
  };
  WriteOptions no_replace;
  no_replace.forbid_overwrite = true;
  auto put = h.Call<Result<PutResult>>(
      [&](auto cb) { h.Client().Put("ck/a", SharedBytes::Copy("x"), no_replace, cb); });
  CHECK(put.status().code() == ErrorCode::kAlreadyExists);
  CHECK(h.executor->count() == 1);
}
