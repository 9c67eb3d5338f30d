// DatasetPrefetcher's scheduling (hint window and cursor, warm-up jobs, budgets) against a
// scripted Fetcher and Lister: the test decides when each fetch completes and how.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/format_bytes.h"
#include "prefetch/dataset_prefetcher.h"
#include "support/eventually.h"

namespace {

using namespace ossmount;
using namespace ossmount::prefetch;
using namespace std::chrono_literals;

// Records every fetch; the test completes them one by one.
class ScriptedFetcher {
 public:
  struct Call {
    PrefetchItem item;
    bool hold = false;
    FetchDone done;
  };

  Fetcher AsFetcher() {
    return [this](const PrefetchItem& item, bool hold, FetchDone done) {
      std::lock_guard lock(mu_);
      calls_.push_back(Call{item, hold, std::move(done)});
      started_.push_back(item.path);
    };
  }
  // Paths fetched so far, in start order.
  std::vector<std::string> started() const {
    std::lock_guard lock(mu_);
    return started_;
  }
  size_t pending() const {
    std::lock_guard lock(mu_);
    return calls_.size();
  }
  std::optional<std::string> oldest_pending() const {
    std::lock_guard lock(mu_);
    if (calls_.empty()) return std::nullopt;
    return calls_.front().item.path;
  }
  bool hold_of(const std::string& path) const {
    std::lock_guard lock(mu_);
    for (const auto& c : calls_) {
      if (c.item.path == path) return c.hold;
    }
    FAIL("no pending fetch of " << path);
    return false;
  }
  // Completes the pending fetch of `path`; a kFetched result gets a hold the test can watch.
  std::weak_ptr<const void> Complete(const std::string& path,
                                     FetchOutcome outcome = FetchOutcome::kFetched,
                                     uint64_t bytes = 100) {
    FetchDone done;
    bool hold_asked = false;
    {
      std::lock_guard lock(mu_);
      for (auto it = calls_.begin(); it != calls_.end(); ++it) {
        if (it->item.path == path) {
          done = std::move(it->done);
          hold_asked = it->hold;
          calls_.erase(it);
          break;
        }
      }
    }
    REQUIRE(done);
    FetchResult r;
    r.outcome = outcome;
    r.bytes = bytes;
    std::weak_ptr<const void> weak;
    if (outcome == FetchOutcome::kFetched && hold_asked) {
      auto hold = std::make_shared<std::string>(path);
      weak = hold;
      r.hold = hold;
    }
    done(std::move(r));
    return weak;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Call> calls_;
  std::vector<std::string> started_;
};

struct Rig {
  explicit Rig(DatasetPrefetchOptions o, Lister lister = nullptr)
      : guard(boost::asio::make_work_guard(io)) {
    if (!lister) {
      lister = [](const std::string&, ListBatch, std::function<void(Status)> done) {
        done(Status(ErrorCode::kNotFound, "no lister in this test"));
      };
    }
    prefetcher = std::make_shared<DatasetPrefetcher>(io, o, fetcher.AsFetcher(), lister);
    thread = std::thread([this] { io.run(); });
  }
  ~Rig() {
    prefetcher.reset();
    guard.reset();
    io.stop();
    thread.join();
  }
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard;
  ScriptedFetcher fetcher;
  std::shared_ptr<DatasetPrefetcher> prefetcher;
  std::thread thread;
};

std::vector<std::string> Named(const std::string& prefix, int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}

std::vector<std::string> Paths(int n) { return Named("f", n); }

std::vector<PrefetchItem> Items(int n, uint64_t size) {
  std::vector<PrefetchItem> v;
  for (int i = 0; i < n; ++i) {
    PrefetchItem item;
    item.path = "w" + std::to_string(i);
    item.key = "k/" + item.path;
    item.size = size;
    item.etag = "\"e\"";
    v.push_back(item);
  }
  return v;
}

const WarmupJobStatus& Job(const PrefetchStatus& st, uint64_t id) {
  for (const auto& j : st.jobs) {
    if (j.id == id) return j;
  }
  FAIL("no job " << id);
  return st.jobs.front();
}

}  // namespace

TEST_CASE("hints fetch in list order up to hint_ahead_files past the furthest read",
          "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 3;
  Rig rig(o);
  REQUIRE(rig.prefetcher->SetHints(Paths(10)) == 10);
  CHECK(rig.fetcher.started() == std::vector<std::string>{"f0", "f1", "f2"});
  CHECK(rig.fetcher.hold_of("f0"));  // hinted bytes are held for the reader
  auto h0 = rig.fetcher.Complete("f0");
  rig.fetcher.Complete("f1");
  rig.fetcher.Complete("f2");
  // Three fetched, none read: the window is full.
  CHECK(rig.fetcher.started().size() == 3);
  CHECK_FALSE(h0.expired());
  CHECK(rig.prefetcher->Status().hints.outstanding_files == 3);
  CHECK(rig.prefetcher->Status().hints.outstanding_bytes == 300);

  rig.prefetcher->OnRead("f0");
  CHECK(h0.expired());  // released once read
  CHECK(rig.fetcher.started() == std::vector<std::string>{"f0", "f1", "f2", "f3"});
  CHECK(rig.prefetcher->Status().hints.read == 1);
}

TEST_CASE("out-of-order reads keep unread hinted files held", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 4;
  Rig rig(o);
  rig.prefetcher->SetHints(Paths(8));
  auto h0 = rig.fetcher.Complete("f0");
  auto h1 = rig.fetcher.Complete("f1");
  rig.fetcher.Complete("f2");
  rig.fetcher.Complete("f3");
  // Worker 2 reads f2 before worker 0 reads f0: f0 must stay (it is still to be read),
  // and the window now reaches 4 positions past f2.
  rig.prefetcher->OnRead("f2");
  CHECK_FALSE(h0.expired());
  CHECK_FALSE(h1.expired());
  CHECK(rig.fetcher.started() ==
        std::vector<std::string>{"f0", "f1", "f2", "f3", "f4", "f5", "f6"});
  rig.prefetcher->OnRead("f0");  // behind the furthest read: frees f0, moves nothing
  CHECK(h0.expired());
  CHECK(rig.fetcher.started().size() == 7);
  rig.prefetcher->OnRead("f3");
  CHECK(rig.fetcher.started().back() == "f7");
}

TEST_CASE("a hinted file read while its prefetch is in flight is not held afterwards",
          "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 2;
  Rig rig(o);
  rig.prefetcher->SetHints(Paths(5));
  rig.prefetcher->OnRead("f0");  // the reader joined the fetch in flight
  CHECK(rig.fetcher.started() == std::vector<std::string>{"f0", "f1", "f2"});
  auto h0 = rig.fetcher.Complete("f0");
  CHECK(h0.expired());  // not kept: the reader has the bytes
  CHECK(rig.prefetcher->Status().hints.outstanding_files == 2);
}

TEST_CASE("a hinted file the reader got to first is never prefetched", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 1;
  Rig rig(o);
  rig.prefetcher->SetHints(Paths(4));
  CHECK(rig.fetcher.started() == std::vector<std::string>{"f0"});
  rig.prefetcher->OnRead("f1");  // read on demand before the window reached it
  rig.fetcher.Complete("f0");
  rig.prefetcher->OnRead("f0");
  rig.prefetcher->OnRead("f2");
  CHECK(rig.fetcher.started() == std::vector<std::string>{"f0", "f2", "f3"});
}

TEST_CASE("a new hint list replaces the old one and releases its holds", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 2;
  Rig rig(o);
  rig.prefetcher->SetHints({"a", "b", "c"});
  auto ha = rig.fetcher.Complete("a");
  REQUIRE_FALSE(ha.expired());
  rig.prefetcher->SetHints({"x", "y"});
  CHECK(ha.expired());
  // "b" is still in flight from the old list; its completion is dropped, not held.
  auto hb = rig.fetcher.Complete("b");
  CHECK(hb.expired());
  auto st = rig.prefetcher->Status();
  CHECK(st.hints.files == 2);
  CHECK(st.hints.generation == 2);
  CHECK(rig.fetcher.started() == std::vector<std::string>{"a", "b", "x", "y"});
}

HintSender Sender(int pid, std::shared_ptr<std::atomic<bool>> alive = nullptr) {
  HintSender s;
  s.pid = pid;
  if (alive) s.alive = [alive] { return alive->load(); };
  return s;
}

TEST_CASE("each sender's list is followed, each with its own window", "[dataset_prefetcher]") {
  // Two ranks of a distributed job, each reading its own share.
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 2;
  Rig rig(o);
  rig.prefetcher->SetHints(Named("a", 10), Sender(101));
  rig.prefetcher->SetHints(Named("b", 10), Sender(102));
  CHECK(rig.fetcher.started() == std::vector<std::string>{"a0", "a1", "b0", "b1"});
  rig.fetcher.Complete("a0");
  auto hb0 = rig.fetcher.Complete("b0");
  rig.prefetcher->OnRead("a0");  // moves a's window only
  CHECK(rig.fetcher.started().back() == "a2");
  CHECK_FALSE(hb0.expired());
  rig.prefetcher->OnRead("b0");
  CHECK(hb0.expired());
  CHECK(rig.fetcher.started().back() == "b2");
  auto st = rig.prefetcher->Status();
  REQUIRE(st.hint_lists.size() == 2);
  CHECK(st.hint_lists[0].pid == 101);
  CHECK(st.hint_lists[0].read == 1);
  CHECK(st.hint_lists[1].pid == 102);
  CHECK(st.hint_lists[1].read == 1);
  CHECK(st.hints.files == 20);
  CHECK(st.hints.read == 2);
  CHECK(st.hints.generation == 2);
}

TEST_CASE("a sender's new list replaces its own list only", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 1;
  Rig rig(o);
  rig.prefetcher->SetHints(Named("a", 3), Sender(101));
  rig.prefetcher->SetHints(Named("b", 3), Sender(102));
  auto ha0 = rig.fetcher.Complete("a0");
  auto hb0 = rig.fetcher.Complete("b0");
  rig.prefetcher->SetHints(Named("c", 3), Sender(101));  // rank 101's next epoch
  CHECK(ha0.expired());
  CHECK_FALSE(hb0.expired());
  auto st = rig.prefetcher->Status();
  REQUIRE(st.hint_lists.size() == 2);
  CHECK(st.hint_lists[0].pid == 102);
  CHECK(st.hint_lists[1].pid == 101);
  CHECK(st.hint_lists[1].files == 3);
  CHECK(rig.fetcher.started().back() == "c0");
  // An empty list clears the sender's list, and no other.
  rig.prefetcher->SetHints({}, Sender(102));
  CHECK(hb0.expired());
  st = rig.prefetcher->Status();
  REQUIRE(st.hint_lists.size() == 1);
  CHECK(st.hint_lists[0].pid == 101);
}

TEST_CASE("senders the daemon cannot see (pid 0) are told apart by the names they give",
          "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 1;
  Rig rig(o);
  auto unseen = [](std::string name) {
    HintSender s;
    s.name = std::move(name);  // pid 0
    return s;
  };
  rig.prefetcher->SetHints(Named("a", 3), unseen("pod-1:7"));
  rig.prefetcher->SetHints(Named("b", 3), unseen("pod-1:8"));
  auto ha0 = rig.fetcher.Complete("a0");
  auto hb0 = rig.fetcher.Complete("b0");
  auto st = rig.prefetcher->Status();
  REQUIRE(st.hint_lists.size() == 2);  // two ranks in another container: both followed
  CHECK(st.hint_lists[0].name == "pod-1:7");
  CHECK(st.hint_lists[1].name == "pod-1:8");
  rig.prefetcher->SetHints(Named("c", 3), unseen("pod-1:7"));  // rank 7's next epoch
  CHECK(ha0.expired());
  CHECK_FALSE(hb0.expired());
  st = rig.prefetcher->Status();
  REQUIRE(st.hint_lists.size() == 2);
  CHECK(st.hint_lists[0].name == "pod-1:8");
  CHECK(st.hint_lists[1].name == "pod-1:7");
  CHECK(st.hint_lists[1].files == 3);
  CHECK(rig.prefetcher->StatusJson().find(R"("name":"pod-1:7")") != std::string::npos);
}

TEST_CASE("a list sent in pieces is followed as one, in order, past the first piece's end",
          "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 2;
  Rig rig(o);
  REQUIRE(rig.prefetcher->SetHints(Named("a", 2), Sender(101)) == 2);
  REQUIRE(rig.prefetcher->SetHints(Named("b", 2), Sender(102)) == 2);
  CHECK(rig.prefetcher->AppendHints(Named("c", 3), Sender(101)) == 3);
  auto st = rig.prefetcher->Status();
  REQUIRE(st.hint_lists.size() == 2);
  CHECK(st.hint_lists[0].pid == 101);
  CHECK(st.hint_lists[0].files == 5);  // a0 a1 c0 c1 c2: one list
  CHECK(st.hint_lists[1].files == 2);  // the other sender's list is untouched
  // Read through the first piece: the window runs on into the appended one, in order.
  for (const char* name : {"a0", "a1"}) {
    rig.fetcher.Complete(name);
    rig.prefetcher->OnRead(name);
  }
  std::vector<std::string> mine;
  for (const auto& p : rig.fetcher.started()) {
    if (p[0] == 'a' || p[0] == 'c') mine.push_back(p);
  }
  CHECK(mine == std::vector<std::string>{"a0", "a1", "c0", "c1"});
  rig.fetcher.Complete("c0");
  rig.prefetcher->OnRead("c0");
  CHECK(rig.fetcher.started().back() == "c2");
  // A piece for a sender without a list starts one, as SetHints would.
  CHECK(rig.prefetcher->AppendHints(Named("d", 2), Sender(103)) == 2);
  CHECK(rig.prefetcher->Status().hint_lists.size() == 3);
}

TEST_CASE("the list of a sender that exited is followed until any new list arrives",
          "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 1;
  Rig rig(o);
  auto one_shot = std::make_shared<std::atomic<bool>>(true);
  rig.prefetcher->SetHints(Named("a", 4), Sender(101, one_shot));
  *one_shot = false;  // a script that sent the order and exited
  auto ha0 = rig.fetcher.Complete("a0");
  rig.prefetcher->OnRead("a0");
  CHECK(rig.fetcher.started().back() == "a1");  // still followed
  auto ha1 = rig.fetcher.Complete("a1");
  rig.prefetcher->SetHints(Named("b", 4), Sender(102, std::make_shared<std::atomic<bool>>(true)));
  CHECK(ha1.expired());
  auto st = rig.prefetcher->Status();
  REQUIRE(st.hint_lists.size() == 1);
  CHECK(st.hint_lists[0].pid == 102);
  CHECK(st.hints.outstanding_files == 1);  // b0, in flight
}

TEST_CASE("hint_ahead_bytes is shared evenly among the lists", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 100;
  o.hint_ahead_bytes = 400;
  o.hint_concurrency = 1;  // one fetch at a time: the bytes held decide what starts next
  Rig rig(o);
  rig.prefetcher->SetHints(Named("a", 10), Sender(101));
  for (int i = 0; i < 4; ++i) rig.fetcher.Complete("a" + std::to_string(i));  // 100 bytes each
  CHECK(rig.fetcher.pending() == 0);  // alone: all 400 bytes
  rig.prefetcher->SetHints(Named("b", 10), Sender(102));
  rig.fetcher.Complete("b0");
  rig.fetcher.Complete("b1");
  // Two lists: 200 bytes each. a holds 400 and starts nothing until its reader catches up.
  CHECK(rig.fetcher.pending() == 0);
  CHECK(rig.fetcher.started() == std::vector<std::string>{"a0", "a1", "a2", "a3", "b0", "b1"});
  rig.prefetcher->OnRead("a0");
  rig.prefetcher->OnRead("a1");
  rig.prefetcher->OnRead("a2");  // a holds 100 now
  CHECK(rig.fetcher.started().back() == "a4");
  CHECK(rig.fetcher.started().size() == 7);
}

TEST_CASE("a file in two lists counts as read in the list whose reader is nearest",
          "[dataset_prefetcher]") {
  // A distributed sampler pads each rank's share with a few files of another rank's.
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 2;
  Rig rig(o);
  rig.prefetcher->SetHints({"a0", "a1", "a2", "a3", "shared"}, Sender(101));
  rig.prefetcher->SetHints({"shared", "b1", "b2"}, Sender(102));
  rig.prefetcher->OnRead("shared");  // rank 102 reads its first file
  auto st = rig.prefetcher->Status();
  REQUIRE(st.hint_lists.size() == 2);
  CHECK(st.hint_lists[0].read == 0);
  CHECK(st.hint_lists[1].read == 1);
  rig.prefetcher->OnRead("a0");
  rig.prefetcher->OnRead("a1");
  rig.prefetcher->OnRead("a2");
  rig.prefetcher->OnRead("a3");
  rig.prefetcher->OnRead("shared");  // now rank 101 reads it
  st = rig.prefetcher->Status();
  CHECK(st.hint_lists[0].read == 5);
}

TEST_CASE("beyond kMaxHintLists senders the oldest list goes", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 1;
  Rig rig(o);
  const int n = static_cast<int>(DatasetPrefetcher::kMaxHintLists) + 1;
  for (int pid = 1; pid <= n; ++pid)
    rig.prefetcher->SetHints({"f" + std::to_string(pid)}, Sender(pid));
  auto st = rig.prefetcher->Status();
  REQUIRE(st.hint_lists.size() == DatasetPrefetcher::kMaxHintLists);
  CHECK(st.hint_lists.front().pid == 2);
  CHECK(st.hint_lists.back().pid == n);
}

TEST_CASE("the status JSON names each sender's list", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 1;
  Rig rig(o);
  rig.prefetcher->SetHints(Named("a", 3), Sender(101));
  rig.prefetcher->SetHints(Named("b", 2), Sender(102));
  rapidjson::Document doc;
  doc.Parse(rig.prefetcher->StatusJson().c_str());
  REQUIRE(doc.IsObject());
  const auto& hints = doc["hints"];
  CHECK(hints["files"].GetUint64() == 5);
  CHECK(hints["lists"].GetUint64() == 2);
  REQUIRE(hints["senders"].IsArray());
  REQUIRE(hints["senders"].Size() == 2);
  CHECK(hints["senders"][0]["pid"].GetInt() == 101);
  CHECK(hints["senders"][0]["files"].GetUint64() == 3);
  CHECK(hints["senders"][1]["pid"].GetInt() == 102);
  CHECK(hints["senders"][1]["in_flight"].GetInt() == 1);
}

TEST_CASE("hints wait when the memory budget refuses and resume after a read",
          "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 3;
  Rig rig(o);
  rig.prefetcher->SetHints(Paths(6));
  rig.fetcher.Complete("f0");
  rig.fetcher.Complete("f1", FetchOutcome::kBudgetFull);
  rig.fetcher.Complete("f2", FetchOutcome::kBudgetFull);
  auto st = rig.prefetcher->Status();
  CHECK(st.hints.budget_wait);
  CHECK(rig.fetcher.started().size() == 3);  // nothing further ahead while refused
  rig.prefetcher->OnRead("f0");              // the reader frees memory
  auto started = rig.fetcher.started();
  REQUIRE(started.size() == 6);
  // The refused positions are retried first, in order.
  CHECK(std::vector<std::string>(started.begin() + 3, started.end()) ==
        std::vector<std::string>{"f1", "f2", "f3"});
}

TEST_CASE("many workers: the window runs ahead of the furthest read, not of the slowest",
          "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 4;
  o.concurrency = 100;
  Rig rig(o);
  rig.prefetcher->SetHints(Paths(40));
  // Four workers start batches at 0, 10, 20, 30 (reads on demand, before any prefetch).
  for (int i : {0, 10, 20, 30}) rig.prefetcher->OnRead("f" + std::to_string(i));
  // Everything up to 4 past the furthest read is fetched, the unread gaps included:
  // f0..f34 but f10, f20, f30 (read first). f0 was in flight when it was read.
  auto started = rig.fetcher.started();
  CHECK(started.size() == 32);
  CHECK(started.back() == "f34");
  CHECK(std::find(started.begin(), started.end(), "f10") == started.end());
}

TEST_CASE("a held file the reader skipped is released once it falls far behind",
          "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 1;
  Rig rig(o);
  const size_t lag = DatasetPrefetcher::kStaleFactor;
  rig.prefetcher->SetHints(Paths(static_cast<int>(lag + 4)));
  auto h0 = rig.fetcher.Complete("f0");
  // The reader never reads f0 but reads everything after it.
  for (size_t i = 1; i < lag; ++i) rig.prefetcher->OnRead("f" + std::to_string(i));
  CHECK_FALSE(h0.expired());  // less than `lag` behind the furthest read: kept
  rig.prefetcher->OnRead("f" + std::to_string(lag));
  CHECK(h0.expired());
  CHECK(rig.prefetcher->Status().hints.released_unread == 1);
}

TEST_CASE("hints go before warm-up within the shared concurrency", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 3;
  o.hint_concurrency = 3;
  o.hint_ahead_files = 2;
  Rig rig(o);
  rig.prefetcher->EnqueueFiles("job", Items(5, 10));
  CHECK(rig.fetcher.started() == std::vector<std::string>{"w0", "w1", "w2"});
  rig.prefetcher->SetHints({"h0", "h1", "h2"});
  rig.fetcher.Complete("w0");
  rig.fetcher.Complete("w1");
  // Freed slots go to hints first (up to hint_ahead_files), then to warm-up.
  CHECK(rig.fetcher.started() == std::vector<std::string>{"w0", "w1", "w2", "h0", "h1"});
  rig.fetcher.Complete("w2");
  CHECK(rig.fetcher.started().back() == "w3");
}

TEST_CASE("hints fill up to hint_concurrency, warm-up only below its own smaller one",
          "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 2;
  o.hint_concurrency = 4;
  o.hint_ahead_files = 10;
  Rig rig(o);
  rig.prefetcher->SetHints(Paths(10));
  CHECK(rig.fetcher.started() == std::vector<std::string>{"f0", "f1", "f2", "f3"});
  CHECK(rig.prefetcher->Status().in_flight == 4);
  // Warm-up waits while hints keep 2 or more in flight, and hints take each freed slot.
  rig.prefetcher->EnqueueFiles("job", Items(3, 10));
  CHECK(rig.fetcher.pending() == 4);
  rig.fetcher.Complete("f0");
  CHECK(rig.fetcher.started().back() == "f4");
  CHECK(rig.fetcher.pending() == 4);
  // Once the hints are all fetched, warm-up runs at its own concurrency.
  for (int i = 1; i < 10; ++i) rig.fetcher.Complete("f" + std::to_string(i));
  CHECK(rig.fetcher.pending() == 2);
  CHECK(rig.fetcher.started().back() == "w1");
}

TEST_CASE("a warm-up job runs at its concurrency and ends done", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 2;
  Rig rig(o);
  uint64_t id = rig.prefetcher->EnqueueFiles("job", Items(4, 10));
  CHECK(rig.fetcher.pending() == 2);
  CHECK(rig.fetcher.hold_of("w0"));  // no disk cache: held in memory
  rig.fetcher.Complete("w0", FetchOutcome::kFetched, 10);
  rig.fetcher.Complete("w1", FetchOutcome::kAlreadyCached, 10);
  rig.fetcher.Complete("w2", FetchOutcome::kFailed, 10);
  auto h3 = rig.fetcher.Complete("w3", FetchOutcome::kFetched, 10);
  auto st = rig.prefetcher->Status();
  const auto& job = Job(st, id);
  CHECK(job.state == JobState::kDone);
  CHECK(job.files_done == 4);
  CHECK(job.files_fetched == 2);
  CHECK(job.files_cached == 1);
  CHECK(job.files_failed == 1);
  CHECK(job.bytes_done == 30);
  CHECK(st.held_bytes == 20);
  // Memory-mode warm-up holds until the file is read once.
  CHECK_FALSE(h3.expired());
  rig.prefetcher->OnRead("w3");
  CHECK(h3.expired());
}

TEST_CASE("warm-up stops at the disk cache budget and says so", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 8;
  o.disk_budget = 250;
  Rig rig(o);
  uint64_t id = rig.prefetcher->EnqueueFiles("job", Items(5, 100));
  // Only what fits: 2 x 100 <= 250; the third would evict what was just fetched.
  CHECK(rig.fetcher.started() == std::vector<std::string>{"w0", "w1"});
  CHECK_FALSE(rig.fetcher.hold_of("w0"));  // disk mode: nothing held in memory
  rig.fetcher.Complete("w0");
  rig.fetcher.Complete("w1");
  auto st = rig.prefetcher->Status();
  const auto& job = Job(st, id);
  CHECK(job.state == JobState::kBudgetFull);
  CHECK(job.files_done == 2);
  CHECK(job.message.find("--max-cache-size") != std::string::npos);
  CHECK(st.held_bytes == 0);
  // An explicit new warm-up gets the whole cache again.
}

TEST_CASE("warm-up stops at what the disk cache's file system leaves room for, and says why",
          "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 8;
  o.disk_budget = 1000;
  uint64_t capacity = 350;  // --cache-min-free leaves room for less than --max-cache-size
  o.disk_capacity = [&capacity] { return capacity; };
  Rig rig(o);
  uint64_t id = rig.prefetcher->EnqueueFiles("job", Items(5, 100));
  CHECK(rig.fetcher.started() == std::vector<std::string>{"w0", "w1", "w2"});
  rig.fetcher.Complete("w0");
  rig.fetcher.Complete("w1");
  rig.fetcher.Complete("w2");
  auto st = rig.prefetcher->Status();
  const auto& job = Job(st, id);
  CHECK(job.state == JobState::kBudgetFull);
  CHECK(job.files_done == 3);
  CHECK(job.message.find("--cache-min-free") != std::string::npos);
  CHECK(job.message.find("--max-cache-size") != std::string::npos);
}

TEST_CASE("warm-up with room for all of --max-cache-size stops at --max-cache-size",
          "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 16;
  o.disk_budget = 1000;
  o.disk_capacity = [] { return uint64_t{5000}; };
  Rig rig(o);
  uint64_t id = rig.prefetcher->EnqueueFiles("job", Items(12, 100));
  CHECK(rig.fetcher.pending() == 10);
  for (int i = 0; i < 10; ++i) rig.fetcher.Complete("w" + std::to_string(i));
  auto st = rig.prefetcher->Status();
  const auto& job = Job(st, id);
  CHECK(job.state == JobState::kBudgetFull);
  CHECK(job.files_done == 10);
  CHECK(job.message.find("--cache-min-free") == std::string::npos);
  CHECK(job.message.find("--max-cache-size") != std::string::npos);
}

TEST_CASE("warm-up in memory stops when the memory budget refuses", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 1;
  Rig rig(o);
  uint64_t id = rig.prefetcher->EnqueueFiles("job", Items(3, 10));
  rig.fetcher.Complete("w0");
  rig.fetcher.Complete("w1", FetchOutcome::kBudgetFull);
  const auto st = rig.prefetcher->Status();
  const auto& job = Job(st, id);
  CHECK(job.state == JobState::kBudgetFull);
  CHECK(job.message.find("--max-memory") != std::string::npos);
  CHECK(rig.fetcher.started().size() == 2);
}

TEST_CASE("a busy disk cache delays warm-up instead of dropping files", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 1;
  o.disk_budget = 1000;
  o.busy_retry = 1ms;
  Rig rig(o);
  uint64_t id = rig.prefetcher->EnqueueFiles("job", Items(2, 10));
  rig.fetcher.Complete("w0", FetchOutcome::kBusy);
  // Retried after busy_retry (on the io thread).
  REQUIRE(ossmount::testing::Eventually([&] { return rig.fetcher.pending() != 0; }));
  REQUIRE(rig.fetcher.started() == std::vector<std::string>{"w0", "w0"});
  rig.fetcher.Complete("w0");
  rig.fetcher.Complete("w1");
  CHECK(Job(rig.prefetcher->Status(), id).state == JobState::kDone);
  CHECK(Job(rig.prefetcher->Status(), id).files_fetched == 2);
}

TEST_CASE("warm-up lists its paths in order and fails on a listing error", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 16;
  Lister lister = [](const std::string& path, ListBatch batch, std::function<void(Status)> done) {
    if (path == "missing") return done(Status(ErrorCode::kNotFound, "no such directory"));
    std::vector<PrefetchItem> items;
    for (int i = 0; i < 2; ++i) {
      PrefetchItem item;
      item.path = path + "/" + std::to_string(i);
      item.key = item.path;
      item.size = 5;
      items.push_back(item);
    }
    batch(items);
    done(Status::Ok());
  };
  Rig rig(o, lister);
  uint64_t ok = rig.prefetcher->StartWarmup({"a", "b"});
  CHECK(rig.fetcher.started() == std::vector<std::string>{"a/0", "a/1", "b/0", "b/1"});
  for (const auto& p : rig.fetcher.started()) rig.fetcher.Complete(p);
  CHECK(Job(rig.prefetcher->Status(), ok).state == JobState::kDone);
  CHECK(Job(rig.prefetcher->Status(), ok).bytes_total == 20);

  uint64_t bad = rig.prefetcher->StartWarmup({"missing"});
  const auto st = rig.prefetcher->Status();
  CHECK(Job(st, bad).state == JobState::kFailed);
  CHECK(Job(st, bad).message.find("missing") != std::string::npos);
}

TEST_CASE("cancelling warm-up stops queued work", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.concurrency = 1;
  Rig rig(o);
  uint64_t id = rig.prefetcher->EnqueueFiles("job", Items(3, 10));
  CHECK(rig.prefetcher->CancelWarmups() == 1);
  rig.fetcher.Complete("w0");
  CHECK(rig.fetcher.started().size() == 1);
  CHECK(Job(rig.prefetcher->Status(), id).state == JobState::kCancelled);
  CHECK(rig.prefetcher->StatusJson().find("\"cancelled\"") != std::string::npos);
}

TEST_CASE(
    "a hinted file in the page cache is not fetched, and RefetchPageCached fetches "
    "the unread ones",
    "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 3;
  Rig rig(o);
  rig.prefetcher->SetHints(Paths(8));
  for (const char* p : {"f0", "f1", "f2"}) rig.fetcher.Complete(p, FetchOutcome::kPageCached);
  // Nothing to hold or wait for, but the window is measured from the furthest read: it
  // moves only as the reader goes (a release without a READ counts as a read).
  auto st = rig.prefetcher->Status().hints;
  CHECK(st.page_cached == 3);
  CHECK(st.outstanding_files == 0);
  CHECK(rig.fetcher.started().size() == 3);
  rig.prefetcher->OnRead("f0");
  CHECK(rig.fetcher.started().back() == "f3");
  rig.fetcher.Complete("f3", FetchOutcome::kPageCached);
  CHECK(rig.prefetcher->Status().hints.page_cached == 4);

  // The page cache no longer holds them: the unread ones (not f0) are fetched after all.
  rig.prefetcher->RefetchPageCached();
  CHECK(rig.fetcher.started() ==
        std::vector<std::string>{"f0", "f1", "f2", "f3", "f1", "f2", "f3"});
  CHECK(rig.prefetcher->Status().hints.page_cached == 1);
  auto h1 = rig.fetcher.Complete("f1");
  CHECK_FALSE(h1.expired());  // held for the reader like any hinted file
  rig.prefetcher->OnRead("f1");
  CHECK(h1.expired());
  CHECK(rig.fetcher.started().back() == "f4");  // the window moved on
  rig.prefetcher->RefetchPageCached();          // nothing left to refetch
  CHECK(rig.fetcher.started().size() == 8);
}

// ---------------------------------------------------------------------------------------
// Cancel, and the control memory (--control-memory)

namespace {

// A lister that produces a page only when the test asks for it (Next), as a paged LIST sends
// one request at a time; a batch that returns false stops the listing, which then reports
// kCancelled, as the filesystem's lister does.
class PagedLister {
 public:
  // `pages` pages of `per_page` files under each listed path; each file's name is padded to
  // `name_bytes` characters.
  PagedLister(int pages, int per_page, size_t name_bytes = 8)
      : pages_(pages), per_page_(per_page), name_bytes_(name_bytes) {}

