// fuse_test: the FUSE adapter mounted for real (needs /dev/fuse and root or fusermount3)
// over MemoryFilesystem, exercised with ordinary syscalls.
//
// Every case mounts under its own temp dir; teardown always unmounts (lazily, even when
// the case failed) and every wait has a generous timeout so a bug shows as a failure,
// not a hang.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <set>
#include <sstream>
#include <thread>

#include "common/metrics.h"
#include "control/mount_call.h"
#include "fuse/fuse_server.h"
#include "fuse/uring_switch.h"
#include "ossmount/control_ioctl.h"
#include "unit/fuse/memory_filesystem.h"

using namespace ossmount;
using ossmount::fuse::FuseRingMode;
using ossmount::fuse::FuseServer;
using ossmount::fuse::FuseServerOptions;
using ossmount::testing::MemoryFilesystem;
using namespace std::chrono_literals;

namespace {

constexpr auto kTimeout = 60s;  // only to turn a hang into a failure

bool IsMounted(const std::string& path) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string a, b, c, d, point;
    f >> a >> b >> c >> d >> point;
    if (point == path) return true;
  }
  return false;
}

std::string Content(size_t n, unsigned seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : s) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 16);
  }
  return s;
}

double Metric(const char* name) {
  return static_cast<double>(metrics::Registry::Global().GetGauge(name, "").Value());
}
uint64_t RingRequests() {
  return metrics::Registry::Global().GetCounter("ossmount_fuse_ring_requests_total", "").Value();
}

// Whether this kernel can carry requests through io_uring rings (the switch exists, and
// this process may turn it on).
bool RingsAvailable() {
  ossmount::fuse::LoadFuseModule();
  return ossmount::fuse::ReadUringSwitch(ossmount::fuse::kUringSwitchPath) !=
             ossmount::fuse::UringSwitch::kAbsent &&
         geteuid() == 0;
}

// The transports a case runs under: /dev/fuse, then the rings where the kernel has them
// (the cases that GENERATE this say so by its name in their output).
FuseRingMode Transport(bool ring) { return ring ? FuseRingMode::kOn : FuseRingMode::kOff; }
#define OSSMOUNT_FOR_EACH_TRANSPORT(ring)                                     \
  const bool ring = GENERATE(false, true);                                    \
  if (ring && !RingsAvailable()) {                                            \
    WARN("no FUSE io_uring on this kernel (or not root): ring case skipped"); \
    return;                                                                   \
  }                                                                           \
  INFO("transport: " << (ring ? "io_uring" : "/dev/fuse"));                   \
  const uint64_t ring_requests_before = RingRequests()

// After a case ran over the rings: they carried its requests.
#define OSSMOUNT_CHECK_TRANSPORT(ring)               \
  do {                                               \
    if (ring) {                                      \
      CHECK(RingRequests() > ring_requests_before);  \
    } else {                                         \
      CHECK(RingRequests() == ring_requests_before); \
    }                                                \
  } while (0)

// One real mount of a MemoryFilesystem, served on a background thread.
class TestMount {
 public:
  explicit TestMount(std::function<void(MemoryFilesystem&)> build,
                     ossmount::fuse::ControlAnswerer control = nullptr,
                     FuseRingMode transport = FuseRingMode::kOff) {
    char tmpl[] = "/tmp/ossmount-fuse-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    work_.emplace(io_.get_executor());
    for (int i = 0; i < 2; ++i) {
      io_threads_.emplace_back([this] {
        ossmount::fuse::BlockTerminationSignals();
        io_.run();
      });
    }
    fs_ = std::make_shared<MemoryFilesystem>(io_);
    build(*fs_);
    FuseServerOptions opts;
    opts.mountpoint = dir_;
    opts.fsname = "ossmount:test-bucket";
    opts.control = std::move(control);
    opts.io_uring = transport;
    auto server = FuseServer::Mount(fs_, fs_, opts);
    INFO(server.status().ToString());
    REQUIRE(server.ok());
    server_ = std::move(*server);
    run_done_ = std::async(std::launch::async, [this] { return server_->Run(); });
    // The mount answers once the loop is serving.
    struct stat st {};
    REQUIRE(stat(dir_.c_str(), &st) == 0);
    REQUIRE(S_ISDIR(st.st_mode));
    if (transport == FuseRingMode::kOn) {
      // The rings take over once every queue registered, just after INIT.
      const auto deadline = std::chrono::steady_clock::now() + kTimeout;
      while (Metric("ossmount_fuse_ring_queues") == 0 &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(1ms);
      }
      REQUIRE(Metric("ossmount_fuse_ring_queues") > 0);
    }
  }

