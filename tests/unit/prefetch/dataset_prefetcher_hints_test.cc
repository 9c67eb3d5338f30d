// DatasetPrefetcher and sampler-order hints: the window over each sender's list, holds and
// their release, several senders, lists in pieces, the page cache (dataset_prefetcher_rig.h).
#include <string>
#include <vector>

#include "dataset_prefetcher_rig.h"

using namespace ossmount;
using namespace ossmount::prefetch;
using namespace ossmount::prefetch::rig;

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
  CHECK(StatusJson(*rig.prefetcher).find(R"("name":"pod-1:7")") != std::string::npos);
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
  doc.Parse(StatusJson(*rig.prefetcher).c_str());
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
