// ManifestObjectClient under the real filesystem, over FakeObjectClient: the tree is exactly
// the manifest, no LIST reaches the server, hostile keys stay hidden, reads carry If-Match,
// and entries without a size or etag are completed by one HEAD each.
#include <fcntl.h>
#include <catch2/catch.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <future>
#include <set>
#include <sstream>
#include <thread>

#include "fs/object_filesystem.h"
#include "meta/manifest_client.h"
#include "meta/manifest_parser.h"
#include "support/failing_object_client.h"
#include "support/fake_object_client.h"

using namespace ossmount;
using namespace std::chrono_literals;
using testing::FakeObjectClient;
using testing::Op;

namespace {

class ManifestHarness {
 public:
  ManifestHarness() : guard_(boost::asio::make_work_guard(io)) {
    fake = std::make_shared<FakeObjectClient>(io);
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io.run(); });
  }
  ~ManifestHarness() {
    filesystem.reset();
    guard_.reset();
    for (auto& t : threads_) t.join();
  }
  // Parses `manifest` against bucket "bucket" and `prefix` and builds the filesystem on it.
  void Mount(const std::string& manifest, const std::string& prefix = "data/") {
    std::istringstream in(manifest);
    auto index = meta::ParseManifest(in, "test", meta::ManifestScope{"bucket", prefix});
    REQUIRE(index.ok());
    client = meta::MakeManifestObjectClient(
        io, fake, std::make_shared<const meta::ManifestIndex>(std::move(*index)),
        meta::ManifestClientOptions{prefix, 1700000000});
    fs::FsOptions o;
    o.prefix = prefix;
    o.metadata_ttl = std::nullopt;
    filesystem = fs::MakeObjectFilesystem(io, client, o);
  }

  template <typename T, typename Start>
  Result<T> Wait(Start start) {
    auto p = std::make_shared<std::promise<Result<T>>>();
    auto f = p->get_future();
    start([p](Result<T> r) { p->set_value(std::move(r)); });
    REQUIRE(f.wait_for(30s) == std::future_status::ready);
    return f.get();
  }
  // Every path in the tree ("dir/" for directories), walking it like find(1).
  std::set<std::string> Walk(fs::InodeId ino = fs::kRootInode, const std::string& path = "") {
    std::set<std::string> out;
    auto fh = Wait<uint64_t>([&](auto cb) { filesystem->OpenDir(ino, cb); });
    REQUIRE(fh.ok());
    off_t off = 0;
    while (true) {
      auto batch =
          Wait<std::vector<fs::DirEntry>>([&](auto cb) { filesystem->ReadDir(ino, *fh, off, cb); });
      REQUIRE(batch.ok());
      if (batch->empty()) break;
      off = batch->back().next_offset;
      for (const auto& e : *batch) {
        std::string p = path + e.name;
        if (e.entry.attr.is_dir) {
          out.insert(p + "/");
          for (auto& s : Walk(e.entry.attr.ino, p + "/")) out.insert(s);
        } else {
          out.insert(p);
        }
      }
    }
    filesystem->ReleaseDir(ino, *fh);
    return out;
  }
  Result<fs::Entry> LookupPath(const std::string& path) {
    fs::InodeId ino = fs::kRootInode;
    Result<fs::Entry> e = Status(ErrorCode::kNotFound, "empty path");
    size_t start = 0;
    while (start <= path.size()) {
      size_t slash = path.find('/', start);
      std::string name = path.substr(start, slash == std::string::npos ? slash : slash - start);
      e = Wait<fs::Entry>([&](auto cb) { filesystem->Lookup(ino, name, cb); });
      if (!e.ok()) return e;
      ino = e->attr.ino;
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    return e;
  }
  Result<std::string> ReadFile(const std::string& path) {
    auto e = LookupPath(path);
    if (!e.ok()) return e.status();
    auto open = Wait<fs::OpenReply>([&](auto cb) { filesystem->Open(e->attr.ino, O_RDONLY, cb); });
    if (!open.ok()) return open.status();
    std::string out;
    while (true) {
      auto r = Wait<fs::ReadReply>([&](auto cb) {
        filesystem->Read(e->attr.ino, open->fh, static_cast<off_t>(out.size()), 1 << 20, cb);
      });
      if (!r.ok()) return r.status();
      if (r->size == 0) break;
      out.append(r->data, r->size);
    }
    filesystem->Release(e->attr.ino, open->fh);
    return out;
  }
  // The etag of a fake object, unquoted (as a manifest line may give it).
  std::string Etag(const std::string& key) {
    std::string e = fake->Info(key)->etag;
    return e.substr(1, e.size() - 2);
  }

  boost::asio::io_context io;
  std::shared_ptr<FakeObjectClient> fake;
  std::shared_ptr<ObjectClient> client;
  std::shared_ptr<fs::Filesystem> filesystem;

 private:
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::vector<std::thread> threads_;
};

}  // namespace

