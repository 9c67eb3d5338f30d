// SequentialReader against the FakeObjectClient: request pattern, content, seeks, version
// pinning, disk cache, reply ownership.
#include <algorithm>
#include <set>

#include "reader_harness.h"

using namespace readaheadtest;

TEST_CASE(
    "Sequential 128 KiB reads of 100 MiB issue part-sized GETs ahead with a doubling window") {
  Harness h;
  const std::string data = Content(100 * MiB, 1);
  const std::string etag = h.fake->PutObject("big", data);
  // 5 ms per GET: long enough that the parts a window opens are in flight together even
  // when a loaded machine (TSan, CI) preempts the reader between issuing two of them (at 1
  // ms, max_in_flight() >= 2 below failed once there).
  h.fake->set_latency(5ms);
  ReaderOptions o;
  o.initial_window = 1 * MiB;
  o.max_window = 32 * MiB;
  o.part_size = 4 * MiB;
  o.per_file_concurrency = 8;
  auto reader = h.Open("big", o);

  std::vector<uint64_t> windows;
  uint64_t max_lead = 0;
  bool exact = true;
  for (uint64_t off = 0; off < data.size(); off += 128 * KiB) {
    auto r = Harness::Read(*reader, off, 128 * KiB);
    REQUIRE(r.ok());
    exact = exact && *r == data.substr(off, 128 * KiB);
    const uint64_t w = reader->stats().window;
    if (windows.empty() || windows.back() != w) windows.push_back(w);
    uint64_t furthest = 0;
    for (const auto& rec : h.fake->requests())
      furthest = std::max(furthest, rec.offset + *rec.length);
    max_lead = std::max(max_lead, furthest - std::min(furthest, off + 128 * KiB));
  }
  CHECK(exact);
  // From 1 MiB to the 32 MiB cap, each size a doubling (or two: a read that both completes a
  // window and waits for a part fetched ahead doubles twice; which reads wait is timing).
  REQUIRE_FALSE(windows.empty());
  CHECK(windows.front() == 1 * MiB);
  CHECK(windows.back() == 32 * MiB);
  for (size_t i = 1; i < windows.size(); ++i) {
    CHECK(windows[i] > windows[i - 1]);
    CHECK(windows[i] % windows[i - 1] == 0);
    CHECK((windows[i] & (windows[i] - 1)) == 0);  // a power of two
  }
  CHECK(max_lead >= 16 * MiB);  // the reader never waited for every part it needed

  const auto log = h.fake->requests();
  CHECK(log.size() == 25);  // every 4 MiB part exactly once
  std::set<uint64_t> offsets;
  int prefetch = 0;
  for (const auto& rec : log) {
    CHECK(rec.op == Op::kGet);
    CHECK(rec.offset % (4 * MiB) == 0);
    REQUIRE(rec.length);
    CHECK(*rec.length == 4 * MiB);
    CHECK(rec.if_match == etag);
    CHECK(rec.cancellable);
    offsets.insert(rec.offset);
    if (rec.priority == Priority::kPrefetch) ++prefetch;
  }
  CHECK(offsets.size() == 25);
  CHECK(log.front().priority == Priority::kForeground);
  CHECK(prefetch >= 20);
  CHECK(h.fake->max_in_flight() <= 8);
  CHECK(h.fake->max_in_flight() >= 2);

  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0; }));
  CHECK(h.slots->in_use() == 0);
}

TEST_CASE(
    "A read that waits for a part fetched ahead of it doubles the window, and a read waiting for "
    "the part it fetched itself does not") {
  Harness h;
  const std::string data = Content(32 * MiB, 71);
  h.fake->PutObject("big", data);
  ReaderOptions o;
  o.part_size = 1 * MiB;
  o.initial_window = 1 * MiB;
  o.max_window = 16 * MiB;
  o.per_file_concurrency = 32;
  auto reader = h.Open("big", o);
  auto furthest_get = [&] {
    uint64_t furthest = 0;
    for (const auto& rec : h.fake->requests()) furthest = std::max(furthest, rec.offset);
    return furthest;
  };

  // Two reads waiting for part 0, which the first one fetched (no GET completes while
  // paused): the window stays at 1 MiB, so only part 1 is fetched ahead.
  h.fake->Pause();
  auto a = StartRead(*reader, 0, 128 * KiB);
  auto b = StartRead(*reader, 128 * KiB, 128 * KiB);
  CHECK_FALSE(Answered(b, 100ms));
  CHECK(reader->stats().window == 1 * MiB);
  CHECK(h.fake->count(Op::kGet) == 2);
  CHECK(furthest_get() == 1 * MiB);
  h.fake->Resume();
  ExpectBytes(a, data, 0);
  ExpectBytes(b, data, 128 * KiB);
  REQUIRE(Eventually([&] { return reader->stats().in_flight == 0; }));  // part 1 is here too

  // Reading on through parts 0 and 1 (there) doubles the window once by consumption: 2 MiB,
  // with parts 2 and 3 in flight ahead.
  h.fake->Pause();
  for (uint64_t off = 256 * KiB; off < 2 * MiB; off += 128 * KiB) {
    auto r = StartRead(*reader, off, 128 * KiB);
    ExpectBytes(r, data, off);
  }
  CHECK(reader->stats().window == 2 * MiB);
  CHECK(furthest_get() == 3 * MiB);

  // The reader reaches part 2 before it arrived: a stall. The window doubles at once (4 MiB:
  // parts up to 6 go out), and again at the next read that waits (8 MiB: up to part 10).
  auto c = StartRead(*reader, 2 * MiB, 128 * KiB);
  CHECK(reader->stats().window == 4 * MiB);
  CHECK(furthest_get() == 6 * MiB);
  auto d = StartRead(*reader, 2 * MiB + 128 * KiB, 128 * KiB);
  CHECK(reader->stats().window == 8 * MiB);
  CHECK(furthest_get() == 10 * MiB);
  CHECK_FALSE(Answered(d, 100ms));
  h.fake->Resume();
  ExpectBytes(c, data, 2 * MiB);
  ExpectBytes(d, data, 2 * MiB + 128 * KiB);

  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0 && h.fake->in_flight() == 0; }));
}