  ~TestMount() {
    if (server_) {
      server_->RequestExit();
      if (run_done_.valid() && run_done_.wait_for(kTimeout) != std::future_status::ready) {
        std::fprintf(stderr, "FUSE loop did not stop; forcing an unmount\n");
        ForceUnmount();
      }
      server_->Unmount();
      server_->Drain(500ms);
    }
    ForceUnmount();  // unconditional: never leave a mount behind
    work_.reset();
    io_.stop();
    for (auto& t : io_threads_) t.join();
    // Cancel slow reads while io_ exists (the server still co-owns fs_); their handlers die
    // with io_ below.
    if (fs_) fs_->CancelSlowReads();
    fs_.reset();
    // Destroy the io_context's pending handlers (and with them, unanswered requests)
    // before the session.
    io_.~io_context();
    new (&io_) boost::asio::io_context();
    server_.reset();
    rmdir(dir_.c_str());
  }

  // Stops serving like a signal would, waits for Run() to return its status.
  Status StopLoop() {
    server_->RequestExit();
    REQUIRE(run_done_.wait_for(kTimeout) == std::future_status::ready);
    return run_done_.get();
  }

  void ForceUnmount() {
    if (IsMounted(dir_)) {
      std::string cmd =
          "fusermount3 -u -z '" + dir_ + "' 2>/dev/null || umount -l '" + dir_ + "' 2>/dev/null";
      int rc = std::system(cmd.c_str());
      (void)rc;
    }
  }

  std::string path(const std::string& rel) const { return dir_ + "/" + rel; }
  const std::string& dir() const { return dir_; }
  MemoryFilesystem& fs() { return *fs_; }
  FuseServer& server() { return *server_; }
  std::future<Status>& run_done() { return run_done_; }

 private:
  std::string dir_;
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::vector<std::thread> io_threads_;
  std::shared_ptr<MemoryFilesystem> fs_;
  std::unique_ptr<FuseServer> server_;
  std::future<Status> run_done_;
};

std::vector<std::string> ListNames(DIR* d) {
  std::vector<std::string> names;
  errno = 0;
  while (dirent* e = readdir(d)) names.push_back(e->d_name);
  REQUIRE(errno == 0);
  return names;
}

std::string ReadAll(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    REQUIRE(n >= 0);
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

}  // namespace

TEST_CASE("readdir lists every entry of a large directory once, with '.' and '..'") {
  OSSMOUNT_FOR_EACH_TRANSPORT(ring);
  constexpr int kFiles = 3000;
  TestMount m(
      [](MemoryFilesystem& fs) {
        fs.AddDir("many");
        for (int i = 0; i < kFiles; ++i) {
          char name[64];
          std::snprintf(name, sizeof name, "img_%05d_with_a_longish_name.JPEG", i);
          fs.AddFile(std::string("many/") + name, "x");
        }
        fs.AddDir("many/subdir");
      },
      nullptr, Transport(ring));
  DIR* d = opendir(m.path("many").c_str());
  REQUIRE(d != nullptr);
  std::vector<std::string> names;
  std::set<std::string> unique;
  int dirs = 0;
  errno = 0;
  while (dirent* e = readdir(d)) {
    names.push_back(e->d_name);
    unique.insert(e->d_name);
    if (e->d_type == DT_DIR) ++dirs;
    if (std::string(e->d_name) == "img_00007_with_a_longish_name.JPEG") CHECK(e->d_type == DT_REG);
  }
  REQUIRE(errno == 0);
  closedir(d);
  CHECK(names.size() == kFiles + 3);
  CHECK(unique.size() == names.size());
  REQUIRE(names.size() >= 2);
  CHECK(names[0] == ".");
  CHECK(names[1] == "..");
  CHECK(unique.count("subdir") == 1);
  CHECK(dirs == 3);  // ".", "..", "subdir"
  // readdirplus handed out references for what it listed, and nothing went negative.
  CHECK(m.fs().add_lookup_calls() >= static_cast<uint64_t>(kFiles));
  CHECK_FALSE(m.fs().lookup_count_went_negative());
  OSSMOUNT_CHECK_TRANSPORT(ring);
}

