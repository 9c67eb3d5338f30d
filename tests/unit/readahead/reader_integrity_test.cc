// The whole-object CRC-64 check of large files (PartCrcFold, SequentialReader): a reader that
// gets an object from offset 0 to its end has its parts' CRC-64s combined in order and
// compared with the object's; a damaged part fails the read reaching the end with EIO.
//
// Keys are unique to each test: a version that failed the check is remembered for the whole
// process (its disk-cache blocks are skipped), and the fake's etags repeat across harnesses.
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <map>
#include <set>
#include <sstream>

#include "common/crc64.h"
#include "common/metrics.h"
#include "ossmount/forwarding_object_client.h"
#include "readahead/part_crc_fold.h"
#include "reader_harness.h"

using namespace readaheadtest;

namespace {

uint64_t CrcOfString(const std::string& s) { return Crc64(0, s.data(), s.size()); }

// An ObjectClient in front of the FakeObjectClient that damages one byte of every GET body
// covering `damage_at` (headers, including the whole object's CRC-64, stay right, as a
// broken server or proxy would send them), and holds the completions of GETs at chosen
// offsets until the test releases them (parts completing out of order).
class DamagingClient : public ForwardingObjectClient,
                       public std::enable_shared_from_this<DamagingClient> {
 public:
  DamagingClient(boost::asio::io_context& io, std::shared_ptr<FakeObjectClient> inner)
      : ForwardingObjectClient(std::move(inner)), io_(io) {}

  void Damage(std::optional<uint64_t> at) {
    std::lock_guard lock(mu_);
    damage_at_ = at;
  }
  void Hold(uint64_t offset) {
    std::lock_guard lock(mu_);
    hold_.insert(offset);
  }
  // Delivers the held completion of the GET at `offset` (waiting for it to be held first),
  // on an io thread as a client would.
  void Release(uint64_t offset) {
    REQUIRE(Eventually([&] {
      std::lock_guard lock(mu_);
      return held_.count(offset) > 0;
    }));
    std::function<void()> deliver;
    {
      std::lock_guard lock(mu_);
      hold_.erase(offset);
      deliver = std::move(held_[offset]);
      held_.erase(offset);
    }
    boost::asio::post(io_, std::move(deliver));
  }
  // GET completions delivered to the reader at `offset`.
  int delivered(uint64_t offset) const {
    std::lock_guard lock(mu_);
    auto it = delivered_.find(offset);
    return it == delivered_.end() ? 0 : it->second;
  }

  void Get(const GetRequest& request, GetTarget target, GetHandler handler) override {
    inner()->Get(request, target,
                 [self = shared_from_this(), request, target,
                  handler = std::move(handler)](Result<GetResult> r) mutable {
                   std::function<void()> deliver;
                   {
                     std::lock_guard lock(self->mu_);
                     if (r.ok() && target.data && self->damage_at_ &&
                         *self->damage_at_ >= request.offset &&
                         *self->damage_at_ < request.offset + r->bytes) {
                       target.data[*self->damage_at_ - request.offset] ^= 0x5A;
                     }
                     deliver = [self, offset = request.offset, handler = std::move(handler),
                                r = std::move(r)]() {
                       {
                         std::lock_guard lock(self->mu_);
                         ++self->delivered_[offset];
                       }
                       handler(r);
                     };
                     if (self->hold_.count(request.offset)) {
                       self->held_[request.offset] = std::move(deliver);
                       return;
                     }
                   }
                   deliver();
                 });
  }

 private:
  boost::asio::io_context& io_;
  mutable std::mutex mu_;
  std::optional<uint64_t> damage_at_;
  std::set<uint64_t> hold_;
  std::map<uint64_t, std::function<void()>> held_;
  std::map<uint64_t, int> delivered_;
};

// Captures what is logged through spdlog's default logger while it lives.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("integrity-test", sink));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  // Read once what was to be logged has been (the warning is logged before the failing read
  // is answered).
  std::string text() {
    spdlog::default_logger()->flush();
    return out_.str();
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

uint64_t CrcChecks(const char* result) {
  return metrics::Registry::Global()
      .GetCounter("ossmount_object_crc_checks_total", "", {{"result", result}})
      .Value();
}

struct IntegrityFixture {
  Harness h;
  std::shared_ptr<DamagingClient> client = std::make_shared<DamagingClient>(h.io, h.fake);
  std::shared_ptr<MemoryBlockCache> disk;  // set before Open() to use one

  std::shared_ptr<SequentialReader> Open(const std::string& key, ReaderOptions o = SmallParts()) {
    auto info = h.fake->Info(key);
    REQUIRE(info);
    o.clock = h.clock.Function();
    return std::make_shared<SequentialReader>(h.io, client, key, info->size, info->etag, o,
                                              SharedReadState{h.budget, h.slots, disk});
  }
};

// Reads the whole object in 128 KiB reads from offset 0: what every read before the last
// returned, and the last read's result.
struct WholeRead {
  std::string before_last;
  Result<std::string> last = Status(ErrorCode::kInternal, "not read");
};
WholeRead ReadInOrder(SequentialReader& reader, uint64_t size, uint64_t chunk = 128 * KiB) {
  WholeRead out;
  for (uint64_t off = 0; off < size; off += chunk) {
    auto r = Harness::Read(reader, off, chunk);
    if (off + chunk >= size) {
      out.last = r;
      break;
    }
    REQUIRE(r.ok());
    out.before_last += *r;
  }
  return out;
}

void CloseAndDrain(IntegrityFixture& f, const std::shared_ptr<SequentialReader>& reader) {
  reader->Close();
  CHECK(Eventually([&] { return f.h.budget->used() == 0 && f.h.fake->in_flight() == 0; }));
}

}  // namespace

TEST_CASE("PartCrcFold combines parts recorded in any order and compares the result") {
  const std::string data = Content(3 * MiB + 1000, 70);
  const uint64_t part = 1 * MiB;
  auto crc_of_part = [&](uint64_t i, const std::string& d) {
    return CrcOfString(d.substr(i * part, part));
  };
  SECTION("in order and out of order, the same verdict") {
    for (const std::vector<uint64_t>& order :
         {std::vector<uint64_t>{0, 1, 2, 3}, {3, 1, 2, 0}, {1, 0, 3, 2}}) {
      PartCrcFold fold(data.size(), part, 8, std::nullopt);
      fold.SetExpected(CrcOfString(data));
      fold.Arm();
      PartCrcFold::Outcome last;
      for (uint64_t i : order) {
        CHECK(last.verdict == PartCrcFold::Verdict::kOpen);
        CHECK(fold.Wants(i));
        last = fold.Add(i, crc_of_part(i, data));
      }
      CHECK(last.verdict == PartCrcFold::Verdict::kMatch);
      CHECK(last.computed == CrcOfString(data));
      CHECK_FALSE(fold.armed());
    }
  }
  SECTION("a damaged part is a mismatch; a part fetched again replaces its CRC") {
    std::string damaged = data;
    damaged[part + 5] ^= 1;
    PartCrcFold fold(data.size(), part, 8, CrcOfString(data));
    fold.Arm();
    fold.Add(2, crc_of_part(2, data));
    fold.Add(2, crc_of_part(2, damaged));  // the later bytes are the ones the reader got
    fold.Add(0, crc_of_part(0, data));
    CHECK(fold.next() == 1);
    fold.Add(1, crc_of_part(1, damaged));
    CHECK(fold.next() == 3);
    auto outcome = fold.Add(3, crc_of_part(3, damaged));
    CHECK(outcome.verdict == PartCrcFold::Verdict::kMismatch);
    CHECK(outcome.computed == CrcOfString(damaged));
  }
  SECTION("nothing is recorded before Arm(); no CRC known: kUnknown") {
    PartCrcFold fold(data.size(), part, 8, std::nullopt);
    CHECK_FALSE(fold.Wants(0));
    CHECK(fold.Add(0, crc_of_part(0, data)).verdict == PartCrcFold::Verdict::kOpen);
    CHECK_FALSE(fold.Recorded(0));
    fold.Arm();
    for (uint64_t i = 0; i < 3; ++i) fold.Add(i, crc_of_part(i, data));
    CHECK(fold.Add(3, crc_of_part(3, data)).verdict == PartCrcFold::Verdict::kUnknown);
  }
  SECTION("too many parts waiting beyond a gap: abandoned") {
    PartCrcFold fold(data.size(), part, 1, CrcOfString(data));
    fold.Arm();
    CHECK(fold.Add(2, 1).verdict == PartCrcFold::Verdict::kOpen);
    CHECK(fold.Add(3, 1).verdict == PartCrcFold::Verdict::kAbandoned);
    CHECK_FALSE(fold.armed());
    CHECK_FALSE(fold.Recorded(2));
  }
  SECTION("a GET without the header and no CRC known: disarmed until a CRC is known") {
    PartCrcFold fold(data.size(), part, 8, std::nullopt);
    fold.Arm();
    fold.NoteNoCrc();
    CHECK_FALSE(fold.armed());
    fold.Arm();
    CHECK_FALSE(fold.armed());
    fold.SetExpected(CrcOfString(data));
    fold.Arm();
    CHECK(fold.armed());
    // A CRC from the metadata stays when a GET comes without the header.
    PartCrcFold known(data.size(), part, 8, CrcOfString(data));
    known.Arm();
    known.NoteNoCrc();
    CHECK(known.armed());
    // A GET's CRC replaces the metadata's; a later GET's does not replace it.
    known.SetExpected(7);
    known.SetExpected(8);
    CHECK(known.expected() == 7u);
  }
}

TEST_CASE("A large file read from 0 to its end with a damaged part fails at the end with EIO") {
  IntegrityFixture f;
  const std::string data = Content(5 * MiB + 321, 71);
  f.h.fake->PutObject("integrity/damaged", data);
  const uint64_t damage_at = 2 * MiB + 77;
  f.client->Damage(damage_at);
  std::string damaged = data;
  damaged[damage_at] ^= 0x5A;
  const uint64_t mismatches = CrcChecks("mismatch");
  LogCapture log;
  auto reader = f.Open("integrity/damaged");

  WholeRead read = ReadInOrder(*reader, data.size());
  // Every read before the end got the bytes as sent, the damaged one included: a ranged GET
  // has nothing to check them against.
  CHECK(read.before_last == damaged.substr(0, read.before_last.size()));
  REQUIRE_FALSE(read.last.ok());
  CHECK(read.last.status().code() == ErrorCode::kIntegrity);
  CHECK(read.last.status().ToErrno() == EIO);
  CHECK(CrcChecks("mismatch") == mismatches + 1);
  const std::string text = log.text();
  CHECK(text.find("CRC-64 mismatch") != std::string::npos);
  CHECK(text.find("integrity/damaged") != std::string::npos);
  CHECK(text.find(std::to_string(CrcOfString(data))) != std::string::npos);
  CHECK(text.find(std::to_string(CrcOfString(damaged))) != std::string::npos);
  CHECK(read.last.status().message().find(std::to_string(CrcOfString(damaged))) !=
        std::string::npos);

  // A read reaching the end fails again (the kernel asks again for pages whose readahead
  // failed), one before it does not and gets fresh bytes.
  const uint64_t gets = f.h.fake->count(Op::kGet);
  auto again = Harness::Read(*reader, data.size() - 4096, 4096);
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().code() == ErrorCode::kIntegrity);
  auto middle = Harness::Read(*reader, 3 * MiB, 4096);
  REQUIRE(middle.ok());
  CHECK(*middle == data.substr(3 * MiB, 4096));
  CHECK(f.h.fake->count(Op::kGet) > gets);