TEST_CASE(
    "A reader past twice its first window that waits for the part it started in widens its "
    "window, and a reader of the file's head does not") {
  Harness h;
  const std::string head = Content(64 * MiB, 72);
  h.fake->PutObject("head", head);
  const std::string data = Content(64 * MiB, 73);
  h.fake->PutObject("big", data);
  ReaderOptions o;  // the daemon's defaults: 8 MiB parts, a 1 MiB first window, 64 MiB at most

  // Part 0's first 512 KiB arrive, then nothing until Resume(). A read at 512 KiB waits for
  // the part the first read fetched: the reader is still at the file's head (a `head -c`,
  // a format probe), so that is no stall, and nothing more is fetched.
  {
    h.fake->set_early_bytes(512 * KiB);
    h.fake->Pause();
    auto reader = h.Open("head", o);
    for (uint64_t off = 0; off < 512 * KiB; off += 128 * KiB) {
      auto r = StartRead(*reader, off, 128 * KiB);
      ExpectBytes(r, head, off);
    }
    auto waiting = StartRead(*reader, 512 * KiB, 128 * KiB);
    CHECK_FALSE(Answered(waiting, 100ms));
    CHECK(reader->stats().window == 1 * MiB);
    CHECK(h.fake->count(Op::kGet) == 1);
    h.fake->Resume();
    ExpectBytes(waiting, head, 512 * KiB);
    reader->Close();
    REQUIRE(Eventually([&] { return h.fake->in_flight() == 0 && h.budget->used() == 0; }));
  }

  // Part 0's first 3 MiB arrive. Reading them doubles the window by consumption to 2 MiB
  // (its count starts at the first read's end), which ends inside part 0: still one GET.
  h.fake->set_early_bytes(3 * MiB);
  h.fake->Pause();
  auto reader = h.Open("big", o);
  const uint64_t gets_before = h.fake->count(Op::kGet);
  auto gets = [&] { return h.fake->count(Op::kGet) - gets_before; };
  for (uint64_t off = 0; off < 3 * MiB; off += 128 * KiB) {
    auto r = StartRead(*reader, off, 128 * KiB);
    ExpectBytes(r, data, off);
  }
  CHECK(reader->stats().window == 2 * MiB);
  CHECK(gets() == 1);

  // The reader, 3 MiB in, waits for part 0's next bytes. The read completes a window (4 MiB,
  // ending inside part 0: growth by consumption alone would send nothing more until the
  // reader is 4 MiB in), and it is a stall: 8 MiB at once, so part 1 goes out. The next
  // read that waits doubles it again (16 MiB: part 2).
  auto a = StartRead(*reader, 3 * MiB, 128 * KiB);
  CHECK(reader->stats().window == 8 * MiB);
  CHECK(gets() == 2);
  auto b = StartRead(*reader, 3 * MiB + 128 * KiB, 128 * KiB);
  CHECK(reader->stats().window == 16 * MiB);
  CHECK(gets() == 3);
  CHECK_FALSE(Answered(b, 100ms));
  std::set<uint64_t> offsets;
  for (const auto& rec : h.fake->requests()) {
    if (rec.key == "big") offsets.insert(rec.offset);
  }
  CHECK(offsets == std::set<uint64_t>{0, 8 * MiB, 16 * MiB});
  h.fake->Resume();
  ExpectBytes(a, data, 3 * MiB);
  ExpectBytes(b, data, 3 * MiB + 128 * KiB);

  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0 && h.fake->in_flight() == 0; }));
}