  Lister AsLister() {
    return [this](const std::string& path, ListBatch batch, std::function<void(Status)> done) {
      std::lock_guard lock(mu_);
      listed_.push_back(path);
      active_.push_back(Listing{path, std::move(batch), std::move(done), 0});
    };
  }
  // Delivers the next page of the oldest listing in progress; returns what its batch
  // returned. REQUIRES a listing in progress.
  bool Next() {
    Listing l;
    {
      std::lock_guard lock(mu_);
      REQUIRE_FALSE(active_.empty());
      l = std::move(active_.front());
      active_.pop_front();
      ++pages_sent_;
    }
    std::vector<PrefetchItem> items;
    for (int i = 0; i < per_page_; ++i) {
      PrefetchItem item;
      std::string name = std::to_string(l.page * per_page_ + i);
      name.insert(0, name_bytes_ > name.size() ? name_bytes_ - name.size() : 0, '0');
      item.path = l.path + "/" + name + ".JPEG";
      item.key = "imagenet/" + item.path;
      item.size = 10;
      item.etag = "\"0123456789abcdef0123456789abcdef\"";
      items.push_back(std::move(item));
    }
    const bool more = l.batch(std::move(items));
    if (!more) {
      l.done(Status(ErrorCode::kCancelled, "warm-up listing cancelled"));
    } else if (++l.page == pages_) {
      l.done(Status::Ok());
    } else {
      std::lock_guard lock(mu_);
      active_.push_front(std::move(l));  // its next page comes when asked
    }
    return more;
  }
  size_t active() const {
    std::lock_guard lock(mu_);
    return active_.size();
  }
  std::vector<std::string> listed() const {
    std::lock_guard lock(mu_);
    return listed_;
  }
  int pages_sent() const {
    std::lock_guard lock(mu_);
    return pages_sent_;
  }

