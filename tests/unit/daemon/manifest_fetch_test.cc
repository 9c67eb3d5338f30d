// FetchManifestObject (--manifest oss://BUCKET/KEY): a manifest read from the bucket with one
// HEAD and one pinned GET, never a LIST; missing, oversized and malformed objects fail with a
// message naming the URI and what to fix.
#include <catch2/catch.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "manifest_setup.h"
#include "support/fake_object_client.h"

using namespace ossmount;
using namespace std::chrono_literals;
using testing::FakeObjectClient;
using testing::Op;

namespace {

class FetchHarness {
 public:
  FetchHarness() : guard_(boost::asio::make_work_guard(io)) {
    fake = std::make_shared<FakeObjectClient>(io);
    threads_.emplace_back([this] { io.run(); });
  }
  ~FetchHarness() {
    guard_.reset();
    for (auto& t : threads_) t.join();
  }
  Result<meta::LoadedManifest> Fetch(const std::string& key, uint64_t max_bytes = 1 << 20) {
    return daemon::FetchManifestObject(*fake, key, "oss://bucket/" + key,
                                       meta::ManifestScope{"bucket", "data/"}, 30s, nullptr,
                                       max_bytes);
  }

  boost::asio::io_context io;
  std::shared_ptr<FakeObjectClient> fake;

 private:
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::vector<std::thread> threads_;
};

}  // namespace

TEST_CASE("A manifest object is read with one HEAD and one pinned GET, never a LIST") {
  FetchHarness h;
  const std::string etag = h.fake->PutObject("meta/train.tsv",
                                             "# made by ossmount-client manifest\n"
                                             "train/c1/a.jpg\t5\t\"E1\"\n"
                                             "train/c2/b.jpg\t7\t\"E2\"\tlabel\n",
                                             1700000123);
  auto loaded = h.Fetch("meta/train.tsv");
  REQUIRE(loaded.ok());
  CHECK(loaded->stats.entries == 2);
  CHECK(loaded->index->size() == 2);
  CHECK(loaded->mtime_sec == 1700000123);  // the entries' mtime is the object's
  CHECK(h.fake->count(Op::kHead) == 1);
  CHECK(h.fake->count(Op::kGet) == 1);
  CHECK(h.fake->count(Op::kList) == 0);
  auto requests = h.fake->requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[1].key == "meta/train.tsv");
  CHECK(requests[1].if_match == etag);  // the version whose size was checked
  CHECK(requests[1].offset == 0);
  CHECK(!requests[1].length);  // whole object: its CRC-64 is checked
}

TEST_CASE("A missing manifest object fails with kNotFound naming the URI") {
  FetchHarness h;
  auto loaded = h.Fetch("meta/none.tsv");
  REQUIRE(!loaded.ok());
  CHECK(loaded.status().code() == ErrorCode::kNotFound);
  CHECK_THAT(loaded.status().message(),
             Catch::Contains("manifest oss://bucket/meta/none.tsv: no such object"));
  CHECK(h.fake->count(Op::kGet) == 0);
}

TEST_CASE("A manifest object over the size limit fails before any byte is read") {
  FetchHarness h;
  h.fake->PutObject("big.tar", std::string(4096, 'x'));
  auto loaded = h.Fetch("big.tar", 4095);
  REQUIRE(!loaded.ok());
  CHECK(loaded.status().code() == ErrorCode::kTooBig);
  CHECK_THAT(loaded.status().message(), Catch::Contains("4096 bytes, more than a manifest may"));
  CHECK(h.fake->count(Op::kGet) == 0);
  CHECK(h.Fetch("big.tar", 4096).status().code() != ErrorCode::kTooBig);  // the limit itself
}

TEST_CASE("A malformed or empty manifest object fails with its bad lines") {
  FetchHarness h;
  h.fake->PutObject("bad.tsv",
                    "ok.jpg\t1\n"
                    "bad.jpg\tabc\n");
  auto loaded = h.Fetch("bad.tsv");
  REQUIRE(!loaded.ok());
  CHECK(loaded.status().code() == ErrorCode::kInvalidArgument);
  CHECK_THAT(loaded.status().message(), Catch::Contains("oss://bucket/bad.tsv"));
  CHECK_THAT(loaded.status().message(), Catch::Contains("line 2"));

  h.fake->PutObject("empty.tsv", "");
  auto empty = h.Fetch("empty.tsv");
  REQUIRE(!empty.ok());
  CHECK_THAT(empty.status().message(), Catch::Contains("empty"));
}