TEST_CASE("Random, mixed and part-spanning reads are byte-exact") {
  Harness h;
  const std::string data = Content(20 * MiB + 123, 2);
  h.fake->PutObject("big", data);
  auto reader = h.Open("big", SmallParts());
  std::mt19937_64 rng(7);
  auto check = [&](uint64_t off, size_t size) {
    INFO("offset " << off << " size " << size);
    auto r = Harness::Read(*reader, off, size);
    REQUIRE(r.ok());
    if (off >= data.size()) {
      CHECK(r->empty());
    } else {
      CHECK(*r == data.substr(off, size));
    }
  };
  SECTION("random") {
    for (int i = 0; i < 300; ++i) check(rng() % (data.size() + 1000), 1 + rng() % (3 * MiB));
  }
  SECTION("mixed: sequential runs from random places") {
    for (int run = 0; run < 30; ++run) {
      uint64_t off = rng() % data.size();
      const size_t step = 4 * KiB + rng() % (256 * KiB);
      for (int i = 0; i < 40; ++i, off += step) check(off, step);
    }
  }
  SECTION("across part boundaries") {
    check(1 * MiB - 10, 20);
    check(3 * MiB - 1, 2 * MiB + 2);  // three parts
    check(data.size() - 1, 10);
    check(0, data.size() + 5);  // everything at once
  }
  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0; }));
}

TEST_CASE(
    "A seek resets the window, cancels unwanted parts, fetches only the bytes asked, and reading "
    "on fetches growing pieces until the run covers a part") {
  Harness h;
  const std::string data = Content(32 * MiB, 3);
  h.fake->PutObject("big", data);
  ReaderOptions o = SmallParts();
  o.initial_window = 2 * MiB;
  auto reader = h.Open("big", o);

  h.fake->Pause();
  std::promise<Result<std::string>> first, second;
  reader->Read(0, 128 * KiB, [&](Result<ReadBytes> r) {
    first.set_value(r.ok() ? Result<std::string>(std::string(r->data, r->size))
                           : Result<std::string>(r.status()));
  });
  // Part 0 for the reader, parts 1 and 2 ahead of it.
  REQUIRE(Eventually([&] { return h.fake->in_flight() == 3; }));
  CHECK(reader->stats().window == 2 * MiB);

  reader->Read(20 * MiB + 5, 128 * KiB, [&](Result<ReadBytes> r) {
    second.set_value(r.ok() ? Result<std::string>(std::string(r->data, r->size))
                            : Result<std::string>(r.status()));
  });
  CHECK(reader->stats().window == 0);
  CHECK(reader->stats().parts == 1);  // part 0 still has a reader waiting for it
  h.fake->Resume();
  auto f = first.get_future().get();
  auto s = second.get_future().get();
  REQUIRE(f.ok());
  REQUIRE(s.ok());
  CHECK(*f == data.substr(0, 128 * KiB));
  CHECK(*s == data.substr(20 * MiB + 5, 128 * KiB));
  CHECK(Eventually([&] { return h.fake->cancelled_count() == 2; }));
  const auto log = h.fake->requests();
  REQUIRE(log.size() == 4);
  CHECK(log[3].offset == 20 * MiB + 5);  // the random read: exactly its bytes, foreground
  CHECK(*log[3].length == 128 * KiB);
  CHECK(log[3].priority == Priority::kForeground);

  // Reading on from there in reads of one size is a short run: each read its last piece does
  // not cover fetches a piece from its offset as long as the run so far, nothing ahead; the
  // window reopens at its initial size once the run covers a part (1 MiB).
  const uint64_t at = 20 * MiB + 5 + 128 * KiB;
  uint64_t off = at;
  while (reader->stats().window == 0) {
    REQUIRE(off < at + 2 * MiB);
    auto next = Harness::Read(*reader, off, 128 * KiB);
    REQUIRE(next.ok());
    CHECK(*next == data.substr(off, 128 * KiB));
    off += 128 * KiB;
  }
  CHECK(off == at + 896 * KiB);  // opened by the read that took the run to 1 MiB
  CHECK(reader->stats().window == 2 * MiB);
  const auto after = h.fake->requests();
  REQUIRE(after.size() >= 7);
  const std::vector<std::pair<uint64_t, uint64_t>> pieces{{at, 256 * KiB},
                                                          {at + 256 * KiB, 512 * KiB}};
  for (size_t i = 0; i < pieces.size(); ++i) {
    INFO("piece " << i);
    CHECK(after[4 + i].offset == pieces[i].first);
    CHECK(*after[4 + i].length == pieces[i].second);
    CHECK(after[4 + i].priority == Priority::kForeground);
  }
  // Then parts again: the one holding the read, and the window ahead.
  CHECK(after[6].offset % MiB == 0);
  CHECK(*after[6].length == 1 * MiB);
  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0 && h.fake->in_flight() == 0; }));
}