 private:
  struct Listing {
    std::string path;
    ListBatch batch;
    std::function<void(Status)> done;
    int page = 0;
  };
  const int pages_;
  const int per_page_;
  const size_t name_bytes_;
  mutable std::mutex mu_;
  std::deque<Listing> active_;
  std::vector<std::string> listed_;
  int pages_sent_ = 0;
};

// Completes the fetches, oldest first, as they start, until none is left.
void CompleteAll(Rig& rig) {
  while (auto next = rig.fetcher.oldest_pending()) rig.fetcher.Complete(*next);
}

HintSender OtherUser(int pid, unsigned uid = 1000) {
  HintSender s;
  s.pid = pid;
  s.by.uid = uid;
  s.by.owner = false;
  return s;
}

Requester OtherRequester(unsigned uid = 1000) { return Requester{uid, false}; }

std::vector<std::string> ImageNetPaths(int n) {
  std::vector<std::string> v;
  char buf[64];
  for (int i = 0; i < n; ++i) {
    const unsigned cls = 1440764 + static_cast<unsigned>(i / 1300) * 7;
    std::snprintf(buf, sizeof buf, "train/n%08u/n%08u_%05d.JPEG", cls, cls, 10000 + i % 1300);
    v.emplace_back(buf);
  }
  return v;
}

uint64_t PathBytes(const std::vector<std::string>& v) {
  uint64_t n = 0;
  for (const auto& p : v) n += p.size();
  return n;
}

}  // namespace

TEST_CASE("cancel during a listing stops its next page and lists no further path",
          "[dataset_prefetcher][cancel]") {
  DatasetPrefetchOptions o;
  o.concurrency = 2;
  PagedLister lister(/*pages=*/100, /*per_page=*/10);
  Rig rig(o, lister.AsLister());
  const uint64_t id = rig.prefetcher->StartWarmup({"a", "b"});
  const uint64_t queued = rig.prefetcher->StartWarmup({"c"});  // lists beside the first
  REQUIRE(lister.listed() == std::vector<std::string>{"a", "c"});
  CHECK(lister.Next());  // a's first page: 10 files queued, 2 fetching
  CHECK(rig.fetcher.pending() == 2);
  CHECK(Job(rig.prefetcher->Status(), id).queued_files == 8);
  CHECK(rig.prefetcher->Status().control_memory.warmup_bytes > 0);

  CHECK(rig.prefetcher->CancelWarmups() == 2);
  auto st = rig.prefetcher->Status();
  CHECK(Job(st, id).state == JobState::kCancelled);
  CHECK(Job(st, id).queued_files == 0);  // the queue went with the cancel
  CHECK(st.control_memory.used == 0);
  // The pages in flight come back refused: the listings stop there and report kCancelled,
  // which neither overwrites the cancelled state nor lists the job's next path ("b").
  CHECK_FALSE(lister.Next());
  CHECK_FALSE(lister.Next());
  CHECK(lister.active() == 0);
  CHECK(lister.pages_sent() == 3);
  CHECK(lister.listed() == std::vector<std::string>{"a", "c"});
  st = rig.prefetcher->Status();
  CHECK(Job(st, id).state == JobState::kCancelled);
  CHECK(Job(st, id).message == "cancelled");
  CHECK(Job(st, queued).state == JobState::kCancelled);
  // Fetches in flight finish; nothing else starts.
  rig.fetcher.Complete("a/00000000.JPEG");
  rig.fetcher.Complete("a/00000001.JPEG");
  CHECK(rig.fetcher.started().size() == 2);
  CHECK(rig.prefetcher->Status().control_memory.used == 0);
}

TEST_CASE("a job cancelled between two of its paths does not list the next one",
          "[dataset_prefetcher][cancel]") {
  DatasetPrefetchOptions o;
  o.concurrency = 1;
  PagedLister lister(/*pages=*/1, /*per_page=*/3);
  Rig rig(o, lister.AsLister());
  const uint64_t id = rig.prefetcher->StartWarmup({"a", "b", "c"});
  CHECK(lister.Next());  // a's only page; then "b" is listed
  REQUIRE(lister.listed() == std::vector<std::string>{"a", "b"});
  rig.prefetcher->CancelWarmups();
  CHECK_FALSE(lister.Next());  // b's page refused
  CHECK(lister.listed() == std::vector<std::string>{"a", "b"});
  CHECK(Job(rig.prefetcher->Status(), id).state == JobState::kCancelled);
}

TEST_CASE("HintPaths finds every position of a path in list order", "[dataset_prefetcher]") {
  HintPaths p;
  const std::vector<std::string> v = {"a/x", "b", "a/x", "", "c", "b", "a/x"};
  p.Reserve(v.size(), PathBytes(v));
  for (const auto& s : v) p.Add(s);
  p.Index();
  REQUIRE(p.size() == v.size());
  for (size_t i = 0; i < v.size(); ++i) CHECK(p[i] == v[i]);
  auto positions = [&](const std::string& s) {
    std::vector<uint32_t> out;
    for (uint32_t at = p.First(s); at != HintPaths::kNone; at = p.Next(at)) out.push_back(at);
    return out;
  };
  CHECK(positions("a/x") == std::vector<uint32_t>{0, 2, 6});
  CHECK(positions("b") == std::vector<uint32_t>{1, 5});
  CHECK(positions("") == std::vector<uint32_t>{3});
  CHECK(positions("zz").empty());
  // Every buffer was reserved once: what it holds is what BytesFor predicted.
  CHECK(p.Bytes() == HintPaths::BytesFor(v.size(), PathBytes(v)));
  HintPaths more;
  more.Reserve(2, 4);
  more.Add("b");
  more.Add("d/e");
  HintPaths both = HintPaths::Concat(p, more);
  CHECK(both.size() == 9);
  CHECK(both[8] == "d/e");
  std::vector<uint32_t> bs;
  for (uint32_t at = both.First("b"); at != HintPaths::kNone; at = both.Next(at)) bs.push_back(at);
  CHECK(bs == std::vector<uint32_t>{1, 5, 7});
  CHECK(both.Bytes() == HintPaths::BytesFor(9, PathBytes(v) + 4));
}

TEST_CASE("a hint list costs about 51 bytes per ImageNet path", "[dataset_prefetcher]") {
  // "train/n01440764/n01440764_10026.JPEG": 36 bytes of name. Before: a vector<string>, a
  // vector of 32-byte states and an unordered_map<string, vector<size_t>> held 280 bytes a
  // path (mallinfo2 over 1.28 million paths).
  DatasetPrefetchOptions o;
  Rig rig(o);
  const uint64_t n = 1281167;
  const uint64_t per_path = rig.prefetcher->HintListBytes(n, n * 36) / n;
  CHECK(per_path >= 50);
  CHECK(per_path <= 53);
  // The list actually built is what was charged.
  auto paths = ImageNetPaths(20000);
  const uint64_t bytes = PathBytes(paths);
  REQUIRE(rig.prefetcher->SetHints(paths) == 20000);
  auto st = rig.prefetcher->Status();
  CHECK(st.hints.memory_bytes == rig.prefetcher->HintListBytes(20000, bytes));
  CHECK(st.control_memory.used == st.hints.memory_bytes);
  CHECK(st.control_memory.hint_bytes == st.hints.memory_bytes);
}

TEST_CASE("a hint list past the control memory is refused with the limit named",
          "[dataset_prefetcher][control_memory]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 16;
  o.control_memory = 1 << 20;
  Rig rig(o);
  auto big = ImageNetPaths(30000);  // about 1.5 MiB
  auto refused = rig.prefetcher->SendHints(big, Sender(101), false);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == ErrorCode::kNoSpace);
  const std::string needs =
      "hint list of 30000 path(s) needs " +
      FormatBytes(static_cast<double>(rig.prefetcher->HintListBytes(30000, PathBytes(big))));
  CHECK(refused.status().message() == needs +
                                          "; the control channel's memory (--control-memory "
                                          "1MiB) has 1.0 MiB free");
  auto st = rig.prefetcher->Status();
  CHECK(st.hint_lists.empty());  // nothing of it kept
  CHECK(st.control_memory.used == 0);
  CHECK(rig.fetcher.started().empty());