TEST_CASE("The tree is exactly the manifest, and no LIST reaches the server") {
  ManifestHarness h;
  // The bucket holds more than the manifest names: those objects must stay invisible.
  h.fake->PutObject("data/train/c1/a.jpg", "aaa");
  h.fake->PutObject("data/train/c1/b.jpg", "bbbb");
  h.fake->PutObject("data/train/c1/not-in-manifest.jpg", "zz");
  h.fake->PutObject("data/secret/s.txt", "zz");
  h.Mount("train/c1/a.jpg\t3\t" + h.Etag("data/train/c1/a.jpg") + "\n" + "train/c1/b.jpg\t4\t\"" +
          h.Etag("data/train/c1/b.jpg") + "\"\tlabel\n" +
          "train/c2/deep/x.bin\t1\tE1\n"
          "oss://bucket/data/val/v.jpg\t2\tE2\n"
          "empty-dir/\t0\tE3\n");
  auto tree = h.Walk();
  CHECK(tree == std::set<std::string>{"train/", "train/c1/", "train/c1/a.jpg", "train/c1/b.jpg",
                                      "train/c2/", "train/c2/deep/", "train/c2/deep/x.bin", "val/",
                                      "val/v.jpg", "empty-dir/"});
  CHECK_FALSE(h.LookupPath("train/c1/not-in-manifest.jpg").ok());
  CHECK_FALSE(h.LookupPath("secret").ok());
  auto a = h.LookupPath("train/c1/a.jpg");
  REQUIRE(a.ok());
  CHECK(a->attr.size == 3);
  CHECK(a->attr.mtime_sec == 1700000000);  // the manifest file's mtime
  CHECK(h.fake->count(Op::kList) == 0);
  CHECK(h.fake->count(Op::kHead) == 0);  // complete entries need no request at all
  CHECK(h.fake->count(Op::kGet) == 0);
}

TEST_CASE("Reads of manifest entries: one GET each, with If-Match on the manifest's etag") {
  ManifestHarness h;
  std::string big(3u << 20, 'b');
  for (size_t i = 0; i < big.size(); i += 7) big[i] = static_cast<char>(i);
  h.fake->PutObject("data/small.txt", "hello manifest");
  h.fake->PutObject("data/d/big.bin", big);
  h.Mount("small.txt\t14\t" + h.Etag("data/small.txt") + "\nd/big.bin\t" +
          std::to_string(big.size()) + "\t" + h.Etag("data/d/big.bin") + "\n");
  auto small = h.ReadFile("small.txt");
  REQUIRE(small.ok());
  CHECK(*small == "hello manifest");
  auto b = h.ReadFile("d/big.bin");
  REQUIRE(b.ok());
  CHECK(*b == big);
  CHECK(h.fake->count(Op::kList) == 0);
  CHECK(h.fake->count(Op::kHead) == 0);
  CHECK(h.fake->count(Op::kGet) == 2);  // both under the small-file threshold: one GET each
  for (const auto& r : h.fake->requests()) {
    if (r.op == Op::kGet) CHECK(r.if_match == h.fake->Info(r.key)->etag);
  }
}

TEST_CASE("A manifest etag the object no longer has fails the read, never mixes versions") {
  ManifestHarness h;
  h.fake->PutObject("data/f", "old!");
  std::string old_etag = h.Etag("data/f");
  h.fake->PutObject("data/f", "new!");
  h.Mount("f\t4\t" + old_etag + "\n");
  auto r = h.ReadFile("f");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kPreconditionFailed);
}