  // Read again from 0 through the same reader, with the server mended: it passes, and so do
  // reads reaching the end afterwards.
  f.client->Damage(std::nullopt);
  const uint64_t matches = CrcChecks("match");
  WholeRead second = ReadInOrder(*reader, data.size());
  REQUIRE(second.last.ok());
  CHECK(second.before_last + *second.last == data);
  CHECK(CrcChecks("match") == matches + 1);
  CHECK(Harness::Read(*reader, data.size() - 10, 10).ok());
  CloseAndDrain(f, reader);
}

TEST_CASE("A large file read intact from 0 to its end passes the whole-object check") {
  IntegrityFixture f;
  const std::string data = Content(4 * MiB + 4096 * 3, 72);
  f.h.fake->PutObject("integrity/intact", data);
  const uint64_t matches = CrcChecks("match");
  const uint64_t mismatches = CrcChecks("mismatch");
  LogCapture log;
  auto reader = f.Open("integrity/intact");
  WholeRead read = ReadInOrder(*reader, data.size(), 100 * KiB);
  REQUIRE(read.last.ok());
  CHECK(read.before_last + *read.last == data);
  CHECK(CrcChecks("match") == matches + 1);
  CHECK(CrcChecks("mismatch") == mismatches);
  CHECK(log.text().find("CRC-64") == std::string::npos);
  CloseAndDrain(f, reader);
}