  // One that fits is taken; the sender's next list replaces it, its room credited.
  auto fits = ImageNetPaths(12000);
  REQUIRE(rig.prefetcher->SendHints(fits, Sender(101), false).ok());
  const uint64_t one = rig.prefetcher->HintListBytes(12000, PathBytes(fits));
  CHECK(rig.prefetcher->Status().control_memory.used == one);
  REQUIRE(2 * one > o.control_memory);
  REQUIRE(rig.prefetcher->SendHints(fits, Sender(101), false).ok());
  CHECK(rig.prefetcher->Status().control_memory.used == one);
  // Another sender's does not fit beside it.
  auto other = rig.prefetcher->SendHints(fits, Sender(102), false);
  REQUIRE_FALSE(other.ok());
  CHECK(other.status().message().find("(--control-memory 1MiB) has ") != std::string::npos);
  // Cleared, the room is free again.
  CHECK(rig.prefetcher->SetHints({}, Sender(101)) == 0);
  CHECK(rig.prefetcher->Status().control_memory.used == 0);
  CHECK(rig.prefetcher->SendHints(fits, Sender(102), false).ok());
}

TEST_CASE("control memory returns to zero as lists go", "[dataset_prefetcher][control_memory]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 2;
  Rig rig(o);
  auto alive = std::make_shared<std::atomic<bool>>(true);
  rig.prefetcher->SetHints(Named("a", 100), Sender(101, alive));
  rig.prefetcher->AppendHints(Named("b", 50), Sender(101, alive));
  auto st = rig.prefetcher->Status();
  REQUIRE(st.hint_lists.size() == 1);
  CHECK(st.hint_lists[0].files == 150);
  CHECK(st.control_memory.used == st.hints.memory_bytes);
  CHECK(st.hints.memory_bytes ==
        rig.prefetcher->HintListBytes(150, PathBytes(Named("a", 100)) + PathBytes(Named("b", 50))));
  rig.fetcher.Complete("a0");
  // Its sender exits: the next list (another sender's) drops it.
  *alive = false;
  rig.prefetcher->SetHints(Named("c", 10), Sender(102));
  st = rig.prefetcher->Status();
  REQUIRE(st.hint_lists.size() == 1);
  CHECK(st.control_memory.used == rig.prefetcher->HintListBytes(10, PathBytes(Named("c", 10))));
  rig.prefetcher->SetHints({}, Sender(102));
  CHECK(rig.prefetcher->Status().control_memory.used == 0);
  // A reservation never applied gives its room back.
  {
    auto r = rig.prefetcher->ReserveHints(Sender(103), 1000, 10000, false);
    REQUIRE(r.ok());
    CHECK(rig.prefetcher->Status().control_memory.used == r->bytes());
    CHECK(rig.prefetcher->Status().control_memory.hint_bytes == r->bytes());
  }
  CHECK(rig.prefetcher->Status().control_memory.used == 0);
}