TEST_CASE(
    "Records read the way a memory-mapped file's page faults arrive cost what the kernel asked "
    "for, not a part each") {
  // A page fault of a mapped file reaches the daemon as the kernel's read-around (128 KiB
  // around the page) and, once the reader touches its end, the next 128 KiB: a random read
  // and one adjacent read per record, from several threads at once.
  Harness h;
  const std::string data = Content(256 * MiB, 11);
  h.fake->PutObject("big", data);
  ReaderOptions o;  // the daemon's defaults: 8 MiB parts, a 1 MiB initial window
  auto reader = h.Open("big", o);
  // Records at distinct MiB offsets (records closer than the kernel's read-around would
  // look like one run to anyone).
  std::vector<uint64_t> slots;
  for (uint64_t m = 1; m < 250; ++m) slots.push_back(m * MiB);
  std::shuffle(slots.begin(), slots.end(), std::mt19937_64(12));
  auto next_slot = [&, i = size_t{0}]() mutable { return slots.at(i++); };
  constexpr int kRecords = 40;
  for (int i = 0; i < kRecords; i += 2) {
    // Two readers interleaved (a, b, a + 128K, b + 128K), then one alone.
    const uint64_t a = next_slot();
    const uint64_t b = next_slot();
    for (uint64_t off : {a, b, a + 128 * KiB, b + 128 * KiB}) {
      auto r = Harness::Read(*reader, off, 128 * KiB);
      REQUIRE(r.ok());
      CHECK(*r == data.substr(off, 128 * KiB));
      CHECK(reader->stats().window == 0);
    }
  }
  for (int i = 0; i < 10; ++i) {
    const uint64_t a = next_slot();
    for (uint64_t off : {a, a + 128 * KiB}) {
      auto r = Harness::Read(*reader, off, 128 * KiB);
      REQUIRE(r.ok());
      CHECK(*r == data.substr(off, 128 * KiB));
    }
  }
  const auto log = h.fake->requests();
  uint64_t bytes = 0;
  for (const auto& rec : log) {
    CHECK(rec.priority == Priority::kForeground);  // nothing fetched ahead
    INFO("GET " << rec.offset / KiB << " KiB, " << *rec.length / KiB << " KiB");
    CHECK(*rec.length <= 256 * KiB);  // no part
    bytes += *rec.length;
  }
  CHECK(log.size() == 2 * (kRecords + 10));
  // The random read exactly, the adjacent read a piece of the run so far (each reader has
  // its own run): 384 KiB per record, interleaved or alone.
  CHECK(bytes == (kRecords + 10) * 384 * KiB);
  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0 && h.fake->in_flight() == 0; }));
}

TEST_CASE("A read inside one part points into the part buffer, a spanning read is gathered") {
  Harness h;
  const std::string data = Content(4 * MiB, 4);
  h.fake->PutObject("big", data);
  auto reader = h.Open("big", SmallParts());
  auto owner_of = [&](uint64_t off, size_t size) {
    std::promise<Result<ReadBytes>> p;
    reader->Read(off, size, [&](Result<ReadBytes> r) { p.set_value(std::move(r)); });
    auto r = p.get_future().get();
    REQUIRE(r.ok());
    CHECK(std::string(r->data, r->size) == data.substr(off, size));
    return *r;
  };
  auto a = owner_of(0, 100);
  auto b = owner_of(100, 100);
  CHECK(a.owner == b.owner);
  CHECK(b.data == a.data + 100);
  auto c = owner_of(1 * MiB - 50, 100);
  CHECK(c.owner != a.owner);
  reader->Close();
}

TEST_CASE("An object changed after open fails reads with ESTALE and never mixes versions") {
  Harness h;
  const std::string v1 = Content(8 * MiB, 5);
  const std::string etag = h.fake->PutObject("big", v1);
  auto reader = h.Open("big", SmallParts());
  REQUIRE(*Harness::Read(*reader, 0, 128 * KiB) == v1.substr(0, 128 * KiB));
  REQUIRE(Eventually([&] { return reader->stats().in_flight == 0; }));

  SECTION("same size, new content") { h.fake->PutObject("big", Content(8 * MiB, 6)); }
  SECTION("shrunk") { h.fake->PutObject("big", Content(3 * MiB, 6)); }
  SECTION("deleted") { h.fake->DeleteObject("big"); }

  int failed = 0;
  for (uint64_t off = 128 * KiB; off < v1.size(); off += 128 * KiB) {
    auto r = Harness::Read(*reader, off, 128 * KiB);
    if (r.ok()) {
      CHECK(*r == v1.substr(off, 128 * KiB));  // from a part fetched before the change
    } else {
      ++failed;
      const int err = r.status().ToErrno();
      CHECK((err == ESTALE || err == ENOENT));
    }
  }
  CHECK(failed > 0);
  auto random = Harness::Read(*reader, 6 * MiB + 7, 1000);
  CHECK(!random.ok());
  for (const auto& rec : h.fake->requests()) CHECK(rec.if_match == etag);
  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0; }));
}

