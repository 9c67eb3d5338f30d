// UploadJournal: records of open uploads survive as files, corrupt ones are skipped,
// AbortLeftovers aborts exactly the recorded uploads, and ObjectUpload keeps its record only
// while its upload is open.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "support/temp_dir.h"
#include "upload/upload_journal.h"
#include "upload_harness.h"

using namespace uploadtest;
using ossmount::testing::TempDir;

namespace {

std::shared_ptr<UploadJournal> OpenJournal(const std::string& dir) {
  auto journal = UploadJournal::Open(dir);
  REQUIRE(journal.ok());
  return *journal;
}

std::set<std::pair<std::string, std::string>> KeysAndIds(const UploadJournal& journal) {
  std::set<std::pair<std::string, std::string>> out;
  for (const auto& r : journal.Records()) out.insert({r.key, r.upload_id});
  return out;
}

size_t FilesIn(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

// Starts a real multipart upload on the fake; returns its id.
std::string InitiateOn(Rig& rig, const std::string& key) {
  std::string id;
  rig.fake->InitiateMultipart(key, [&id](Result<std::string> r) {
    REQUIRE(r.ok());
    id = *r;
  });
  rig.Drain();
  REQUIRE_FALSE(id.empty());
  return id;
}

}  // namespace

TEST_CASE("UploadJournal: records round-trip keys with newlines and odd bytes") {
  TempDir tmp;
  const std::string dir = tmp.Sub("journal/nested");
  auto journal = OpenJournal(dir);
  struct stat st {};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);

  const std::vector<std::pair<std::string, std::string>> records = {
      {"plain/key.bin", "id-1"},
      {"two\nlines", "id-2"},
      {"3\nabc\nid-x\n", "id-3"},  // looks like a record itself
      {std::string("bytes \xff\xfe\x01\t end"), "id-4"},
      {"trailing newline\n", "id-5"},
      {"", "id-6"},
  };
  for (const auto& [key, id] : records) REQUIRE(journal->Add(key, id).ok());
  CHECK(KeysAndIds(*journal) ==
        std::set<std::pair<std::string, std::string>>(records.begin(), records.end()));
  // No temporary files left: the records and the session's lock.
  CHECK(FilesIn(journal->session_dir()) == records.size() + 1);

  // Another daemon's journal on the same directory has a session of its own.
  auto other = OpenJournal(dir);
  CHECK(other->session_dir() != journal->session_dir());
  CHECK(KeysAndIds(*other).empty());

  // Adding an id again replaces its record.
  REQUIRE(journal->Add("moved", "id-1").ok());
  CHECK(KeysAndIds(*journal).count({"moved", "id-1"}) == 1);
  CHECK(KeysAndIds(*journal).count({"plain/key.bin", "id-1"}) == 0);

  journal->Remove("id-2");
  journal->Remove("id-unknown");  // nothing to remove: no harm
  auto left = KeysAndIds(*journal);
  CHECK(left.size() == records.size() - 1);
  CHECK(left.count({"two\nlines", "id-2"}) == 0);
  for (const auto& r : journal->Records()) CHECK(std::filesystem::exists(r.file));
  CHECK(FilesIn(journal->session_dir()) == records.size());
}

TEST_CASE("UploadJournal: corrupt record files are skipped, other files ignored") {
  const std::vector<std::pair<std::string, std::string>> junk = {
      {"empty.upload", ""},
      {"no-newline.upload", "12"},
      {"not-a-number.upload", "abc\nkey\nid\n"},
      {"short-key.upload", "50\nkey\nid\n"},
      {"no-id.upload", "3\nkey\n"},
      {"empty-id.upload", "3\nkey\n\n"},
      {"id-without-newline.upload", "3\nkey\nid"},
      {"huge-length.upload", "99999999999999999999999\nkey\nid\n"},
      {"negative-length.upload", "-1\nkey\nid\n"},
      {"wrapping-length.upload", "18446744073709551615\nkey\nid\n"},
      {"other-file.txt", "3\nkey\nid\n"},
      {"half-written.upload.tmp", "3\nkey\nid\n"},
  };
  for (const auto& [name, text] : junk) {
    INFO(name);
    TempDir tmp;
    auto journal = OpenJournal(tmp.Sub("j"));
    REQUIRE(journal->Add("good/key", "good-id").ok());
    std::ofstream(journal->session_dir() + "/" + name) << text;
    auto records = journal->Records();
    std::string seen;
    for (const auto& r : records) seen += "['" + r.key + "' '" + r.upload_id + "'] ";
    INFO("records: " << seen);
    CHECK(records.size() == 1);
    CHECK(KeysAndIds(*journal) ==
          std::set<std::pair<std::string, std::string>>{{"good/key", "good-id"}});
  }
}