TEST_CASE("readdir offsets are stable: seekdir and rewinddir repeat the same entries") {
  TestMount m([](MemoryFilesystem& fs) {
    fs.AddDir("d");
    for (int i = 0; i < 500; ++i) fs.AddFile("d/f" + std::to_string(i), "x");
  });
  DIR* d = opendir(m.path("d").c_str());
  REQUIRE(d != nullptr);
  std::vector<std::string> all = ListNames(d);
  REQUIRE(all.size() == 502);
  rewinddir(d);
  CHECK(ListNames(d) == all);

  rewinddir(d);
  for (int i = 0; i < 200; ++i) REQUIRE(readdir(d) != nullptr);
  long pos = telldir(d);
  std::vector<std::string> first;
  for (int i = 0; i < 50; ++i) first.push_back(readdir(d)->d_name);
  seekdir(d, pos);
  std::vector<std::string> again;
  for (int i = 0; i < 50; ++i) again.push_back(readdir(d)->d_name);
  CHECK(first == again);
  CHECK(first.front() == all[200]);
  closedir(d);
}

TEST_CASE("lookup and getattr report the Filesystem's attributes") {
  TestMount m([](MemoryFilesystem& fs) {
    fs.AddDir("train");
    fs.AddDir("train/cat");
    fs.AddFile("train/cat/1.jpg", Content(12345, 1));
  });
  struct stat st {};
  REQUIRE(stat(m.path("train/cat/1.jpg").c_str(), &st) == 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK((st.st_mode & 07777) == 0444);
  CHECK(st.st_size == 12345);
  CHECK(st.st_uid == 1234);
  CHECK(st.st_gid == 5678);
  CHECK(st.st_mtime == 1700000000);
  CHECK(st.st_nlink == 1);
  REQUIRE(stat(m.path("train/cat").c_str(), &st) == 0);
  CHECK(S_ISDIR(st.st_mode));
  CHECK((st.st_mode & 07777) == 0555);
  errno = 0;
  CHECK(stat(m.path("train/dog").c_str(), &st) == -1);
  CHECK(errno == ENOENT);
  CHECK(stat(m.path("train/cat/1.jpg/x").c_str(), &st) == -1);
  CHECK((errno == ENOTDIR || errno == ENOENT));
  CHECK_FALSE(m.fs().lookup_count_went_negative());
}

TEST_CASE("read returns the bytes, at any offset, and 0 past the end") {
  OSSMOUNT_FOR_EACH_TRANSPORT(ring);
  const std::string small = Content(100000, 2);
  const std::string big = Content(3 * 1024 * 1024 + 17, 3);
  TestMount m(
      [&](MemoryFilesystem& fs) {
        fs.AddFile("small.bin", small);
        fs.AddFile("big.bin", big);
        fs.AddFile("empty", "");
      },
      nullptr, Transport(ring));
  CHECK(ReadAll(m.path("small.bin")) == small);
  CHECK(ReadAll(m.path("big.bin")) == big);
  CHECK(ReadAll(m.path("empty")).empty());

  int fd = open(m.path("big.bin").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  for (off_t off : {off_t(0), off_t(1), off_t(4095), off_t(131072), off_t(big.size() - 10)}) {
    char buf[5000];
    ssize_t n = pread(fd, buf, sizeof buf, off);
    size_t want = std::min(sizeof buf, big.size() - static_cast<size_t>(off));
    REQUIRE(n == static_cast<ssize_t>(want));
    CHECK(std::string(buf, n) == big.substr(off, want));
  }
  char buf[16];
  CHECK(pread(fd, buf, sizeof buf, big.size()) == 0);
  CHECK(pread(fd, buf, sizeof buf, big.size() + 1000) == 0);
  close(fd);
  OSSMOUNT_CHECK_TRANSPORT(ring);
}

TEST_CASE("every mutation fails with EROFS") {
  OSSMOUNT_FOR_EACH_TRANSPORT(ring);
  TestMount m(
      [](MemoryFilesystem& fs) {
        fs.AddDir("d");
        fs.AddFile("d/f", "hello");
      },
      nullptr, Transport(ring));
  auto expect_erofs = [](int rc, const char* what) {
    INFO(what << ": rc " << rc << " errno " << errno);
    CHECK(rc == -1);
    CHECK(errno == EROFS);
  };
  errno = 0;
  expect_erofs(open(m.path("d/f").c_str(), O_WRONLY), "open O_WRONLY");
  expect_erofs(open(m.path("d/f").c_str(), O_RDWR), "open O_RDWR");
  expect_erofs(open(m.path("d/f").c_str(), O_RDONLY | O_TRUNC), "open O_TRUNC");
  expect_erofs(open(m.path("d/new").c_str(), O_WRONLY | O_CREAT, 0644), "create");
  expect_erofs(mkdir(m.path("d/newdir").c_str(), 0755), "mkdir");
  expect_erofs(unlink(m.path("d/f").c_str()), "unlink");
  expect_erofs(rmdir(m.path("d").c_str()), "rmdir");
  expect_erofs(rename(m.path("d/f").c_str(), m.path("d/g").c_str()), "rename");
  expect_erofs(chmod(m.path("d/f").c_str(), 0777), "chmod");
  expect_erofs(chown(m.path("d/f").c_str(), 1, 1), "chown");
  expect_erofs(truncate(m.path("d/f").c_str(), 0), "truncate");
  expect_erofs(symlink("f", m.path("d/link").c_str()), "symlink");
  expect_erofs(link(m.path("d/f").c_str(), m.path("d/hard").c_str()), "link");
  expect_erofs(mknod(m.path("d/fifo").c_str(), S_IFIFO | 0644, 0), "mknod");
  expect_erofs(setxattr(m.path("d/f").c_str(), "user.x", "1", 1, 0), "setxattr");
  expect_erofs(removexattr(m.path("d/f").c_str(), "user.x"), "removexattr");
  // Still readable, still there.
  CHECK(ReadAll(m.path("d/f")) == "hello");
  CHECK(access(m.path("d/f").c_str(), W_OK) == -1);
  OSSMOUNT_CHECK_TRANSPORT(ring);
}

TEST_CASE("statfs and xattrs") {
  TestMount m([](MemoryFilesystem& fs) { fs.AddFile("f", "x"); });
  struct statvfs st {};
  REQUIRE(statvfs(m.dir().c_str(), &st) == 0);
  CHECK(st.f_bsize == 4096);
  CHECK(st.f_blocks == 1000);
  CHECK(st.f_namemax == 255);
  CHECK((st.f_flag & ST_RDONLY) != 0);
  char buf[256];
  errno = 0;
  CHECK(getxattr(m.path("f").c_str(), "user.anything", buf, sizeof buf) == -1);
  CHECK((errno == ENOTSUP || errno == ENODATA));
  CHECK(listxattr(m.path("f").c_str(), buf, sizeof buf) == 0);
  CHECK(listxattr(m.path("f").c_str(), nullptr, 0) == 0);
}

TEST_CASE("the mount shows fsname and subtype, read-only") {
  TestMount m([](MemoryFilesystem& fs) { fs.AddFile("f", "x"); });
  std::ifstream in("/proc/self/mountinfo");
  std::string line, found;
  while (std::getline(in, line)) {
    if (line.find(" " + m.dir() + " ") != std::string::npos) found = line;
  }
  INFO(found);
  CHECK(found.find("fuse.ossmount") != std::string::npos);
  CHECK(found.find("ossmount:test-bucket") != std::string::npos);
  CHECK(found.find(" ro,") != std::string::npos);
}

TEST_CASE("file and directory handles are released") {
  OSSMOUNT_FOR_EACH_TRANSPORT(ring);
  TestMount m(
      [](MemoryFilesystem& fs) {
        fs.AddDir("d");
        fs.AddFile("d/f", "abc");
      },
      nullptr, Transport(ring));
  for (int i = 0; i < 20; ++i) {
    CHECK(ReadAll(m.path("d/f")) == "abc");
    DIR* d = opendir(m.path("d").c_str());
    REQUIRE(d != nullptr);
    ListNames(d);
    closedir(d);
  }
  // release/releasedir are asynchronous in the kernel; allow them to arrive.
  for (int i = 0; i < 600 && m.fs().open_handles() != 0; ++i) std::this_thread::sleep_for(50ms);
  CHECK(m.fs().open_handles() == 0);
  OSSMOUNT_CHECK_TRANSPORT(ring);
}

TEST_CASE("fusermount3 -u ends Run() with OK") {
  OSSMOUNT_FOR_EACH_TRANSPORT(ring);
  TestMount m([](MemoryFilesystem& fs) { fs.AddFile("f", "x"); }, nullptr, Transport(ring));
  CHECK(ReadAll(m.path("f")) == "x");
  OSSMOUNT_CHECK_TRANSPORT(ring);
  std::string cmd = "fusermount3 -u '" + m.dir() + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  REQUIRE(m.run_done().wait_for(kTimeout) == std::future_status::ready);
  Status st = m.run_done().get();
  CHECK(st.ok());
  CHECK_FALSE(IsMounted(m.dir()));
}

TEST_CASE("stopping while a reader is blocked in a slow read neither hangs nor crashes") {
  OSSMOUNT_FOR_EACH_TRANSPORT(ring);
  TestMount m(
      [](MemoryFilesystem& fs) {
        fs.AddFile("fast", "quick");
        fs.AddFile("slow", Content(50000, 4), /*slow=*/true);
      },
      nullptr, Transport(ring));
  CHECK(ReadAll(m.path("fast")) == "quick");
  std::promise<int> reader_result;
  auto reader_done = reader_result.get_future();
  std::thread reader([&] {
    int fd = open(m.path("slow").c_str(), O_RDONLY);
    if (fd < 0) {
      reader_result.set_value(-errno);
      return;
    }
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    reader_result.set_value(n >= 0 ? static_cast<int>(n) : -errno);
    close(fd);
  });
  REQUIRE(m.fs().WaitForSlowRead(1, kTimeout));
  CHECK(m.server().outstanding() >= 1);

  OSSMOUNT_CHECK_TRANSPORT(ring);
  Status run = m.StopLoop();
  CHECK(run.ok());
  m.server().Unmount();
  CHECK_FALSE(IsMounted(m.dir()));
  // The read is still owed: Drain waits, then answers it itself to release the reader.
  CHECK_FALSE(m.server().Drain(300ms));
  CHECK(m.server().outstanding() == 0);
  REQUIRE(reader_done.wait_for(kTimeout) == std::future_status::ready);
  int r = reader_done.get();
  INFO("reader got " << r);
  CHECK((r == -ENOTCONN || r == -ECONNABORTED || r == -EIO));
  reader.join();
  // Teardown destroys the pending handler; its ReplyOnce finds the request already
  // answered, and the session is destroyed without a late reply.
}

TEST_CASE("a signal-style exit request before Run() still stops it") {
  TestMount m([](MemoryFilesystem& fs) { fs.AddFile("f", "x"); });
  for (int i = 0; i < 5; ++i) m.server().RequestExit();  // idempotent
  REQUIRE(m.run_done().wait_for(kTimeout) == std::future_status::ready);
  CHECK(m.run_done().get().ok());
}

TEST_CASE("control ioctls on any directory reach the answerer with the caller, others are ENOTTY") {
  OSSMOUNT_FOR_EACH_TRANSPORT(ring);
  // Answers "<pid> <uid> <directory>:<request bytes>|<request>", so a long request comes
  // back long.
  TestMount m(
      [](MemoryFilesystem& fs) {
        fs.AddDir("d");
        fs.AddFile("d/f", "hello");
      },
      [](std::string request, ossmount::fuse::ControlCaller caller,
         std::function<void(std::string)> done) {
        done(std::to_string(caller.pid) + " " + std::to_string(caller.uid) + " " +
             caller.directory + ":" + std::to_string(request.size()) + "|" + request);
      },
      Transport(ring));
  const std::string who = std::to_string(getpid()) + " " + std::to_string(geteuid()) + " ";
  auto root = control::CallThroughMount(m.dir(), R"({"command":"x"})");
  REQUIRE(root.ok());
  CHECK(*root == who + ":16|{\"command\":\"x\"}");  // the request's newline came, the answer's went
  auto sub = control::CallThroughMount(m.path("d"), "y");
  REQUIRE(sub.ok());
  CHECK(*sub == who + "d:2|y");  // the directory the ioctl went to

  // A request and an answer of many chunks each arrive whole (the request's newline comes
  // back last, and the client takes it off as the answer's).
  const std::string big = Content(1 << 20, 5);
  auto echoed = control::CallThroughMount(m.dir(), big);
  REQUIRE(echoed.ok());
  const std::string head = who + ":" + std::to_string(big.size() + 1) + "|";
  REQUIRE(echoed->size() == head.size() + big.size());
  CHECK(echoed->compare(0, head.size(), head) == 0);
  CHECK(echoed->compare(head.size(), big.size(), big) == 0);

  // On a file, the control commands are like any other ioctl: ENOTTY (isatty is false).
  int fd = open(m.path("d/f").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  control::ControlChunk chunk;
  errno = 0;
  CHECK(ioctl(fd, control::kControlSend, &chunk) == -1);
  CHECK(errno == ENOTTY);
  CHECK(isatty(fd) == 0);
  close(fd);
  OSSMOUNT_CHECK_TRANSPORT(ring);
}

TEST_CASE("a mount without a control answerer refuses the ioctls and the client says so") {
  TestMount m([](MemoryFilesystem& fs) { fs.AddFile("f", "x"); });
  auto r = control::CallThroughMount(m.dir(), R"({"command":"x"})");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kNotSupported);
}

TEST_CASE("more reads waiting at once than the rings have entries all complete, byte for byte") {
  OSSMOUNT_FOR_EACH_TRANSPORT(ring);
  // Every read waits 200 ms in the file system; 160 readers at once is more than the
  // entries of all queues together (the kernel holds the rest until an entry is free).
  constexpr int kReaders = 160;
  TestMount m(
      [](MemoryFilesystem& fs) {
        for (int i = 0; i < kReaders; ++i) {
          fs.AddFile(std::string("f").append(std::to_string(i)), Content(20000 + i, 100 + i));
        }
        fs.SetReadDelay(200ms);
      },
      nullptr, Transport(ring));
  // The readers' threads make no Catch assertions (Catch is not thread-safe): each returns
  // its bytes, or "errno N".
  std::vector<std::future<std::string>> reads;
  for (int i = 0; i < kReaders; ++i) {
    reads.push_back(std::async(std::launch::async, [&m, i] {
      const int fd = open(m.path(std::string("f").append(std::to_string(i))).c_str(), O_RDONLY);
      if (fd < 0) return std::string("errno ").append(std::to_string(errno));
      std::string out;
      char buf[65536];
      ssize_t n;
      while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
      if (n < 0) out = std::string("errno ").append(std::to_string(errno));
      close(fd);
      return out;
    }));
  }
  for (int i = 0; i < kReaders; ++i) {
    REQUIRE(reads[i].wait_for(kTimeout) == std::future_status::ready);
    CHECK(reads[i].get() == Content(20000 + i, 100 + i));
  }
  OSSMOUNT_CHECK_TRANSPORT(ring);
}

TEST_CASE("over the rings, their buffers count in the file system's budget as they are used") {
  if (!RingsAvailable()) {
    WARN("no FUSE io_uring on this kernel (or not root): case skipped");
    return;
  }
  const std::string big = Content(4 * 1024 * 1024, 9);
  TestMount m(
      [&](MemoryFilesystem& fs) {
        fs.AddFile("small", "x");
        fs.AddFile("big", big);
      },
      nullptr, FuseRingMode::kOn);
  CHECK(ReadAll(m.path("small")) == "x");
  const uint64_t after_small = m.fs().transport_buffers();
  // Small requests and replies touch a page of an entry or two.
  CHECK(after_small > 0);
  CHECK(after_small <= 8u * 4096);
  // The kernel reads a large file in requests of its readahead (128 KiB here, at most 1 MiB:
  // max_pages): their replies fill that much of an entry.
  CHECK(ReadAll(m.path("big")) == big);
  const uint64_t after_big = m.fs().transport_buffers();
  CHECK(after_big >= after_small + (128u << 10) - 4096);
  // Never more than every entry of every queue, whole.
  const double queues = Metric("ossmount_fuse_ring_queues");
  const double entries = Metric("ossmount_fuse_ring_entries_per_queue");
  CHECK(static_cast<double>(after_big) <= queues * entries * (1 << 20));
  // Reading small files again touches nothing the big read did not: at most the first page
  // of an entry no request had used yet (the kernel picks the entry, so which one varies).
  for (int i = 0; i < 10; ++i) CHECK(ReadAll(m.path("small")) == "x");
  const uint64_t after_rereads = m.fs().transport_buffers();
  CHECK(after_rereads >= after_big);
  CHECK(static_cast<double>(after_rereads - after_big) <= queues * entries * 4096);
}

TEST_CASE("over /dev/fuse nothing counts as transport buffers") {
  TestMount m([](MemoryFilesystem& fs) { fs.AddFile("f", "x"); });
  CHECK(ReadAll(m.path("f")) == "x");
  CHECK(m.fs().transport_buffers() == 0);
}