TEST_CASE("a hint list arrives in at most kMaxHintPieces pieces",
          "[dataset_prefetcher][control_memory]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 1;
  Rig rig(o);
  REQUIRE(rig.prefetcher->SendHints({"p"}, Sender(101), false).ok());
  for (int i = 1; i < DatasetPrefetcher::kMaxHintPieces; ++i) {
    REQUIRE(rig.prefetcher->SendHints({"p" + std::to_string(i)}, Sender(101), true).ok());
  }
  auto refused = rig.prefetcher->SendHints({"q"}, Sender(101), true);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() ==
        "a hint list may arrive in at most 64 pieces; send it again in fewer, longer pieces; the "
        "pieces of the list taken before are dropped");
  CHECK(rig.prefetcher->Status().hint_lists.empty());
  CHECK(rig.prefetcher->Status().control_memory.used == 0);
}

TEST_CASE("a piece of a list past the control memory drops the pieces taken before it",
          "[dataset_prefetcher][control_memory]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 16;
  o.control_memory = 1 << 20;
  Rig rig(o);
  auto paths = ImageNetPaths(30000);
  std::vector<std::string> first(paths.begin(), paths.begin() + 10000);
  std::vector<std::string> rest(paths.begin() + 10000, paths.end());
  REQUIRE(rig.prefetcher->SendHints(first, Sender(101), false).ok());
  auto refused = rig.prefetcher->SendHints(rest, Sender(101), true);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("hint list of 20000 path(s) needs ") == 0);
  CHECK(refused.status().message().find("(--control-memory 1MiB) has ") != std::string::npos);
  CHECK(refused.status().message().find("; the pieces of the list taken before are dropped") !=
        std::string::npos);
  auto st = rig.prefetcher->Status();
  CHECK(st.hint_lists.empty());
  CHECK(st.control_memory.used == 0);
}