TEST_CASE("Disk cache: parts are stored after a GET and a hit avoids the GET") {
  Harness h;
  h.disk = std::make_shared<MemoryBlockCache>();
  const std::string data = Content(6 * MiB + 17, 8);
  const std::string etag = h.fake->PutObject("big", data);
  {
    auto reader = h.Open("big", SmallParts());
    for (uint64_t off = 0; off < data.size(); off += 128 * KiB) {
      REQUIRE(*Harness::Read(*reader, off, 128 * KiB) == data.substr(off, 128 * KiB));
    }
    reader->Close();
  }
  CHECK(h.fake->count(Op::kGet) == 7);
  CHECK(h.disk->blocks() == 7);  // six full parts and the 17-byte tail
  h.fake->ResetCounters();

  auto reader = h.Open("big", SmallParts());
  for (uint64_t off = 0; off < data.size(); off += 128 * KiB) {
    REQUIRE(*Harness::Read(*reader, off, 128 * KiB) == data.substr(off, 128 * KiB));
  }
  CHECK(*Harness::Read(*reader, 5 * MiB + 3, 10) == data.substr(5 * MiB + 3, 10));  // random
  CHECK(h.fake->count(Op::kGet) == 0);
  CHECK(h.disk->hits >= 7);
  reader->Close();

  // Another version of the object misses (the etag is part of the block id).
  h.fake->PutObject("big", Content(6 * MiB + 17, 9));
  auto v2 = h.Open("big", SmallParts());
  CHECK(*Harness::Read(*v2, 0, 10) == Content(6 * MiB + 17, 9).substr(0, 10));
  CHECK(h.fake->count(Op::kGet) >= 1);
  v2->Close();
}

TEST_CASE("Reads after Close fail, and Close cancels parts in flight") {
  Harness h;
  h.fake->PutObject("big", Content(16 * MiB, 10));
  auto reader = h.Open("big", SmallParts());
  h.fake->Pause();
  std::promise<Result<ReadBytes>> p;
  reader->Read(0, 4 * KiB, [&](Result<ReadBytes> r) { p.set_value(std::move(r)); });
  REQUIRE(Eventually([&] { return h.fake->in_flight() == 2; }));
  reader->Close();
  h.fake->Resume();
  auto r = p.get_future().get();
  CHECK(!r.ok());
  CHECK(Eventually([&] { return h.fake->cancelled_count() == 2; }));
  CHECK(!Harness::Read(*reader, 0, 10).ok());
  CHECK(Eventually([&] { return h.budget->used() == 0; }));
}

TEST_CASE("A straggler read far behind the reader is fetched alone and keeps the window") {
  Harness h;
  const std::string data = Content(64 * MiB, 7);
  h.fake->PutObject("big", data);
  ReaderOptions o;
  o.initial_window = 1 * MiB;
  o.max_window = 16 * MiB;
  o.part_size = 2 * MiB;
  o.slack = 4 * MiB;
  o.late_tolerance = 32 * MiB;
  auto reader = h.Open("big", o);
  for (uint64_t off = 0; off < 40 * MiB; off += 1 * MiB) {
    REQUIRE(*Harness::Read(*reader, off, 1 * MiB) == data.substr(off, 1 * MiB));
  }
  const uint64_t window = reader->stats().window;
  REQUIRE(window > 0);
  REQUIRE(Eventually([&] { return reader->stats().in_flight == 0; }));
  const size_t before = h.fake->requests().size();

  // 20 MiB behind the reader: its part was dropped (slack 4 MiB), but it is within the
  // late tolerance, so it is a straggler of the kernel's concurrent readahead.
  auto late = Harness::Read(*reader, 20 * MiB + 4096, 1 * MiB);
  REQUIRE(late.ok());
  CHECK(*late == data.substr(20 * MiB + 4096, 1 * MiB));
  CHECK(reader->stats().window == window);  // not reset to random access
  const auto log = h.fake->requests();
  REQUIRE(log.size() == before + 1);  // exactly the asked bytes, one GET
  CHECK(log.back().offset == 20 * MiB + 4096);
  CHECK(*log.back().length == 1 * MiB);

  // Beyond the late tolerance a read is random again: the window closes.
  REQUIRE(Harness::Read(*reader, 40 * MiB, 1 * MiB).ok());
  REQUIRE(*Harness::Read(*reader, 1 * MiB, 4096) == data.substr(1 * MiB, 4096));
  CHECK(reader->stats().window == 0);
}