TEST_CASE("Parts completing out of order are combined in order") {
  for (bool damage : {false, true}) {
    DYNAMIC_SECTION((damage ? "damaged" : "intact")) {
      IntegrityFixture f;
      const std::string key = damage ? "integrity/order-damaged" : "integrity/order-intact";
      const std::string data = Content(3 * MiB + 999, 73);
      f.h.fake->PutObject(key, data);
      if (damage) f.client->Damage(1 * MiB + 3);
      auto reader = f.Open(key);

      // One read of the whole object: parts 0, 1 and 2 (1 MiB each) and the tail part 3 are
      // sent at once; 3 and 2 complete first, then 1, then 0.
      f.client->Hold(0);
      f.client->Hold(1 * MiB);
      f.client->Hold(2 * MiB);
      auto whole = StartRead(*reader, 0, data.size());
      REQUIRE(Eventually([&] { return f.client->delivered(3 * MiB) == 1; }));
      f.client->Release(2 * MiB);
      f.client->Release(1 * MiB);
      CHECK_FALSE(Answered(whole, 50ms));
      f.client->Release(0);
      REQUIRE(Answered(whole, 60s));
      auto r = whole.get();
      if (damage) {
        REQUIRE_FALSE(r.ok());
        CHECK(r.status().code() == ErrorCode::kIntegrity);
      } else {
        REQUIRE(r.ok());
        CHECK(std::string(r->data, r->size) == data);
      }
      CloseAndDrain(f, reader);
    }
  }
}