TEST_CASE("a cleared hint list starts nothing more; its fetch in flight is dropped when done",
          "[dataset_prefetcher][cancel]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 2;
  Rig rig(o);
  rig.prefetcher->SetHints(Paths(10), Sender(101));
  REQUIRE(rig.fetcher.started() == std::vector<std::string>{"f0", "f1"});
  rig.prefetcher->SetHints({}, Sender(101));
  CHECK(rig.prefetcher->Status().control_memory.used == 0);
  auto h0 = rig.fetcher.Complete("f0");
  rig.prefetcher->OnRead("f0");
  rig.prefetcher->RefetchPageCached();
  CHECK(h0.expired());
  CHECK(rig.fetcher.started().size() == 2);
  CHECK(rig.prefetcher->Status().in_flight == 1);  // f1 finishes, and is dropped too
  CHECK(rig.fetcher.Complete("f1").expired());
  CHECK(rig.prefetcher->Status().in_flight == 0);
  CHECK(rig.fetcher.started().size() == 2);
}

TEST_CASE("a warm-up names at most kMaxWarmupPaths paths", "[dataset_prefetcher]") {
  DatasetPrefetchOptions o;
  Rig rig(o);
  auto refused = rig.prefetcher->StartWarmupFor(Requester{}, Paths(4097));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() ==
        "a warm-up takes at most 4096 paths (this one has 4097); warm up a directory that "
        "holds them");
  CHECK(rig.prefetcher->Status().jobs.empty());
}

