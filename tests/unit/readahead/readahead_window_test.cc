// ReadaheadWindow: sequential detection and window sizing, no I/O.
#include <catch2/catch.hpp>

#include "readahead/readahead_window.h"
#include "support/byte_units.h"

using ossmount::readahead::ReadaheadWindow;
using Access = ReadaheadWindow::Access;

using ossmount::testing::KiB;
using ossmount::testing::MiB;

namespace {

ReadaheadWindow::Options Opts() {
  ReadaheadWindow::Options o;
  o.initial = 1 * MiB;
  o.max = 8 * MiB;
  o.slack = 256 * KiB;
  return o;
}
}  // namespace

TEST_CASE("Window opens at the initial size on a read from offset 0 and doubles per window read") {
  ReadaheadWindow w(Opts());
  CHECK(w.window() == 0);
  CHECK(w.OnRead(0, 128 * KiB) == Access::kSequential);
  CHECK(w.window() == 1 * MiB);
  uint64_t off = 128 * KiB;
  std::vector<uint64_t> sizes;
  while (off < 64 * MiB) {
    REQUIRE(w.OnRead(off, 128 * KiB) == Access::kSequential);
    off += 128 * KiB;
    if (sizes.empty() || sizes.back() != w.window()) sizes.push_back(w.window());
  }
  CHECK(sizes == std::vector<uint64_t>{1 * MiB, 2 * MiB, 4 * MiB, 8 * MiB});
  CHECK(w.end() == 64 * MiB);
}

TEST_CASE("A far read is random and closes the window, contiguous reads reopen it") {
  ReadaheadWindow w(Opts());
  for (uint64_t off = 0; off < 4 * MiB; off += 128 * KiB) w.OnRead(off, 128 * KiB);
  REQUIRE(w.window() > 1 * MiB);
  CHECK(w.OnRead(100 * MiB, 4 * KiB) == Access::kRandom);
  CHECK(w.window() == 0);
  CHECK(w.OnRead(100 * MiB + 4 * KiB, 4 * KiB) == Access::kSequential);
  CHECK(w.window() == 1 * MiB);
  // Backwards far is random too.
  CHECK(w.OnRead(0, 4 * KiB) == Access::kRandom);
  // The first read of a file away from 0 is random.
  ReadaheadWindow fresh(Opts());
  CHECK(fresh.OnRead(5 * MiB, 128 * KiB) == Access::kRandom);
}

TEST_CASE("Reads slightly out of order or skipping into the window stay sequential") {
  ReadaheadWindow w(Opts());
  w.OnRead(0, 128 * KiB);
  w.OnRead(256 * KiB, 128 * KiB);  // the kernel sent 256K before 128K
  CHECK(w.OnRead(128 * KiB, 128 * KiB) == Access::kSequential);
  CHECK(w.end() == 384 * KiB);
  CHECK(w.OnRead(384 * KiB + 900 * KiB, 4 * KiB) == Access::kSequential);  // inside 1 MiB
  CHECK(w.OnRead(w.end() + 3 * MiB, 4 * KiB) == Access::kRandom);
}

TEST_CASE("Shrink halves the window but not below the initial size") {
  ReadaheadWindow w(Opts());
  for (uint64_t off = 0; off < 32 * MiB; off += 128 * KiB) w.OnRead(off, 128 * KiB);
  REQUIRE(w.window() == 8 * MiB);
  w.Shrink();
  CHECK(w.window() == 4 * MiB);
  w.Shrink();
  w.Shrink();
  w.Shrink();
  CHECK(w.window() == 1 * MiB);
}