TEST_CASE("A sequential reader whose first part completes last is still checked") {
  IntegrityFixture f;
  const std::string data = Content(6 * MiB + 5, 74);
  f.h.fake->PutObject("integrity/late-first", data);
  f.client->Damage(5 * MiB + 100);
  auto reader = f.Open("integrity/late-first");
  // The first read waits for part 0, held until readahead parts after it have completed.
  f.client->Hold(0);
  auto first = StartRead(*reader, 0, 128 * KiB);
  REQUIRE(Eventually([&] { return f.client->delivered(1 * MiB) == 1; }));
  f.client->Release(0);
  ExpectBytes(first, data, 0);
  WholeRead rest;
  for (uint64_t off = 128 * KiB; off < data.size(); off += 128 * KiB) {
    auto r = Harness::Read(*reader, off, 128 * KiB);
    if (off + 128 * KiB >= data.size()) {
      rest.last = r;
    } else {
      REQUIRE(r.ok());
    }
  }
  REQUIRE_FALSE(rest.last.ok());
  CHECK(rest.last.status().code() == ErrorCode::kIntegrity);
  CloseAndDrain(f, reader);
}

TEST_CASE("Random reads of a damaged large file are not checked as a whole") {
  IntegrityFixture f;
  const std::string data = Content(6 * MiB + 17, 75);
  f.h.fake->PutObject("integrity/random", data);
  f.client->Damage(3 * MiB + 1);
  const uint64_t mismatches = CrcChecks("mismatch");
  LogCapture log;
  auto reader = f.Open("integrity/random");
  // A format probe reads the end first, then the head (a run from 0 whose window opens),
  // then records here and there, the end again.
  for (uint64_t off :
       {data.size() - 4096, uint64_t{0}, uint64_t{128 * KiB}, uint64_t{256 * KiB},
        uint64_t{5 * MiB}, uint64_t{1 * MiB + 7}, uint64_t{3 * MiB}, data.size() - 100}) {
    auto r = Harness::Read(*reader, off, 4096);
    REQUIRE(r.ok());
  }
  CHECK(CrcChecks("mismatch") == mismatches);
  CHECK(log.text().find("CRC-64") == std::string::npos);
  CloseAndDrain(f, reader);
}