TEST_CASE("a warm-up whose queue would pass the control memory stops listing and says so",
          "[dataset_prefetcher][control_memory]") {
  DatasetPrefetchOptions o;
  o.concurrency = 1;  // the listing outruns the fetches: the queue grows
  o.control_memory = 256 << 10;
  PagedLister lister(/*pages=*/1000, /*per_page=*/500, /*name_bytes=*/40);
  Rig rig(o, lister.AsLister());
  const uint64_t id = rig.prefetcher->StartWarmup({"train", "val"});
  int pages = 0;
  while (lister.Next()) ++pages;
  CHECK(pages >= 2);
  CHECK(pages < 10);
  auto st = rig.prefetcher->Status();
  const auto& job = Job(st, id);
  CHECK(job.state == JobState::kRunning);  // what it queued is warmed first
  CHECK(job.listing_done);
  CHECK(job.files_total == static_cast<uint64_t>(pages) * 500);
  CHECK(st.control_memory.used <= o.control_memory);
  CHECK(st.control_memory.warmup_bytes == st.control_memory.used);
  const std::string message = job.message;
  CHECK(message.find("stopped listing after " + std::to_string(pages * 500) +
                     " file(s): the next 500 would take its queue of listed files from ") == 0);
  CHECK(message.find("; the control channel's memory (--control-memory 256KiB) has ") !=
        std::string::npos);
  CHECK(message.find(". The files listed are warmed, the rest is not: raise --control-memory, "
                     "or warm up fewer paths at once") != std::string::npos);
  // "val" is never listed, and the queued files are all fetched, then it ends budget-full.
  CHECK(lister.listed() == std::vector<std::string>{"train"});
  CompleteAll(rig);
  st = rig.prefetcher->Status();
  CHECK(Job(st, id).state == JobState::kBudgetFull);
  CHECK(Job(st, id).message == message);
  CHECK(Job(st, id).files_fetched == static_cast<uint64_t>(pages) * 500);
  CHECK(st.control_memory.used == 0);
  CHECK(lister.listed() == std::vector<std::string>{"train"});
}

TEST_CASE("a warm-up job ends done with its queue's memory given back",
          "[dataset_prefetcher][control_memory]") {
  DatasetPrefetchOptions o;
  o.concurrency = 3;
  PagedLister lister(/*pages=*/3, /*per_page=*/7);
  Rig rig(o, lister.AsLister());
  const uint64_t id = rig.prefetcher->StartWarmup({"a"});
  while (lister.active() > 0) lister.Next();
  CHECK(rig.prefetcher->Status().control_memory.used > 0);
  CompleteAll(rig);
  auto st = rig.prefetcher->Status();
  CHECK(Job(st, id).state == JobState::kDone);
  CHECK(Job(st, id).files_fetched == 21);
  CHECK(st.control_memory.used == 0);
}