TEST_CASE("Grow doubles the last read's window up to the maximum, and only a window") {
  ReadaheadWindow w(Opts());
  REQUIRE(w.OnRead(0, 128 * KiB) == Access::kSequential);
  w.Grow();
  CHECK(w.window() == 2 * MiB);
  w.Grow();
  w.Grow();
  CHECK(w.window() == 8 * MiB);
  w.Grow();
  CHECK(w.window() == 8 * MiB);  // Opts().max
  // Growing restarts the count toward the next doubling by consumption: after a stall at
  // 2 MiB, the reader doubles again once it has advanced a whole (grown) window.
  ReadaheadWindow v(Opts());
  for (uint64_t off = 0; off < 1 * MiB; off += 128 * KiB) v.OnRead(off, 128 * KiB);
  v.OnRead(1 * MiB, 128 * KiB);
  REQUIRE(v.window() == 2 * MiB);
  v.Grow();
  REQUIRE(v.window() == 4 * MiB);
  for (uint64_t off = 1 * MiB + 128 * KiB; off < 5 * MiB; off += 128 * KiB) {
    v.OnRead(off, 128 * KiB);
  }
  CHECK(v.window() == 4 * MiB);
  v.OnRead(5 * MiB, 128 * KiB);
  CHECK(v.window() == 8 * MiB);
  // A random read's run has no window to grow.
  CHECK(v.OnRead(100 * MiB, 4 * KiB) == Access::kRandom);
  v.Grow();
  CHECK(v.window() == 0);
}

TEST_CASE("A run away from offset 0 is short until it covers the establish size") {
  ReadaheadWindow::Options o = Opts();
  o.establish = 1 * MiB;
  ReadaheadWindow w(o);
  CHECK(w.OnRead(10 * MiB, 128 * KiB) == Access::kRandom);
  uint64_t off = 10 * MiB + 128 * KiB;
  for (; off < 11 * MiB - 128 * KiB; off += 128 * KiB) {
    REQUIRE(w.OnRead(off, 128 * KiB) == Access::kShortRun);
    CHECK(w.window() == 0);
    CHECK(w.run() == off + 128 * KiB - 10 * MiB);
  }
  // The read that takes the run to 1 MiB opens the window at its initial size.
  CHECK(w.OnRead(off, 128 * KiB) == Access::kSequential);
  CHECK(w.window() == 1 * MiB);
  // A random read ends the run; a run from offset 0 opens the window at once.
  CHECK(w.OnRead(100 * MiB, 4 * KiB) == Access::kRandom);
  CHECK(w.OnRead(100 * MiB + 4 * KiB, 4 * KiB) == Access::kShortRun);
  CHECK(w.OnRead(0, 4 * KiB) == Access::kRandom);
  CHECK(w.OnRead(4 * KiB, 4 * KiB) == Access::kSequential);
  CHECK(w.window() == 1 * MiB);
  ReadaheadWindow fresh(o);
  CHECK(fresh.OnRead(0, 4 * KiB) == Access::kSequential);
}

TEST_CASE("A short run whose requests double is ramping, reads of one size are not") {
  ReadaheadWindow::Options o = Opts();
  o.establish = 8 * MiB;
  ReadaheadWindow w(o);
  // The kernel's readahead for a read() of a record after its header: 16K, 64K, 128K, ...
  CHECK(w.OnRead(20 * MiB, 16 * KiB) == Access::kRandom);
  CHECK_FALSE(w.ramping());
  uint64_t off = 20 * MiB + 16 * KiB;
  for (uint64_t size : {64 * KiB, 128 * KiB, 256 * KiB}) {
    REQUIRE(w.OnRead(off, size) == Access::kShortRun);
    CHECK(w.ramping());
    off += size;
  }
  // A request no longer than the one before (the kernel at its largest) is not a ramp.
  REQUIRE(w.OnRead(off, 256 * KiB) == Access::kShortRun);
  CHECK_FALSE(w.ramping());
  // Page faults' read-around: adjacent reads of one size, never a ramp.
  CHECK(w.OnRead(60 * MiB, 1 * MiB) == Access::kRandom);
  CHECK(w.OnRead(61 * MiB, 1 * MiB) == Access::kShortRun);
  CHECK_FALSE(w.ramping());
  // A doubling read behind the run's end (a request arriving late) is not one either.
  CHECK(w.OnRead(80 * MiB, 64 * KiB) == Access::kRandom);
  CHECK(w.OnRead(80 * MiB + 64 * KiB, 64 * KiB) == Access::kShortRun);
  CHECK(w.OnRead(80 * MiB, 128 * KiB) == Access::kShortRun);
  CHECK_FALSE(w.ramping());
}