TEST_CASE("UploadJournal: AbortLeftovers aborts recorded uploads and removes their records") {
  TempDir tmp;
  Rig rig;
  auto crashed = OpenJournal(tmp.Sub("j"));
  const std::string a = InitiateOn(rig, "ckpt/a");
  const std::string b = InitiateOn(rig, "ckpt/b\nwith newline");
  InitiateOn(rig, "someone/else");  // not recorded: not ours, never aborted
  REQUIRE(crashed->Add("ckpt/a", a).ok());
  REQUIRE(crashed->Add("ckpt/b\nwith newline", b).ok());
  const std::string crashed_session = crashed->session_dir();
  crashed.reset();  // its daemon is gone: the lock on its session with it
  CHECK(rig.fake->OpenUploadCount() == 3);
  auto journal = OpenJournal(tmp.Sub("j"));

  std::optional<std::pair<size_t, Status>> out;
  journal->AbortLeftovers(rig.client, [&](size_t n, Status s) { out.emplace(n, s); });
  rig.Drain();
  REQUIRE(out.has_value());
  CHECK(out->first == 2);
  CHECK(out->second.ok());
  CHECK(rig.fake->count(Op::kAbort) == 2);
  CHECK(rig.fake->OpenUploadCount() == 1);
  std::set<std::string> aborted;
  for (const auto& r : rig.fake->requests()) {
    if (r.op == Op::kAbort) aborted.insert(r.key + "|" + r.upload_id);
  }
  CHECK(aborted == std::set<std::string>{"ckpt/a|" + a, "ckpt/b\nwith newline|" + b});
  CHECK(journal->Records().empty());
  // The dead session is gone; the new one stays.
  CHECK_FALSE(std::filesystem::exists(crashed_session));
  CHECK(FilesIn(journal->dir()) == 1);
}

TEST_CASE("UploadJournal: a live daemon's uploads are never leftovers, a dead one's are") {
  TempDir tmp;
  Rig rig;
  auto first = OpenJournal(tmp.Sub("j"));
  const std::string a = InitiateOn(rig, "a");
  REQUIRE(first->Add("a", a).ok());
  // A second daemon starts on the same journal directory while the first writes.
  auto second = OpenJournal(tmp.Sub("j"));
  const std::string b = InitiateOn(rig, "b");
  REQUIRE(second->Add("b", b).ok());
  for (auto* journal : {&first, &second}) {
    std::optional<size_t> aborted;
    (*journal)->AbortLeftovers(rig.client, [&](size_t n, Status s) {
      CHECK(s.ok());
      aborted = n;
    });
    rig.Drain();
    REQUIRE(aborted.has_value());
    CHECK(*aborted == 0);
  }
  CHECK(rig.fake->count(Op::kAbort) == 0);
  CHECK(rig.fake->OpenUploadCount() == 2);
  // The first dies: the next daemon aborts its upload, and only it.
  first.reset();
  auto third = OpenJournal(tmp.Sub("j"));
  std::optional<size_t> aborted;
  third->AbortLeftovers(rig.client, [&](size_t n, Status) { aborted = n; });
  rig.Drain();
  CHECK(aborted == 1u);
  CHECK(rig.fake->OpenUploadCount() == 1);
  CHECK(KeysAndIds(*second) == std::set<std::pair<std::string, std::string>>{{"b", b}});
}

TEST_CASE("UploadJournal: records an older version wrote into the directory are leftovers") {
  TempDir tmp;
  Rig rig;
  const std::string a = InitiateOn(rig, "old/a");
  std::filesystem::create_directories(tmp.Sub("j"));
  std::ofstream(tmp.Sub("j/00000000000000aa.upload")) << "5\nold/a\n" << a << "\n";
  auto journal = OpenJournal(tmp.Sub("j"));
  std::optional<size_t> aborted;
  journal->AbortLeftovers(rig.client, [&](size_t n, Status) { aborted = n; });
  rig.Drain();
  CHECK(aborted == 1u);
  CHECK(rig.fake->OpenUploadCount() == 0);
  CHECK_FALSE(std::filesystem::exists(tmp.Sub("j/00000000000000aa.upload")));
}

TEST_CASE("UploadJournal: an abort that fails keeps its record for the next mount") {
  TempDir tmp;
  Rig rig(64 * MiB, 8, /*failing=*/true);
  auto crashed = OpenJournal(tmp.Sub("j"));
  const std::string a = InitiateOn(rig, "a");
  const std::string b = InitiateOn(rig, "b");
  REQUIRE(crashed->Add("a", a).ok());
  REQUIRE(crashed->Add("b", b).ok());
  const std::string crashed_session = crashed->session_dir();
  crashed.reset();
  auto journal = OpenJournal(tmp.Sub("j"));
  rig.fail->RefuseNext(Op::kAbort, 1, Status(ErrorCode::kAccessDenied, "no abort for you"));

  std::optional<std::pair<size_t, Status>> out;
  journal->AbortLeftovers(rig.client, [&](size_t n, Status s) { out.emplace(n, s); });
  rig.Drain();
  REQUIRE(out.has_value());
  CHECK(out->first == 1);
  CHECK(out->second.code() == ErrorCode::kAccessDenied);
  CHECK(rig.fake->OpenUploadCount() == 1);
  // The refused one stays recorded in the dead session, for the mount after.
  CHECK(std::filesystem::exists(crashed_session));
  journal.reset();
  auto next = OpenJournal(tmp.Sub("j"));
  std::optional<size_t> aborted;
  next->AbortLeftovers(rig.client, [&](size_t n, Status) { aborted = n; });
  rig.Drain();
  CHECK(aborted == 1u);
  CHECK(rig.fake->OpenUploadCount() == 0);
  CHECK_FALSE(std::filesystem::exists(crashed_session));
}