TEST_CASE(
    "Readers sharing one open file read records of several MiB with growing pieces each, not a "
    "GET per read") {
  // DataLoader workers forked after the Dataset opened the file share its descriptor: their
  // reads arrive interleaved, each worker reading on through its own record.
  Harness h;
  const std::string data = Content(256 * MiB, 13);
  h.fake->PutObject("big", data);
  ReaderOptions o;  // the daemon's defaults: 8 MiB parts, a 1 MiB initial window
  auto reader = h.Open("big", o);
  constexpr int kReaders = 8;
  constexpr uint64_t kRecord = 4 * MiB;
  std::mt19937_64 rng(14);
  std::vector<uint64_t> records;
  for (int i = 0; i < kReaders; ++i) records.push_back(i * 32 * MiB + rng() % (16 * MiB));
  for (uint64_t at = 0; at < kRecord; at += 128 * KiB) {
    for (uint64_t record : records) {
      auto r = Harness::Read(*reader, record + at, 128 * KiB);
      REQUIRE(r.ok());
      CHECK(*r == data.substr(record + at, 128 * KiB));
    }
    CHECK(reader->stats().window == 0);
  }
  const auto log = h.fake->requests();
  uint64_t bytes = 0;
  for (const auto& rec : log) {
    CHECK(rec.priority == Priority::kForeground);
    bytes += *rec.length;
  }
  // Per record: the first read exactly, then pieces of 256 KiB, 512 KiB, 1, 2 and 4 MiB (the
  // last mostly past the record: the reader might have gone on), the 2 and 4 MiB ones as 2
  // and 4 GETs of 1 MiB at once. One run for all readers would make every read random: 32
  // GETs per record.
  CHECK(log.size() == kReaders * 10);
  CHECK(bytes <= kReaders * 2 * kRecord);
  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0 && h.fake->in_flight() == 0; }));
}

TEST_CASE(
    "A sequential reader keeps its window and parts while another reader of the same open file "
    "reads elsewhere") {
  Harness h;
  const std::string data = Content(64 * MiB, 15);
  h.fake->PutObject("big", data);
  ReaderOptions o = SmallParts();  // 1 MiB parts, window 1 to 8 MiB
  o.windows = 1;  // the other reader goes on in pieces (as beyond `windows` readers)
  auto reader = h.Open("big", o);
  auto read = [&](uint64_t off) {
    auto r = Harness::Read(*reader, off, 128 * KiB);
    REQUIRE(r.ok());
    CHECK(*r == data.substr(off, 128 * KiB));
  };
  uint64_t a = 0;
  for (; a < 4 * MiB; a += 128 * KiB) read(a);
  REQUIRE(reader->stats().window > 0);
  // The other reader's first read is random: it closes the window; the first reader's next
  // read opens it again (its run started at 0).
  uint64_t b = 40 * MiB + 12345;
  read(b);
  b += 128 * KiB;
  CHECK(reader->stats().window == 0);
  read(a);
  a += 128 * KiB;
  REQUIRE(reader->stats().window == 1 * MiB);
  REQUIRE(Eventually([&] { return h.fake->in_flight() == 0; }));
  const size_t cancelled = h.fake->cancelled_count();
  const size_t before = h.fake->requests().size();

  // Interleaved from here: the window stays open and grows, nothing is cancelled, the first
  // reader's parts are each fetched once, and the other reader gets pieces that grow up to a
  // part.
  for (int i = 0; i < 48; ++i, a += 128 * KiB, b += 128 * KiB) {
    read(a);
    read(b);
    CHECK(reader->stats().window >= 1 * MiB);
  }
  CHECK(reader->stats().window >= 4 * MiB);
  CHECK(h.fake->cancelled_count() == cancelled);
  const auto log = h.fake->requests();
  std::set<uint64_t> parts;
  std::vector<uint64_t> pieces;
  for (size_t i = before; i < log.size(); ++i) {
    if (log[i].offset < 40 * MiB) {
      CHECK(log[i].offset % MiB == 0);
      CHECK(parts.insert(log[i].offset).second);  // never fetched twice
    } else {
      CHECK(log[i].priority == Priority::kForeground);
      pieces.push_back(*log[i].length);
    }
  }
  // The other reader's 6 MiB: pieces of 256 and 512 KiB, then parts' worth (1 MiB).
  REQUIRE(pieces.size() >= 3);
  CHECK(pieces[0] == 256 * KiB);
  CHECK(pieces[1] == 512 * KiB);
  for (size_t i = 2; i < pieces.size(); ++i) CHECK(pieces[i] == 1 * MiB);
  CHECK(pieces.size() <= 8);
  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0 && h.fake->in_flight() == 0; }));
}