TEST_CASE("Interleaved readers of one open file each keep their own run") {
  ReadaheadWindow::Options o = Opts();
  o.establish = 1 * MiB;
  ReadaheadWindow w(o);
  // Two readers sharing the descriptor, each reading on from its own random place.
  CHECK(w.OnRead(10 * MiB, 128 * KiB) == Access::kRandom);
  const size_t a = w.stream();
  CHECK(w.OnRead(50 * MiB, 128 * KiB) == Access::kRandom);
  const size_t b = w.stream();
  CHECK(a != b);
  CHECK(!w.interleaved(a));
  CHECK(!w.interleaved(b));
  for (uint64_t step = 1; step < 7; ++step) {
    INFO("step " << step);
    REQUIRE(w.OnRead(10 * MiB + step * 128 * KiB, 128 * KiB) == Access::kShortRun);
    CHECK(w.stream() == a);
    CHECK(w.run() == (step + 1) * 128 * KiB);
    REQUIRE(w.OnRead(50 * MiB + step * 128 * KiB, 128 * KiB) == Access::kShortRun);
    CHECK(w.stream() == b);
    CHECK(w.run() == (step + 1) * 128 * KiB);
  }
  CHECK(w.interleaved(a));  // continued after b's reads: a reader sharing the file
  CHECK(w.interleaved(b));
  // a covers 1 MiB first and opens its window; b, past 1 MiB too, opens its own, and
  // neither closes the other's.
  CHECK(w.OnRead(10 * MiB + 7 * 128 * KiB, 128 * KiB) == Access::kSequential);
  CHECK(w.window() == 1 * MiB);
  CHECK(w.OnRead(50 * MiB + 7 * 128 * KiB, 128 * KiB) == Access::kSequential);
  CHECK(w.stream() == b);
  CHECK(w.window() == 1 * MiB);
  CHECK(w.windows() == 2);
  CHECK(w.OnRead(50 * MiB + 8 * 128 * KiB, 128 * KiB) == Access::kSequential);
  CHECK(w.OnRead(11 * MiB, 128 * KiB) == Access::kSequential);
  CHECK(w.stream() == a);
  CHECK(w.end() == 11 * MiB + 128 * KiB);
  // Each window counts as ahead of its run: a read inside it continues that run.
  CHECK(w.NearAnyRun(11 * MiB + 900 * KiB, 11 * MiB + 901 * KiB, 256 * KiB));
  CHECK(w.NearAnyRun(50 * MiB + 1800 * KiB, 50 * MiB + 1801 * KiB, 256 * KiB));
  CHECK(!w.NearAnyRun(53 * MiB, 53 * MiB + 1, 256 * KiB));
  CHECK(w.OnRead(50 * MiB + 1800 * KiB, 128 * KiB) == Access::kSequential);
  CHECK(w.stream() == b);
  // A third reader's read continues no run: both readers, interleaved, keep their windows.
  CHECK(w.OnRead(200 * MiB, 4 * KiB) == Access::kRandom);
  CHECK(w.window() == 0);
  CHECK(w.windows() == 2);
  CHECK(w.OnRead(11 * MiB + 128 * KiB, 128 * KiB) == Access::kSequential);
  CHECK(w.stream() == a);
  CHECK(w.window() == 1 * MiB);
  // A window closed (its reader idle) opens again at the run's next read.
  w.CloseWindow(b);
  CHECK(w.windows() == 1);
  CHECK(!w.NearAnyRun(50 * MiB + 2500 * KiB, 50 * MiB + 2501 * KiB, 256 * KiB));
  CHECK(w.OnRead(50 * MiB + 1928 * KiB, 128 * KiB) == Access::kSequential);
  CHECK(w.stream() == b);
  CHECK(w.window() == 1 * MiB);
}