TEST_CASE("Entries without a size or etag are completed by one HEAD, once") {
  ManifestHarness h;
  h.fake->PutObject("data/c/one.png", "11");
  h.fake->PutObject("data/c/two.png", "2222");
  // Connector form (no size) and tab form without an etag; one entry is not in the bucket.
  h.Mount("c/one.png label1\nc/two.png\t4\nc/gone.png\n");
  auto tree = h.Walk();
  CHECK(tree == std::set<std::string>{"c/", "c/one.png", "c/two.png"});  // gone.png: 404
  CHECK(h.fake->count(Op::kHead) == 3);
  CHECK(h.fake->count(Op::kList) == 0);
  auto one = h.LookupPath("c/one.png");
  REQUIRE(one.ok());
  CHECK(one->attr.size == 2);
  auto two = h.ReadFile("c/two.png");
  REQUIRE(two.ok());
  CHECK(*two == "2222");
  // Listing again (a new filesystem over the same client) asks no further HEAD.
  h.fake->ResetCounters();
  fs::FsOptions o;
  o.prefix = "data/";
  h.filesystem = fs::MakeObjectFilesystem(h.io, h.client, o);
  CHECK(h.Walk() == tree);
  CHECK(h.fake->count(Op::kHead) == 0);
  for (const auto& r : h.fake->requests()) {
    if (r.op == Op::kGet) CHECK(!r.if_match.empty());  // pinned to the HEAD's etag
  }
}

TEST_CASE("A failing HEAD fails the listing instead of showing a partial directory") {
  ManifestHarness h;
  h.fake->PutObject("data/d/x", "1");
  h.fake->PutObject("data/d/y", "1");
  auto failing = std::make_shared<testing::FailingObjectClient>(h.io, h.fake);
  failing->FailKey("data/d/y");
  std::istringstream in("d/x\nd/y\n");
  auto index = meta::ParseManifest(in, "test", meta::ManifestScope{"bucket", "data/"});
  REQUIRE(index.ok());
  auto client = meta::MakeManifestObjectClient(
      h.io, failing, std::make_shared<const meta::ManifestIndex>(std::move(*index)),
      meta::ManifestClientOptions{"data/", 0});
  auto page = h.Wait<ListPage>([&](auto cb) {
    client->List(ListRequest{"data/d/", "/", "", 1000}, cb);
  });
  REQUIRE_FALSE(page.ok());
  CHECK(page.status().code() == ErrorCode::kServerError);
  CHECK(page.status().message().find("data/d/y") != std::string::npos);
  // The failure is not remembered: once the HEAD succeeds the listing does too.
  failing->ClearFailures();
  auto again = h.Wait<ListPage>([&](auto cb) {
    client->List(ListRequest{"data/d/", "/", "", 1000}, cb);
  });
  REQUIRE(again.ok());
  CHECK(again->objects.size() == 2);
}

TEST_CASE("Hostile manifest keys are hidden as in a listing and never escape the mount") {
  ManifestHarness h;
  h.Mount(
      "ok/file\t1\tE\n"
      "a//b\t1\tE\n"
      "../escape\t1\tE\n"
      "/abs\t1\tE\n"
      "dot/./x\t1\tE\n"
      "dotdot/../x\t1\tE\n"
      "long/" +
      std::string(256, 'n') + "\t1\tE\nclash\t1\tE\nclash/in\t1\tE\n");
  auto tree = h.Walk();
  // "a/" and "dot/" and "dotdot/" and "long/" are directories whose only keys are hidden.
  CHECK(tree == std::set<std::string>{"ok/", "ok/file", "a/", "dot/", "dotdot/", "long/", "clash/",
                                      "clash/in"});
  CHECK_FALSE(h.LookupPath("..").ok());
  CHECK(h.fake->count(Op::kList) == 0);
}

TEST_CASE("Head answers kNotFound for keys outside the manifest and passes others through") {
  ManifestHarness h;
  h.fake->PutObject("data/in", "1");
  h.fake->PutObject("data/out", "1");
  h.Mount("in\t1\n");
  auto in = h.Wait<ObjectInfo>([&](auto cb) { h.client->Head("data/in", cb); });
  CHECK(in.ok());
  auto out = h.Wait<ObjectInfo>([&](auto cb) { h.client->Head("data/out", cb); });
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().code() == ErrorCode::kNotFound);
  auto other = h.Wait<ListPage>([&](auto cb) {
    h.client->List(ListRequest{"elsewhere/", "/", "", 1000}, cb);
  });
  REQUIRE(other.ok());
  CHECK(other->objects.empty());
  CHECK(h.fake->count(Op::kList) == 0);
}