TEST_CASE("another user shares a quarter of the control memory, and the rule is named",
          "[dataset_prefetcher][control_memory]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 16;
  o.control_memory = 4 << 20;
  Rig rig(o);
  auto paths = ImageNetPaths(30000);  // about 1.5 MiB: over 1 MiB, under 4
  auto refused = rig.prefetcher->SendHints(paths, OtherUser(201), false);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find(
            "; users other than the mount's owner and root share a quarter of the control "
            "channel's memory (1MiB of --control-memory 4MiB), which has 1.0 MiB free") !=
        std::string::npos);
  CHECK(rig.prefetcher->Status().control_memory.used == 0);
  // The owner (or root) is bounded by the whole limit only.
  CHECK(rig.prefetcher->SendHints(paths, Sender(101), false).ok());
  auto st = rig.prefetcher->Status();
  CHECK(st.control_memory.other_users_used == 0);
  CHECK(st.control_memory.other_users_limit == (1 << 20));
  // A small list of another user's fits its share, and is counted in it.
  REQUIRE(rig.prefetcher->SendHints(Named("x", 10), OtherUser(201), false).ok());
  st = rig.prefetcher->Status();
  CHECK(st.control_memory.other_users_used ==
        rig.prefetcher->HintListBytes(10, PathBytes(Named("x", 10))));
  CHECK(st.hint_lists.back().uid == 1000);
}

TEST_CASE("another user has at most kOtherUserHintLists hint lists",
          "[dataset_prefetcher][control_memory]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 1;
  Rig rig(o);
  for (int pid = 1; pid <= 8; ++pid) {
    REQUIRE(rig.prefetcher->SendHints({"f" + std::to_string(pid)}, OtherUser(pid), false).ok());
  }
  auto ninth = rig.prefetcher->SendHints({"f9"}, OtherUser(9), false);
  REQUIRE_FALSE(ninth.ok());
  CHECK(ninth.status().message() ==
        "uid 1000 has 8 hint lists already: a user other than the mount's owner and root may "
        "have at most 8 (and 4 running warm-ups) at once; a list goes when its sender exits or "
        "sends an empty list");
  // A sender's new list replaces its own; other uids and the owner have their own counts.
  CHECK(rig.prefetcher->SendHints({"g"}, OtherUser(3), false).ok());
  CHECK(rig.prefetcher->SendHints({"h"}, OtherUser(9, 1001), false).ok());
  CHECK(rig.prefetcher->SendHints({"i"}, Sender(9), false).ok());
  CHECK(rig.prefetcher->Status().hint_lists.size() == 10);
}

TEST_CASE("another user has at most kOtherUserJobs warm-ups, at the mount's concurrency",
          "[dataset_prefetcher][control_memory]") {
  DatasetPrefetchOptions o;
  o.concurrency = 2;
  PagedLister lister(/*pages=*/10, /*per_page=*/5);
  Rig rig(o, lister.AsLister());
  for (int i = 0; i < 4; ++i) {
    auto id = rig.prefetcher->StartWarmupFor(OtherRequester(), {"d" + std::to_string(i)}, 100);
    REQUIRE(id.ok());
  }
  auto fifth = rig.prefetcher->StartWarmupFor(OtherRequester(), {"d4"});
  REQUIRE_FALSE(fifth.ok());
  CHECK(fifth.status().message() ==
        "uid 1000 has 4 warm-ups running already: a user other than the mount's owner and root "
        "may run at most 4 (and have 8 hint lists) at once; wait for one to end");
  CHECK(rig.prefetcher->StartWarmupFor(Requester{}, {"owner"}).ok());
  // Another user's job runs at the mount's warm-up concurrency at most, whatever it asks.
  lister.Next();
  CHECK(rig.fetcher.pending() == 2);
  // Once one ends, another may start.
  rig.prefetcher->CancelWarmups();
  CHECK(rig.prefetcher->StartWarmupFor(OtherRequester(), {"d5"}).ok());
}

TEST_CASE("another user's list never replaces the owner's",
          "[dataset_prefetcher][control_memory]") {
  DatasetPrefetchOptions o;
  o.hint_ahead_files = 1;
  Rig rig(o);
  // A sender the daemon cannot see (pid 0) is named by its client: another user giving the
  // owner's sender's name gets a list of its own.
  HintSender owners;
  owners.name = "pod-1:7";
  REQUIRE(rig.prefetcher->SendHints({"mine"}, owners, false).ok());
  HintSender theirs = OtherUser(0);
  theirs.name = "pod-1:7";
  REQUIRE(rig.prefetcher->SendHints({"theirs"}, theirs, false).ok());
  auto st = rig.prefetcher->Status();
  REQUIRE(st.hint_lists.size() == 2);
  CHECK(st.hint_lists[0].uid == 0);
  CHECK(st.hint_lists[0].files == 1);
  rig.prefetcher->SetHints({}, owners);
  rig.prefetcher->SetHints({}, theirs);
  // With kMaxHintLists lists of the owner's, another user's list is refused.
  for (int pid = 1; pid <= static_cast<int>(DatasetPrefetcher::kMaxHintLists); ++pid) {
    REQUIRE(rig.prefetcher->SendHints({"f" + std::to_string(pid)}, Sender(pid), false).ok());
  }
  auto refused = rig.prefetcher->SendHints({"x"}, OtherUser(1000), false);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("hint lists of the mount's owner and root") !=
        std::string::npos);
  CHECK(rig.prefetcher->Status().hint_lists.front().pid == 1);
}

TEST_CASE("the status JSON shows the control memory", "[dataset_prefetcher][control_memory]") {
  DatasetPrefetchOptions o;
  o.control_memory = 8 << 20;
  o.hint_ahead_files = 1;
  Rig rig(o);
  rig.prefetcher->SetHints(Named("a", 3), Sender(101));
  rapidjson::Document doc;
  doc.Parse(rig.prefetcher->StatusJson().c_str());
  REQUIRE(doc.IsObject());
  const auto& cm = doc["control_memory"];
  CHECK(cm["limit"].GetUint64() == (8u << 20));
  CHECK(cm["other_users_limit"].GetUint64() == (2u << 20));
  CHECK(cm["used"].GetUint64() == rig.prefetcher->HintListBytes(3, 6));
  CHECK(cm["hint_bytes"].GetUint64() == cm["used"].GetUint64());
  CHECK(cm["warmup_bytes"].GetUint64() == 0);
  CHECK(cm["other_users_used"].GetUint64() == 0);
  CHECK(doc["hints"]["memory_bytes"].GetUint64() == cm["used"].GetUint64());
  CHECK(doc["hints"]["senders"][0]["uid"].GetUint() == 0);
}

TEST_CASE("WarmupQueue keeps files in order in packed blocks", "[dataset_prefetcher]") {
  WarmupQueue q;
  std::vector<PrefetchItem> items = Items(3000, 7);
  items[5].key = "elsewhere";  // a path that does not end its key
  CHECK(q.BytesAfter(items) > 0);
  const uint64_t predicted = q.BytesAfter(items);
  for (const auto& item : items) q.Push(item);
  CHECK(q.Bytes() == predicted);
  CHECK(q.size() == 3000);
  // About 64 bytes a file here (short keys): a few 64 KiB blocks.
  CHECK(q.Bytes() < 3000 * 80);
  PrefetchItem retry = items[0];
  q.PushFront(retry);
  PrefetchItem first = q.Pop();
  CHECK(first.path == "w0");
  for (size_t i = 0; i < items.size(); ++i) {
    PrefetchItem got = q.Pop();
    CHECK(got.path == items[i].path);
    CHECK(got.key == items[i].key);
    CHECK(got.etag == items[i].etag);
    CHECK(got.size == items[i].size);
  }
  CHECK(q.empty());
  CHECK(q.Bytes() == 0);
}
