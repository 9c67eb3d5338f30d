// DatasetPrefetcher and the control memory (--control-memory): what hint lists and warm-up
// queues hold, the limits of other users, and the status JSON (dataset_prefetcher_rig.h).
// Also HintPaths and WarmupQueue, the compact forms that memory is charged for.
#include <string>
#include <vector>

#include "dataset_prefetcher_rig.h"

using namespace ossmount;
using namespace ossmount::prefetch;
using namespace ossmount::prefetch::rig;

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

TEST_CASE("a cleared hint list starts nothing more, and its fetch in flight is dropped when done",
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
  doc.Parse(StatusJson(*rig.prefetcher).c_str());
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