TEST_CASE("Beyond the windows it keeps, an established run stays a short run") {
  ReadaheadWindow::Options o = Opts();
  o.establish = 1 * MiB;
  o.windows = 1;
  ReadaheadWindow w(o);
  CHECK(w.OnRead(0, 128 * KiB) == Access::kSequential);
  const size_t a = w.stream();
  CHECK(w.OnRead(50 * MiB, 128 * KiB) == Access::kRandom);
  const size_t b = w.stream();
  // a's first read after b's opens its window again (a started at 0: established).
  CHECK(w.OnRead(128 * KiB, 128 * KiB) == Access::kSequential);
  for (uint64_t step = 1; step < 16; ++step) {
    INFO("step " << step);
    CHECK(w.OnRead(50 * MiB + step * 128 * KiB, 128 * KiB) == Access::kShortRun);
    CHECK(w.stream() == b);
    CHECK(w.OnRead((step + 1) * 128 * KiB, 128 * KiB) == Access::kSequential);
    CHECK(w.stream() == a);
  }
  CHECK(w.windows() == 1);
  // A read that continues no run keeps a's window (a is interleaved); once a's window is
  // closed, b, established, takes the one window at its next read.
  CHECK(w.OnRead(200 * MiB, 4 * KiB) == Access::kRandom);
  CHECK(w.windows() == 1);
  w.CloseWindow(a);
  CHECK(w.OnRead(50 * MiB + 16 * 128 * KiB, 128 * KiB) == Access::kSequential);
  CHECK(w.stream() == b);
  CHECK(w.OnRead(17 * 128 * KiB, 128 * KiB) == Access::kShortRun);
  CHECK(w.stream() == a);
}

TEST_CASE("Beyond the runs it tracks, the least recently read run is forgotten") {
  ReadaheadWindow::Options o = Opts();
  o.establish = 1 * MiB;
  o.streams = 3;
  ReadaheadWindow w(o);
  for (uint64_t r : {10, 20, 30}) CHECK(w.OnRead(r * MiB, 4 * KiB) == Access::kRandom);
  CHECK(w.OnRead(10 * MiB + 4 * KiB, 4 * KiB) == Access::kShortRun);  // 10 read last now
  CHECK(w.interleaved(w.stream()));
  CHECK(w.OnRead(40 * MiB, 4 * KiB) == Access::kRandom);            // forgets 20
  CHECK(w.OnRead(20 * MiB + 4 * KiB, 4 * KiB) == Access::kRandom);  // forgets 30
  CHECK(w.OnRead(30 * MiB + 4 * KiB, 4 * KiB) == Access::kRandom);  // forgets 10
  CHECK(w.OnRead(40 * MiB + 4 * KiB, 4 * KiB) == Access::kShortRun);
  CHECK(w.OnRead(20 * MiB + 8 * KiB, 4 * KiB) == Access::kShortRun);
  CHECK(w.OnRead(10 * MiB + 8 * KiB, 4 * KiB) == Access::kRandom);
  // One tracked run is the single-reader behaviour: every jump is random.
  o.streams = 1;
  ReadaheadWindow one(o);
  CHECK(one.OnRead(10 * MiB, 4 * KiB) == Access::kRandom);
  CHECK(one.OnRead(20 * MiB, 4 * KiB) == Access::kRandom);
  CHECK(one.OnRead(10 * MiB + 4 * KiB, 4 * KiB) == Access::kRandom);
}

TEST_CASE("A lone reader's earlier runs do not hold what was fetched for them") {
  ReadaheadWindow::Options o = Opts();
  o.establish = 1 * MiB;
  ReadaheadWindow w(o);
  // One reader jumping from record to record: each run random, then continued by itself.
  for (uint64_t r : {10, 20, 30}) {
    CHECK(w.OnRead(r * MiB, 4 * KiB) == Access::kRandom);
    CHECK(w.OnRead(r * MiB + 4 * KiB, 4 * KiB) == Access::kShortRun);
    CHECK(!w.interleaved(w.stream()));
  }
  CHECK(w.NearAnyRun(30 * MiB, 30 * MiB + 1, 256 * KiB));  // where it is
  CHECK(!w.NearAnyRun(10 * MiB, 10 * MiB + 1, 256 * KiB));
  CHECK(!w.NearAnyRun(20 * MiB, 20 * MiB + 1, 256 * KiB));
  // Coming back to a run makes it interleaved: a reader that shares the file.
  CHECK(w.OnRead(20 * MiB + 8 * KiB, 4 * KiB) == Access::kShortRun);
  CHECK(w.OnRead(30 * MiB + 8 * KiB, 4 * KiB) == Access::kShortRun);
  CHECK(w.NearAnyRun(20 * MiB, 20 * MiB + 1, 256 * KiB));
  CHECK(!w.NearAnyRun(10 * MiB, 10 * MiB + 1, 256 * KiB));
}
