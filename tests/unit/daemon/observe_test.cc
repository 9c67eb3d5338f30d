// The daemon's observability pieces without a mount: the audit log writer, the Prometheus
// listener, the heap gauges and the stats view.
#include <rapidjson/document.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "audit_log.h"
#include "common/metrics.h"
#include "common/sanitizers.h"
#include "heap_metrics.h"
#include "metrics_http.h"
#include "stats_command.h"
#include "support/eventually.h"

namespace ossmount::daemon {
namespace {

using Catch::Matchers::Contains;
using namespace std::chrono_literals;

std::string TempDir() {
  char tmpl[] = "/tmp/ossmount-daemon-test-XXXXXX";
  return mkdtemp(tmpl);
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

fs::AuditRecord Record(const std::string& path, uint64_t bytes) {
  fs::AuditRecord r;
  r.path = path;
  r.caller = {4242, 1000, 100};
  r.opened = std::chrono::system_clock::time_point(std::chrono::milliseconds(1714564803241));
  r.duration = std::chrono::microseconds(9137);
  r.bytes_read = bytes;
  r.size = 51234;
  return r;
}

TEST_CASE("audit: a line is JSON with every documented field") {
  auto closed = std::chrono::system_clock::time_point(std::chrono::milliseconds(1714564803250));
  std::string line = AuditLog::Format(Record("train/c\"at/1.jpg", 51234), closed);
  rapidjson::Document doc;
  doc.Parse(line.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  CHECK(std::string(doc["time"].GetString()) == "2024-05-01T12:00:03.250Z");
  CHECK(std::string(doc["opened"].GetString()) == "2024-05-01T12:00:03.241Z");
  CHECK(std::string(doc["event"].GetString()) == "close");
  CHECK(std::string(doc["path"].GetString()) == "train/c\"at/1.jpg");
  CHECK(doc["pid"].GetUint() == 4242);
  CHECK(doc["uid"].GetUint() == 1000);
  CHECK(doc["gid"].GetUint() == 100);
  CHECK(doc["bytes_read"].GetUint64() == 51234);
  CHECK(doc["size"].GetUint64() == 51234);
  CHECK(doc["duration_ms"].GetDouble() == Approx(9.137));
  CHECK(line.find('\n') == std::string::npos);
}

TEST_CASE("audit: a file still open when the mount ended is the event unmount") {
  auto closed = std::chrono::system_clock::time_point(std::chrono::milliseconds(1714564803250));
  fs::AuditRecord record = Record("train/held.bin", 10);
  record.at_unmount = true;
  rapidjson::Document doc;
  doc.Parse(AuditLog::Format(record, closed).c_str());
  REQUIRE_FALSE(doc.HasParseError());
  CHECK(std::string(doc["event"].GetString()) == "unmount");
  CHECK(std::string(doc["path"].GetString()) == "train/held.bin");
  CHECK(doc["bytes_read"].GetUint64() == 10);
}

TEST_CASE("audit: records are written by Stop and after a reopen go to the new file") {
  std::string dir = TempDir();
  std::string path = dir + "/audit.log";
  auto log = AuditLog::Open(path);
  REQUIRE(log.ok());
  (*log)->Record(Record("a", 1));
  (*log)->Record(Record("b", 2));
  // The writer flushes at least every second.
  REQUIRE(ossmount::testing::Eventually([&] { return Lines(path).size() >= 2; }));
  REQUIRE(Lines(path).size() == 2);
  std::filesystem::rename(path, path + ".1");
  (*log)->Reopen();
  REQUIRE(ossmount::testing::Eventually([&] { return std::filesystem::exists(path); }));
  REQUIRE(std::filesystem::exists(path));
  (*log)->Record(Record("c", 3));
  (*log)->Stop();
  CHECK(Lines(path + ".1").size() == 2);
  auto after = Lines(path);
  REQUIRE(after.size() == 1);
  CHECK_THAT(after[0], Contains("\"path\":\"c\""));
  CHECK((std::filesystem::status(path).permissions() & std::filesystem::perms::all) ==
        (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));
  (*log)->Record(Record("late", 4));  // after Stop: dropped, not crashing
  std::filesystem::remove_all(dir);
}

TEST_CASE("audit: an unwritable path fails with the option name") {
  auto log = AuditLog::Open("/nonexistent-dir/audit.log");
  REQUIRE_FALSE(log.ok());
  CHECK_THAT(log.status().message(), Contains("--audit-log '/nonexistent-dir/audit.log'"));
}

// One HTTP/1.0 exchange with the listener; returns the whole response.
std::string HttpGet(uint16_t port, const std::string& request) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  boost::asio::write(socket, boost::asio::buffer(request));
  std::string response;
  boost::system::error_code ec;
  boost::asio::read(socket, boost::asio::dynamic_buffer(response), ec);
  return response;
}

TEST_CASE("metrics http: GET /metrics serves the text, other paths and methods are refused") {
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::thread thread([&] { io.run(); });
  int renders = 0;
  auto server = MetricsHttpServer::Start(io, "127.0.0.1", 0, [&] {
    ++renders;
    return std::string("# HELP x_total X.\n# TYPE x_total counter\nx_total 7\n");
  });
  REQUIRE(server.ok());
  uint16_t port = (*server)->port();
  CHECK(port != 0);

  std::string ok = HttpGet(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK_THAT(ok, Contains("HTTP/1.1 200 OK"));
  CHECK_THAT(ok, Contains("text/plain; version=0.0.4"));
  CHECK_THAT(ok, Contains("\r\n\r\n# HELP x_total X.\n# TYPE x_total counter\nx_total 7\n"));
  CHECK(renders == 1);
  CHECK_THAT(HttpGet(port, "GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n"), Contains("200 OK"));
  CHECK_THAT(HttpGet(port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"), Contains("404 Not Found"));
  CHECK_THAT(HttpGet(port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"),
             Contains("405 Method Not Allowed"));

  auto taken = MetricsHttpServer::Start(io, "127.0.0.1", port, [] { return std::string(); });
  REQUIRE_FALSE(taken.ok());
  CHECK_THAT(taken.status().message(), Contains("--metrics-address 127.0.0.1:"));

  server->reset();
  work.reset();
  io.stop();
  thread.join();
}

rapidjson::Document Parse(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  return doc;
}

double GaugeValue(const std::string& name) {
  rapidjson::Document doc;
  doc.Parse(metrics::Registry::Global().Json().c_str());
  for (const auto& g : doc["gauges"].GetArray()) {
    if (name == g["name"].GetString()) return g["value"].GetDouble();
  }
  FAIL("no gauge " << name);
  return 0;
}

TEST_CASE("heap metrics: a live block counts as allocated until it is freed") {
  // A sanitizer's allocator replaces glibc's, whose figures then stay 0.
  if (kAddressSanitizer || kThreadSanitizer) {
    WARN("a sanitizer's allocator stands in for glibc's, whose figures these are: not checked");
    return;
  }
  RegisterHeapMetrics();
  const double before = GaugeValue("ossmount_heap_allocated_bytes");
  CHECK(before > 0);
  CHECK(GaugeValue("ossmount_heap_free_bytes") >= 0);
  // Above glibc's largest mmap threshold (32 MiB), so it is mapped and unmapped at once.
  constexpr size_t kBlock = 64 << 20;
  void* volatile block = std::malloc(kBlock);  // volatile: the pair may not be elided
  REQUIRE(block != nullptr);
  const double held = GaugeValue("ossmount_heap_allocated_bytes");
  CHECK(held - before >= static_cast<double>(kBlock));
  std::free(block);
  CHECK(GaugeValue("ossmount_heap_allocated_bytes") < held - static_cast<double>(kBlock) / 2);
}

TEST_CASE("stats: the result carries the mount, the pid and the registry") {
  metrics::Registry::Global().GetCounter("ossmount_requests_total", "h",
                                         {{"type", "GET"}, {"outcome", "ok"}});
  ossmount::daemon::RestartHistory restarts;
  auto doc = Parse(StatsResult("/mnt/x", std::chrono::steady_clock::now() - 5s, restarts));
  CHECK(std::string(doc["mountpoint"].GetString()) == "/mnt/x");
  CHECK(doc["pid"].GetInt() == getpid());
  // The namespace the pid is in, as /proc names it (a readiness probe compares it).
  char ns[64] = {};
  REQUIRE(readlink("/proc/self/ns/pid", ns, sizeof ns - 1) > 0);
  CHECK(std::string(doc["pid_namespace"].GetString()) == ns);
  CHECK(std::string(doc["pid_namespace"].GetString()).rfind("pid:[", 0) == 0);
  CHECK(std::string(doc["version"].GetString()) == OSSMOUNT_VERSION);
  CHECK(doc["uptime_seconds"].GetDouble() >= 5);
  CHECK(doc["restarts"].GetUint64() == 0);
  CHECK(doc["metrics"]["counters"].IsArray());
  // Nothing about restarts in the view of a daemon that was not restarted.
  CHECK(RenderStats(doc, nullptr, 0).find("restarted") == std::string::npos);
}

TEST_CASE("stats: a restarted daemon says how often, why and how long readers waited") {
  ossmount::daemon::RestartHistory restarts;
  restarts.restarts = 3;
  restarts.last_cause = "was killed by signal 9 (SIGKILL)";
  restarts.longest_pause_ms = 240;
  restarts.pause_ms = 35;
  auto doc = Parse(StatsResult("/mnt/x", std::chrono::steady_clock::now(), restarts));
  CHECK(doc["restarts"].GetUint64() == 3);
  CHECK(std::string(doc["last_restart_cause"].GetString()) == restarts.last_cause);
  CHECK(doc["restart_pause_ms"].GetInt64() == 35);
  CHECK(doc["longest_restart_pause_ms"].GetInt64() == 240);
  const std::string view = RenderStats(doc, nullptr, 0);
  CHECK(view.find("The daemon was restarted 3 time(s) on this mount; the last was killed by "
                  "signal 9 (SIGKILL). Pause: 35 ms, the longest 240 ms.") != std::string::npos);
}

TEST_CASE("stats: the view shows counts, errors, ratios and rates") {
  // Two replies one second apart, written by hand so every figure is known.
  auto reply = [](int gets, int misses) {
    return "{\"mountpoint\":\"/mnt/x\",\"pid\":7,\"uptime_seconds\":10,\"metrics\":{"
           "\"counters\":["
           "{\"name\":\"ossmount_requests_total\",\"labels\":{\"type\":\"GET\",\"outcome\":\"ok\"},"
           "\"value\":" +
           std::to_string(gets) +
           "},"
           "{\"name\":\"ossmount_requests_total\",\"labels\":{\"type\":\"GET\",\"outcome\":"
           "\"throttled\"},\"value\":2},"
           "{\"name\":\"ossmount_received_bytes_total\",\"labels\":{\"type\":\"GET\"},\"value\":" +
           std::to_string(gets * 1048576) +
           "},"
           "{\"name\":\"ossmount_request_resumed_bytes_total\",\"labels\":{\"type\":\"GET\"},"
           "\"value\":3145728},"
           "{\"name\":\"ossmount_memory_cache_lookups_total\",\"labels\":{\"result\":\"hit\"},"
           "\"value\":3},"
           "{\"name\":\"ossmount_memory_cache_lookups_total\",\"labels\":{\"result\":\"miss\"},"
           "\"value\":" +
           std::to_string(misses) +
           "},"
           "{\"name\":\"ossmount_opens_total\",\"labels\":{},\"value\":8},"
           "{\"name\":\"ossmount_page_cache_opens_total\",\"labels\":{},\"value\":2},"
           "{\"name\":\"ossmount_passthrough_opens_total\",\"labels\":{},\"value\":6},"
           "{\"name\":\"ossmount_list_ahead_total\",\"labels\":{\"result\":\"listed\"},"
           "\"value\":38},"
           "{\"name\":\"ossmount_list_ahead_total\",\"labels\":{\"result\":\"abandoned\"},"
           "\"value\":1},"
           "{\"name\":\"ossmount_list_ahead_dropped_total\",\"labels\":{},\"value\":5},"
           "{\"name\":\"ossmount_readahead_stalls_total\",\"labels\":{},\"value\":3},"
           "{\"name\":\"ossmount_early_answers_total\",\"labels\":{},\"value\":12},"
           "{\"name\":\"ossmount_lookup_listings_total\",\"labels\":{\"result\":\"listed\"},"
           "\"value\":9},"
           "{\"name\":\"ossmount_lookup_listings_total\",\"labels\":{\"result\":\"failed\"},"
           "\"value\":2},"
           "{\"name\":\"ossmount_metadata_evictions_total\",\"labels\":{},\"value\":17}],"
           "\"gauges\":[{\"name\":\"ossmount_open_handles\",\"labels\":{},\"value\":4},"
           "{\"name\":\"ossmount_memory_used_bytes\",\"labels\":{},\"value\":2097152},"
           "{\"name\":\"ossmount_memory_limit_bytes\",\"labels\":{},\"value\":1073741824},"
           "{\"name\":\"ossmount_heap_allocated_bytes\",\"labels\":{},\"value\":52428800},"
           "{\"name\":\"ossmount_heap_free_bytes\",\"labels\":{},\"value\":12582912},"
           "{\"name\":\"ossmount_inodes\",\"labels\":{},\"value\":1002},"
           "{\"name\":\"ossmount_metadata_listings\",\"labels\":{},\"value\":11},"
           "{\"name\":\"ossmount_metadata_listed_names\",\"labels\":{},\"value\":1010},"
           "{\"name\":\"ossmount_metadata_listing_bytes\",\"labels\":{},\"value\":83886},"
           "{\"name\":\"ossmount_metadata_bytes\",\"labels\":{},\"value\":3145728},"
           "{\"name\":\"ossmount_metadata_limit_bytes\",\"labels\":{},\"value\":536870912},"
           "{\"name\":\"ossmount_list_ahead_distance\",\"labels\":{},\"value\":64}],"
           "\"histograms\":[{\"name\":\"ossmount_request_duration_seconds\",\"labels\":{"
           "\"type\":\"GET\"},\"count\":10,\"sum\":1,\"p50\":0.012,\"p90\":0.05,\"p99\":0.2}]}}";
  };
  auto before = Parse(reply(10, 1));
  auto now = Parse(reply(30, 1));
  std::string view = RenderStats(now, &before, 2.0);
  CHECK_THAT(view, Contains("ossmount /mnt/x (pid 7)"));
  CHECK_THAT(view,
             Contains("  GET            30        2        0        12.0      50.0     200.0"));
  CHECK_THAT(view, Contains("errors: throttled 2\n            resumed retries: 3.0 MiB not "
                            "fetched again"));
  CHECK_THAT(view, Contains("from the store 10.0 MiB/s (30.0 MiB in all)"));  // 20 MiB in 2 s
  CHECK_THAT(view, Contains("memory (small files)   75.0% (3/4)"));
  CHECK_THAT(view, Contains("disk                   off (no --cache)"));
  CHECK_THAT(view, Contains("page-cache opens       25.0% (2/8)"));
  CHECK_THAT(view, Contains("passthrough opens      75.0% (6/8)"));
  CHECK_THAT(view, Contains("Memory in use  2.0 MiB of 1.0 GiB"));
  CHECK_THAT(view, Contains("Heap           50.0 MiB allocated, 12.0 MiB free in the allocator's"));
  CHECK_THAT(view, Contains("Metadata       1002 inodes, 11 directory listings of 1010 names "
                            "in 81.9 KiB\n               3.0 MiB of 512.0 MiB held "
                            "(--max-metadata-memory), 17 dropped for it"));
  CHECK_THAT(view, Contains("Open files     4 (8 opened in all)"));
  CHECK_THAT(view, Contains("FUSE requests  through /dev/fuse (io_uring off: the start-up log "
                            "says why)"));
  CHECK_THAT(view, Contains("  reads                  3 waited for a part fetched ahead (stalls), "
                            "12 answered while their part arrived"));
  CHECK_THAT(view, Contains("List-ahead (tree walks, up to 64 directories ahead)"));
  CHECK_THAT(view, Contains("  directories            38 listed, 1 abandoned after 10 pages, 0 "
                            "failed, 5 dropped (the walk moved on)"));
  CHECK_THAT(view, Contains("Lookup listings (directories listed because names in them were "
                            "probed)\n  directories            9 listed, 0 abandoned (the lookups "
                            "stopped), 2 failed"));
  CHECK(view.find("LIST") == std::string::npos);  // no LIST requests: no row
  // The first view averages over the uptime.
  CHECK_THAT(RenderStats(now, nullptr, 0), Contains("from the store 3.0 MiB/s"));
}

TEST_CASE(
    "stats: list-ahead shows as off when its distance is 0, and the rings when they carry "
    "requests") {
  auto doc = Parse(
      "{\"mountpoint\":\"/mnt/x\",\"pid\":7,\"uptime_seconds\":1,\"metrics\":{"
      "\"counters\":[{\"name\":\"ossmount_fuse_ring_requests_total\",\"labels\":{},"
      "\"value\":1234}],\"gauges\":[{\"name\":\"ossmount_list_ahead_distance\",\"labels\":{},"
      "\"value\":0},{\"name\":\"ossmount_fuse_ring_queues\",\"labels\":{},\"value\":2},"
      "{\"name\":\"ossmount_fuse_ring_entries_per_queue\",\"labels\":{},\"value\":32}],"
      "\"histograms\":[]}}");
  std::string view = RenderStats(doc, nullptr, 0);
  CHECK_THAT(view, Contains("List-ahead     off"));
  CHECK_THAT(view, Contains("FUSE requests  through io_uring, 2 queue(s) of 32 entries (1234 "
                            "so far)"));
  CHECK(view.find("directories ahead") == std::string::npos);
}

TEST_CASE("stats: the disk cache shows its size, what it can hold, and what it gave way") {
  auto view_of = [](int space_evictions, int no_space) {
    return RenderStats(
        Parse("{\"mountpoint\":\"/mnt/x\",\"pid\":7,\"uptime_seconds\":1,\"metrics\":{"
              "\"counters\":[{\"name\":\"ossmount_disk_cache_hits_total\",\"labels\":{},"
              "\"value\":3},{\"name\":\"ossmount_disk_cache_misses_total\",\"labels\":{},"
              "\"value\":1},{\"name\":\"ossmount_disk_cache_space_evictions_total\","
              "\"labels\":{},\"value\":" +
              std::to_string(space_evictions) +
              "},{\"name\":\"ossmount_disk_cache_no_space_total\",\"labels\":{},\"value\":" +
              std::to_string(no_space) +
              "}],\"gauges\":[{\"name\":\"ossmount_disk_cache_bytes\",\"labels\":{},"
              "\"value\":3221225472},{\"name\":\"ossmount_disk_cache_capacity_bytes\","
              "\"labels\":{},\"value\":4294967296}],\"histograms\":[]}}"),
        nullptr, 0);
  };
  std::string view = view_of(0, 0);
  CHECK_THAT(view, Contains("disk                   75.0% (3/4)"));
  CHECK_THAT(view, Contains("disk cache size        3.0 GiB of 4.0 GiB"));
  CHECK(view.find("--cache-min-free") == std::string::npos);  // never had to give way
  CHECK_THAT(view_of(120, 7),
             Contains("for --cache-min-free   120 block(s) evicted, 7 not cached"));
}

TEST_CASE("audit: a written file is the event write, with its bytes and result") {
  auto closed = std::chrono::system_clock::time_point(std::chrono::milliseconds(1714564803250));
  fs::AuditRecord record = Record("ckpt/epoch3.pt", 0);
  record.write = true;
  record.bytes_written = 268435456;
  record.size = 268435456;
  record.result = "ok";
  rapidjson::Document doc;
  doc.Parse(AuditLog::Format(record, closed).c_str());
  REQUIRE_FALSE(doc.HasParseError());
  CHECK(std::string(doc["event"].GetString()) == "write");
  CHECK(doc["bytes_written"].GetUint64() == 268435456);
  CHECK(std::string(doc["result"].GetString()) == "ok");
  CHECK_FALSE(doc.HasMember("bytes_read"));
  record.result = "network";
  doc.Parse(AuditLog::Format(record, closed).c_str());
  CHECK(std::string(doc["result"].GetString()) == "network");
}

TEST_CASE("stats: uploads show files in flight, throughput, saved and failed files") {
  auto doc = Parse(
      "{\"mountpoint\":\"/mnt/x\",\"pid\":7,\"uptime_seconds\":1,\"metrics\":{"
      "\"counters\":[{\"name\":\"ossmount_upload_files_total\",\"labels\":{},\"value\":12},"
      "{\"name\":\"ossmount_upload_failures_total\",\"labels\":{},\"value\":2},"
      "{\"name\":\"ossmount_upload_bytes_total\",\"labels\":{},\"value\":3221225472},"
      "{\"name\":\"ossmount_upload_writer_waits_total\",\"labels\":{},\"value\":5},"
      "{\"name\":\"ossmount_request_retries_total\",\"labels\":{\"type\":\"UploadPart\"},"
      "\"value\":4},"
      "{\"name\":\"ossmount_request_retries_total\",\"labels\":{\"type\":\"GET\"},"
      "\"value\":9}],"
      "\"gauges\":[{\"name\":\"ossmount_upload_files_in_flight\",\"labels\":{},\"value\":3},"
      "{\"name\":\"ossmount_upload_parts_in_flight\",\"labels\":{},\"value\":17},"
      "{\"name\":\"ossmount_upload_buffered_bytes\",\"labels\":{},\"value\":134217728}],"
      "\"histograms\":[]}}");
  std::string view = RenderStats(doc, nullptr, 0);
  CHECK_THAT(view, Contains("Uploads        3 file(s) being written, 17 part(s) in flight, "
                            "128.0 MiB buffered"));
  CHECK_THAT(view, Contains("(3.0 GiB in all), 12 file(s) saved, 2 failed"));
  CHECK_THAT(view, Contains("5 write(s) waited for memory, 4 part upload(s) retried"));
  // A mount that never wrote says nothing about uploads.
  auto quiet = Parse(
      "{\"mountpoint\":\"/mnt/x\",\"pid\":7,\"uptime_seconds\":1,\"metrics\":{"
      "\"counters\":[],\"gauges\":[],\"histograms\":[]}}");
  CHECK(RenderStats(quiet, nullptr, 0).find("Uploads") == std::string::npos);
}

}  // namespace
}  // namespace ossmount::daemon