TEST_CASE(
    "Readers of regions of one open file each get a window: parts ahead of each, each part "
    "fetched once") {
  // A parallel copy, or a loader's threads, each reading its own region through one
  // descriptor: the second reader's run is established once it covers a part and gets its
  // own window, so both are read ahead, not one of them a piece at a time.
  Harness h;
  h.fake->set_latency(1ms);
  const std::string data = Content(64 * MiB, 18);
  h.fake->PutObject("big", data);
  auto reader = h.Open("big", SmallParts());  // 1 MiB parts, window 1 to 8 MiB
  uint64_t a = 0, b = 32 * MiB;
  auto read = [&](uint64_t off) {
    auto r = Harness::Read(*reader, off, 128 * KiB);
    REQUIRE(r.ok());
    CHECK(*r == data.substr(off, 128 * KiB));
  };
  // The second reader's first read cannot be told from a seek of the first: it closes the
  // first reader's window, which its next read opens again. From there on, interleaved:
  read(a);
  a += 128 * KiB;
  read(b);
  b += 128 * KiB;
  REQUIRE(Eventually([&] { return h.fake->in_flight() == 0; }));
  h.fake->ResetCounters();
  for (; a < 32 * MiB; a += 128 * KiB, b += 128 * KiB) {
    read(a);
    read(b);
    CHECK(reader->stats().window >= 1 * MiB);
  }
  const auto log = h.fake->requests();
  std::set<uint64_t> parts;
  int pieces = 0, prefetch = 0, again = 0;
  uint64_t bytes = 0;
  for (const auto& rec : log) {
    bytes += *rec.length;
    if (rec.offset % MiB != 0 || *rec.length != 1 * MiB) {
      ++pieces;  // the second reader's first reads, before its run covers a part
      CHECK(rec.offset >= 32 * MiB);
      continue;
    }
    prefetch += rec.priority == Priority::kPrefetch;
    if (!parts.insert(rec.offset).second) {
      // Only the first reader's window, running on past the end of its region into the
      // second's, which has read (and dropped) those parts already.
      ++again;
      CHECK(rec.offset >= 32 * MiB);
      CHECK(rec.offset < 40 * MiB);
    }
  }
  CHECK(parts.size() == 64);
  CHECK(pieces == 2);  // 256 and 512 KiB; then the run covers a part and opens its window
  CHECK(again <= 8);
  // Both regions read ahead: each reader waited for few of its parts (with one window, the
  // second reader's 31 MiB would be 31 foreground pieces).
  CHECK(prefetch >= 56);
  CHECK(bytes <= 64 * MiB + 10 * MiB);
  CHECK(h.fake->cancelled_count() == 0);
  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0 && h.fake->in_flight() == 0; }));
}

TEST_CASE("A window whose reader stopped reading is closed and its parts go") {
  Harness h;
  const std::string data = Content(64 * MiB, 19);
  h.fake->PutObject("big", data);
  ReaderOptions o = SmallParts();  // 1 MiB parts, window 1 to 8 MiB
  o.piece_idle = 200ms;
  auto reader = h.Open("big", o);
  uint64_t a = 0, b = 32 * MiB;
  auto read = [&](uint64_t off) {
    auto r = Harness::Read(*reader, off, 128 * KiB);
    REQUIRE(r.ok());
    CHECK(*r == data.substr(off, 128 * KiB));
  };
  for (; a < 12 * MiB; a += 128 * KiB, b += 128 * KiB) {
    read(a);
    read(b);
  }
  REQUIRE(Eventually([&] { return h.fake->in_flight() == 0; }));
  const uint64_t both = h.budget->used();
  // The second reader stops; the first reads on past piece_idle.
  h.clock.Advance(300ms);
  read(a);
  // The first reader's window and parts around it, and the two parts around the second
  // reader's position (12 MiB measured; 18 with the window kept). A part that read dropped
  // lets go of its memory once its GET's completion has run, which on a loaded machine can
  // come a little after the fake counts the GET done: wait for the memory, not for a moment.
  const bool released = Eventually([&] { return h.budget->used() <= 12 * MiB; }, 10s);
  const uint64_t one = h.budget->used();
  INFO("both windows " << both << ", after the second reader stopped " << one);
  CHECK(both >= 16 * MiB);  // two windows of 8 MiB ahead (18 MiB measured)
  CHECK(released);
  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0; }));
}