TEST_CASE("UploadJournal: AbortLeftovers with no records answers at once, without requests") {
  TempDir tmp;
  Rig rig;
  auto journal = OpenJournal(tmp.Sub("j"));
  std::optional<size_t> aborted;
  journal->AbortLeftovers(rig.client, [&](size_t n, Status s) {
    CHECK(s.ok());
    aborted = n;
  });
  REQUIRE(aborted.has_value());
  CHECK(*aborted == 0);
  CHECK(rig.fake->total_count() == 0);
}

TEST_CASE("UploadJournal: DirectoryFor is one directory per endpoint, bucket and prefix") {
  const std::string base = "/var/cache/ossmount/uploads";
  const std::string d = UploadJournal::DirectoryFor(base, "oss-cn-x.aliyuncs.com", "b", "p/");
  CHECK(d.rfind(base + "/", 0) == 0);
  CHECK(d.find('/', base.size() + 1) == std::string::npos);  // directly under base
  CHECK(UploadJournal::DirectoryFor(base, "oss-cn-x.aliyuncs.com", "b", "p/") == d);
  const std::set<std::string> all = {
      d,
      UploadJournal::DirectoryFor(base, "oss-cn-x.aliyuncs.com", "b", "q/"),
      UploadJournal::DirectoryFor(base, "oss-cn-x.aliyuncs.com", "b", ""),
      UploadJournal::DirectoryFor(base, "oss-cn-x.aliyuncs.com", "b", "p/sub/"),
      UploadJournal::DirectoryFor(base, "oss-cn-x.aliyuncs.com", "c", "p/"),
      UploadJournal::DirectoryFor(base, "oss-cn-y.aliyuncs.com", "b", "p/"),
  };
  CHECK(all.size() == 6);
}

TEST_CASE("UploadJournal: an ObjectUpload keeps its record only while its upload is open") {
  struct Row {
    const char* what;
    bool fail_part;  // a part is refused: the upload fails
    bool drop;       // the upload is dropped without Finish
  };
  const Row rows[] = {
      {"completed", false, false}, {"failed", true, false}, {"dropped", false, true}};
  for (const Row& row : rows) {
    INFO(row.what);
    TempDir tmp;
    Rig rig(64 * MiB, 8, /*failing=*/true);
    auto journal = OpenJournal(tmp.Sub("j"));
    if (row.fail_part) rig.fail->RefuseNext(Op::kUploadPart, 1, std::nullopt, 3);
    auto up = rig.Make("ckpt/model.pt", {}, journal);
    Rig::AppendAll(*up, Bytes(2 * 64 * KiB + 10, 30), 64 * KiB);
    rig.Drain();  // initiated: recorded before the first part went
    auto records = journal->Records();
    REQUIRE(records.size() == 1);
    CHECK(records[0].key == "ckpt/model.pt");
    CHECK(rig.fake->OpenUploadCount() == 1);
    if (row.drop) {
      up.reset();
      rig.Drain();
    } else {
      auto r = rig.Finish(*up);
      CHECK(r.ok() == !row.fail_part);
    }
    CHECK(rig.fake->OpenUploadCount() == 0);
    CHECK(journal->Records().empty());
    CHECK(rig.budget->used() == 0);
  }
}

TEST_CASE("UploadJournal: a small file written with one PUT leaves no record") {
  TempDir tmp;
  Rig rig;
  auto journal = OpenJournal(tmp.Sub("j"));
  auto up = rig.Make("small", {}, journal);
  Rig::AppendAll(*up, Bytes(1000, 31), 1000);
  REQUIRE(rig.Finish(*up).ok());
  CHECK(journal->Records().empty());
  CHECK(FilesIn(journal->session_dir()) == 1);  // its lock alone
}

TEST_CASE("UploadJournal: an upload that cannot be recorded is refused with ENOSPC") {
  TempDir tmp;
  Rig rig;
  auto journal = OpenJournal(tmp.Sub("j"));
  std::filesystem::remove_all(journal->session_dir());  // the journal's disk went away
  auto up = rig.Make("ckpt/model.pt", {}, journal);
  Rig::AppendAll(*up, Bytes(3 * 64 * KiB, 32), 64 * KiB);
  rig.Drain();
  const Status error = up->error();
  CHECK(error.code() == ErrorCode::kNoSpace);
  CHECK(error.message().find("upload journal") != std::string::npos);
  CHECK_FALSE(rig.Finish(*up).ok());
  CHECK(rig.fake->OpenUploadCount() == 0);  // aborted at once
  CHECK(rig.fake->count(Op::kUploadPart) == 0);
  CHECK(rig.budget->used() == 0);
}