TEST_CASE("No CRC-64 known for the object: nothing is checked") {
  IntegrityFixture f;
  const std::string data = Content(3 * MiB + 10, 76);
  f.h.fake->PutObject("integrity/no-crc", data);
  f.h.fake->set_report_crc64(false);  // S3, or a server that does not send it
  f.client->Damage(2 * MiB);
  std::string damaged = data;
  damaged[2 * MiB] ^= 0x5A;
  const uint64_t checks = CrcChecks("match") + CrcChecks("mismatch") + CrcChecks("unknown");
  LogCapture log;
  auto reader = f.Open("integrity/no-crc");
  WholeRead read = ReadInOrder(*reader, data.size());
  REQUIRE(read.last.ok());
  CHECK(read.before_last + *read.last == damaged);
  CHECK(CrcChecks("match") + CrcChecks("mismatch") + CrcChecks("unknown") == checks);
  CHECK(log.text().find("CRC-64") == std::string::npos);
  CloseAndDrain(f, reader);
}

TEST_CASE(
    "Disk-cache parts count, and after a mismatch later readers of that version skip the disk "
    "cache") {
  IntegrityFixture f;
  f.disk = std::make_shared<MemoryBlockCache>();
  const std::string data = Content(4 * MiB + 3000, 77);
  const std::string etag = f.h.fake->PutObject("integrity/cached", data);
  f.client->Damage(1 * MiB + 10);

  // The damaged parts go to the disk cache (nothing told them apart) and the read fails.
  auto first = f.Open("integrity/cached");
  WholeRead read = ReadInOrder(*first, data.size());
  REQUIRE_FALSE(read.last.ok());
  CloseAndDrain(f, first);
  f.disk->Flush();
  CHECK(f.disk->blocks() == 5);

  // A reader opened later fetches from the server instead of the cached damaged blocks.
  f.client->Damage(std::nullopt);
  f.h.fake->ResetCounters();
  const int hits = f.disk->hits;
  auto second = f.Open("integrity/cached");
  read = ReadInOrder(*second, data.size());
  REQUIRE(read.last.ok());
  CHECK(read.before_last + *read.last == data);
  CHECK(f.disk->hits == hits);
  CHECK(f.h.fake->count(Op::kGet) >= 5);
  CloseAndDrain(f, second);

  // Parts from the disk cache are checked when the object's CRC-64 is known (here from the
  // metadata, with no GET at all): a damaged cached block of another version is caught.
  const std::string key = "integrity/cached-meta";
  const std::string etag2 = f.h.fake->PutObject(key, data);
  for (uint64_t i = 0; i < 5; ++i) {
    std::string block = data.substr(i * MiB, MiB);
    if (i == 2) block[100] ^= 1;
    f.disk->Put(data::BlockId{key, etag2, i},
                std::make_shared<const ByteBuffer>(block.begin(), block.end()));
  }
  const int hits_before = f.disk->hits;
  ReaderOptions o = SmallParts();
  o.object_crc64 = CrcOfString(data);
  auto third = f.Open(key, o);
  read = ReadInOrder(*third, data.size());
  REQUIRE_FALSE(read.last.ok());
  CHECK(read.last.status().code() == ErrorCode::kIntegrity);
  // Every part came from the disk cache before the verdict (it needs all five); the parts
  // read after it (the end's) are fetched from the server.
  CHECK(f.disk->hits - hits_before == 5);
  CloseAndDrain(f, third);
}