TEST_CASE("A short run's read longer than a part gets a piece that holds all of it") {
  // Only a run that is established while `windows` other runs hold one reads on as a short
  // run past a part: a reader of the whole file and one at a random place.
  Harness h;
  const std::string data = Content(32 * MiB, 16);
  h.fake->PutObject("big", data);
  ReaderOptions o = SmallParts();  // 1 MiB parts
  o.windows = 1;
  auto reader = h.Open("big", o);
  REQUIRE(*Harness::Read(*reader, 0, 4 * KiB) == data.substr(0, 4 * KiB));
  const uint64_t at = 20 * MiB + 3;
  REQUIRE(*Harness::Read(*reader, at, 4 * KiB) == data.substr(at, 4 * KiB));
  REQUIRE(*Harness::Read(*reader, 4 * KiB, 4 * KiB) == data.substr(4 * KiB, 4 * KiB));
  REQUIRE(reader->stats().window > 0);
  REQUIRE(Eventually([&] { return h.fake->in_flight() == 0; }));
  const size_t before = h.fake->requests().size();
  auto r = Harness::Read(*reader, at + 4 * KiB, 3 * MiB);
  REQUIRE(r.ok());
  CHECK(*r == data.substr(at + 4 * KiB, 3 * MiB));
  // One piece of 3 MiB, fetched as 3 GETs of 1 MiB at once.
  const auto log = h.fake->requests();
  REQUIRE(log.size() == before + 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(log[before + i].offset == at + 4 * KiB + i * MiB);
    CHECK(*log[before + i].length == 1 * MiB);
  }
  CHECK(reader->stats().window > 0);
  reader->Close();
}

TEST_CASE("Pieces a reader has left are released, not held until the file closes") {
  Harness h;
  const std::string data = Content(256 * MiB, 17);
  h.fake->PutObject("big", data);
  ReaderOptions o;  // 8 MiB parts: no run reaches a window
  auto read = [&](std::shared_ptr<SequentialReader>& reader, uint64_t off) {
    auto r = Harness::Read(*reader, off, 128 * KiB);
    REQUIRE(r.ok());
    REQUIRE(*r == data.substr(off, 128 * KiB));
  };
  SECTION("one reader moving from record to record: at once") {
    // Each record read on in 128 KiB reads from a random place: every record's run ends
    // with a piece of up to 2 MiB that nobody reads again.
    auto reader = h.Open("big", o);
    for (uint64_t record = 0; record < 40; ++record) {
      const uint64_t at = record * 6 * MiB + 12345;
      for (uint64_t off = at; off < at + 2 * MiB; off += 128 * KiB) read(reader, off);
    }
    REQUIRE(Eventually([&] { return h.fake->in_flight() == 0; }));
    // The last record's piece is all that is left: 32 tracked runs would hold 64 MiB.
    // (Replies just sent may hold a released piece a moment longer.)
    CHECK(Eventually([&] { return h.budget->used() <= 2 * MiB; }));
    INFO("budget in use: " << h.budget->used());
    CHECK(h.budget->used() > 0);
    reader->Close();
  }
  SECTION("interleaved readers: once no read used them for piece_idle") {
    o.piece_idle = std::chrono::milliseconds(200);
    auto reader = h.Open("big", o);
    const uint64_t a = 10 * MiB + 3, b = 100 * MiB + 7;
    for (uint64_t at = 0; at < 2 * MiB; at += 128 * KiB) {
      read(reader, a + at);
      read(reader, b + at);
    }
    REQUIRE(Eventually([&] { return h.fake->in_flight() == 0; }));
    CHECK(h.budget->used() >= 2 * MiB);  // both runs' last pieces, kept for their readers
    h.clock.Advance(std::chrono::milliseconds(300));
    read(reader, 200 * MiB);  // any read of the file looks
    REQUIRE(Eventually([&] { return h.fake->in_flight() == 0; }));
    CHECK(Eventually([&] { return h.budget->used() == 0; }));
    INFO("budget in use: " << h.budget->used());
    reader->Close();
  }
  CHECK(Eventually([&] { return h.budget->used() == 0; }));
}

TEST_CASE("With a disk cache, a lone random reader holds only the parts where it reads") {
  // Random reads and short runs fetch the covering parts (the cache's units); a reader that
  // jumps from record to record leaves them behind, so they are dropped, not kept for the
  // 32 runs the file tracks.
  Harness h;
  h.disk = std::make_shared<MemoryBlockCache>();
  const std::string data = Content(256 * MiB, 18);
  h.fake->PutObject("big", data);
  auto reader = h.Open("big", ReaderOptions{});  // 8 MiB parts
  for (uint64_t record = 0; record < 30; ++record) {
    const uint64_t at = record * 8 * MiB + 4 * MiB + 77;
    for (uint64_t off : {at, at + 128 * KiB}) {
      auto r = Harness::Read(*reader, off, 128 * KiB);
      REQUIRE(r.ok());
      CHECK(*r == data.substr(off, 128 * KiB));
    }
  }
  REQUIRE(Eventually([&] { return h.fake->in_flight() == 0; }));
  CHECK(h.fake->count(Op::kGet) == 30);  // each record's part once
  CHECK(reader->stats().parts == 1);
  CHECK(Eventually([&] { return h.budget->used() <= 8 * MiB; }));
  reader->Close();
}
