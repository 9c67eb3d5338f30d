// A client wired to the fakes, plus Call(), which runs one asynchronous operation to
// completion and checks the handler contract: not called inline, called exactly once.
#pragma once

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "common/crc64.h"
#include "object/object_client_impl.h"
#include "unit/object/fakes.h"

namespace ossmount::object::testing {

struct Harness {
  Harness() {
    options.protocol = Protocol::kOss;
    options.bucket = "bkt";
    options.endpoint = "https://oss-cn-hangzhou.aliyuncs.com";
    options.region = "cn-hangzhou";
    options.credentials = creds;
    executor->respond = [](const SeenRequest&, int) { return FakeReply::Ok(""); };
  }

  void Build() {
    ClientParts parts{executor, clock, signer, data_signer};
    auto made = NewObjectClient(io, options, parts);
    REQUIRE(made.ok());
    client = made.value();
  }

  ObjectClient& Client() {
    if (!client) Build();
    return *client;
  }

  // Starts an operation with a handler taking T and returns what the handler received.
  template <typename T, typename Start>
  T Call(Start start) {
    int calls = 0;
    std::optional<T> out;
    start([&](T value) {
      ++calls;
      out.emplace(std::move(value));
    });
    CHECK(calls == 0);  // never inline
    io.restart();
    io.run();
    REQUIRE(calls == 1);  // exactly once
    return std::move(*out);
  }

  Result<GetResult> Get(GetRequest request, GetTarget target) {
    return Call<Result<GetResult>>([&](auto h) { Client().Get(request, target, std::move(h)); });
  }
  Result<ListPage> List(ListRequest request) {
    return Call<Result<ListPage>>([&](auto h) { Client().List(request, std::move(h)); });
  }
  Result<ObjectInfo> Head(const std::string& key) {
    return Call<Result<ObjectInfo>>([&](auto h) { Client().Head(key, std::move(h)); });
  }

  boost::asio::io_context io;
  std::shared_ptr<FakeExecutor> executor = std::make_shared<FakeExecutor>(io);
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>(io);
  std::shared_ptr<RecordingSigner> signer = std::make_shared<RecordingSigner>("main");
  std::shared_ptr<RecordingSigner> data_signer = std::make_shared<RecordingSigner>("data");
  std::shared_ptr<FakeCredentials> creds = std::make_shared<FakeCredentials>();
  ClientOptions options;
  std::shared_ptr<ObjectClient> client;
};

// A part as CompleteMultipart takes it, for tests that need only its number and ETag.
inline PartInfo NumberedPart(int part_number, std::string etag) {
  PartInfo part;
  part.part_number = part_number;
  part.etag = std::move(etag);
  return part;
}

// The body of a good GET, its CRC-64 as OSS reports it, and a 200 carrying it.
inline const std::string kGoodBody = "The quick brown fox jumps over the lazy dog";

inline std::string Crc(const std::string& s) {
  return std::to_string(Crc64(0, s.data(), s.size()));
}

inline FakeReply GoodGet() {
  return FakeReply::Ok(kGoodBody, {{"Content-Length", std::to_string(kGoodBody.size())},
                                   {"ETag", "\"e1\""},
                                   {"Last-Modified", "Fri, 04 Mar 2022 02:46:25 GMT"},
                                   {"x-oss-hash-crc64ecma", Crc(kGoodBody)}});
}

}  // namespace ossmount::object::testing
