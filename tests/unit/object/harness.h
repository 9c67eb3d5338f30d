// A client wired to the fakes, plus Call(), which runs one asynchronous operation to
// completion and checks the handler contract: not called inline, called exactly once.
#pragma once

#include <catch2/catch.hpp>
#include <optional>

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

}  // namespace ossmount::object::testing
