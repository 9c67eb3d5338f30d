// config_test: the command-line parser is a pure function, so every form and every error
// is checked here without a daemon.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "config/mount_config.h"
#include "config/mountpoint_check.h"
#include "config/option_values.h"
#include "support/temp_dir.h"
#include "unit/config/base_args.h"

using namespace ossmount;
using namespace ossmount::config;
using namespace std::chrono_literals;

namespace {

// Parses "ossmount <args>" and REQUIREs success.
MountConfig Ok(std::vector<std::string> args) {
  auto r = ParseCommandLine(args);
  INFO((r.ok() ? std::string("ok") : r.status().message()));
  REQUIRE(r.ok());
  REQUIRE(r->command == Command::kMount);
  return r->config;
}

// Parses and REQUIREs an error whose message contains `needle`.
std::string Fails(std::vector<std::string> args, const std::string& needle) {
  std::string line;
  for (const auto& a : args) line += a + " ";
  INFO("ossmount " << line);
  auto r = ParseCommandLine(args);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kInvalidArgument);
  INFO(r.status().message());
  CHECK(r.status().message().find(needle) != std::string::npos);
  return r.status().message();
}

using ossmount::config::testing::kBase;
using ossmount::config::testing::With;

}  // namespace

TEST_CASE("ParseSize accepts bytes and binary suffixes") {
  CHECK(*ParseSize("--x", "0") == 0);
  CHECK(*ParseSize("--x", "100") == 100);
  CHECK(*ParseSize("--x", "100B") == 100);
  CHECK(*ParseSize("--x", "512K") == 512 * 1024);
  CHECK(*ParseSize("--x", "512KiB") == 512 * 1024);
  CHECK(*ParseSize("--x", "8M") == 8ull << 20);
  CHECK(*ParseSize("--x", "8mib") == 8ull << 20);
  CHECK(*ParseSize("--x", "8MiB") == 8ull << 20);
  CHECK(*ParseSize("--x", "2G") == 2ull << 30);
  CHECK(*ParseSize("--x", "2GiB") == 2ull << 30);
  CHECK(*ParseSize("--x", "3T") == 3ull << 40);  // a large NVMe cache
  CHECK(*ParseSize("--x", "3TiB") == 3ull << 40);
  CHECK(*ParseSize("--x", "16777215T") == 16777215ull << 40);
  for (const char* bad : {"", "M", "-1", "1.5M", "8PiB", "8 M", "abc", "99999999999999999999",
                          "17179869184G", "16777216T"}) {
    INFO(bad);
    auto r = ParseSize("--small-file-threshold", bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("--small-file-threshold") != std::string::npos);
  }
}

TEST_CASE("ParseSizeOrPercent: a size, or a percentage below 100 with two decimals at most") {
  auto share = [](const char* text) { return ParseSizeOrPercent("--x", text)->fraction; };
  auto bytes = [](const char* text) { return ParseSizeOrPercent("--x", text)->bytes; };
  CHECK(share("5%") == Approx(0.05));
  CHECK(share("0.5%") == Approx(0.005));
  CHECK(share("12.25%") == Approx(0.1225));
  CHECK(share("99.99%") == Approx(0.9999));
  CHECK(share("0%") == 0);
  CHECK(bytes("5%") == 0);
  CHECK(bytes("2GiB") == 2ull << 30);
  CHECK(share("2GiB") == 0);
  CHECK(bytes("0") == 0);
  for (const char* bad : {"", "%", "100%", "150%", "-5%", "5.%", ".5%", "5.123%", "5 %", "5%%",
                          "a%", "5GiB%", "1.5G", "five"}) {
    INFO(bad);
    auto r = ParseSizeOrPercent("--cache-min-free", bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("--cache-min-free") != std::string::npos);
    CHECK(r.status().message().find("percentage") != std::string::npos);
  }
}

TEST_CASE("Free space the cache leaves: 5% of its file system by default, a size or a share") {
  auto with_cache = With({"--cache", "/var/cache/ossmount"});
  MountConfig c = Ok(with_cache);
  CHECK(c.cache.min_free.bytes == 0);
  CHECK(c.cache.min_free.fraction == Approx(0.05));
  auto args = with_cache;
  args.insert(args.end(), {"--cache-min-free", "20GiB"});
  c = Ok(args);
  CHECK(c.cache.min_free.bytes == 20ull << 30);
  CHECK(c.cache.min_free.fraction == 0);
  args = with_cache;
  args.insert(args.end(), {"--cache-min-free", "0"});
  c = Ok(args);
  CHECK(c.cache.min_free.bytes == 0);
  CHECK(c.cache.min_free.fraction == 0);
  args = with_cache;
  args.insert(args.end(), {"--cache-min-free", "100%"});
  Fails(args, "--cache-min-free: '100%' is not valid");
  Fails(With({"--cache-min-free", "5%"}), "--cache-min-free needs --cache DIR");
}

TEST_CASE("ParseTtl: indefinite, seconds, zero, units") {
  CHECK_FALSE(ParseTtl("--t", "indefinite")->has_value());
  CHECK_FALSE(ParseTtl("--t", "Indefinite")->has_value());
  CHECK_FALSE(ParseTtl("--t", "inf")->has_value());
  CHECK(ParseTtl("--t", "0")->value() == 0ms);
  CHECK(ParseTtl("--t", "60")->value() == 60s);
  CHECK(ParseTtl("--t", "500ms")->value() == 500ms);
  CHECK(ParseTtl("--t", "5m")->value() == 300s);
  CHECK(ParseTtl("--t", "2h")->value() == 7200s);
  for (const char* bad : {"", "-1", "1.5", "forevers", "10d", "s", "999999999999h"}) {
    INFO(bad);
    auto r = ParseTtl("--metadata-ttl", bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("--metadata-ttl") != std::string::npos);
    CHECK(r.status().message().find("indefinite") != std::string::npos);
  }
}

TEST_CASE("ParseOctalMode bounds and syntax") {
  CHECK(*ParseOctalMode("--m", "0444") == 0444);
  CHECK(*ParseOctalMode("--m", "444") == 0444);
  CHECK(*ParseOctalMode("--m", "0o755") == 0755);
  CHECK(*ParseOctalMode("--m", "0") == 0);
  CHECK(*ParseOctalMode("--m", "0777") == 0777);
  for (const char* bad : {"", "1000", "4755", "0778", "rw", "0o", "-444", "0x1ff"}) {
    INFO(bad);
    auto r = ParseOctalMode("--file-mode", bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("--file-mode") != std::string::npos);
  }
}

TEST_CASE("ParseInteger range and syntax") {
  CHECK(*ParseInteger("--n", "5", 0, 10) == 5);
  CHECK_FALSE(ParseInteger("--n", "11", 0, 10).ok());
  CHECK_FALSE(ParseInteger("--n", "-1", 0, 10).ok());
  CHECK_FALSE(ParseInteger("--n", "5x", 0, 10).ok());
  CHECK_FALSE(ParseInteger("--n", "", 0, 10).ok());
  CHECK(ParseInteger("--retries", "x", 0, 10).status().message().find("--retries") !=
        std::string::npos);
}

TEST_CASE("ParseMountSource forms") {
  struct Case {
    const char* text;
    const char* bucket;
    const char* prefix;
    std::optional<Protocol> proto;
  };
  const Case cases[] = {
      {"my-bucket", "my-bucket", "", std::nullopt},
      {"my-bucket:", "my-bucket", "", std::nullopt},
      {"my-bucket:/", "my-bucket", "", std::nullopt},
      {"my-bucket:/imagenet", "my-bucket", "imagenet/", std::nullopt},
      {"my-bucket:imagenet/train/", "my-bucket", "imagenet/train/", std::nullopt},
      {"oss://my-bucket", "my-bucket", "", Protocol::kOss},
      {"oss://my-bucket/", "my-bucket", "", Protocol::kOss},
      {"oss://my-bucket/a/b/", "my-bucket", "a/b/", Protocol::kOss},
      {"OSS://my-bucket/a", "my-bucket", "a/", Protocol::kOss},
      {"s3://my.bucket/data", "my.bucket", "data/", Protocol::kS3},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto r = ParseMountSource(c.text);
    REQUIRE(r.ok());
    CHECK(r->bucket == c.bucket);
    CHECK(r->prefix == c.prefix);
    CHECK(r->url_protocol == c.proto);
  }
  for (const char* bad :
       {"", "ab", "My-Bucket", "bucket_1", "-bucket", "bucket-", "http://bucket/x", "oss://",
        "oss:///x", "b12:/a//b", "b12:/a/../b", "b12:./a", "s3://b12/a/./b"}) {
    INFO(bad);
    CHECK_FALSE(ParseMountSource(bad).ok());
  }
  CHECK(ParseMountSource(std::string("b12:/") + std::string(256, 'x')).status().code() ==
        ErrorCode::kInvalidArgument);
}

TEST_CASE("RegionFromEndpoint knows Alibaba Cloud endpoint shapes") {
  CHECK(RegionFromEndpoint("oss-cn-beijing.aliyuncs.com") == "cn-beijing");
  CHECK(RegionFromEndpoint("oss-cn-beijing-internal.aliyuncs.com") == "cn-beijing");
  CHECK(RegionFromEndpoint("https://oss-cn-hangzhou.aliyuncs.com/") == "cn-hangzhou");
  CHECK(RegionFromEndpoint("https://s3.oss-cn-hangzhou-internal.aliyuncs.com") == "cn-hangzhou");
  CHECK(RegionFromEndpoint("cn-beijing-internal.oss-data-acc.aliyuncs.com") == "cn-beijing");
  CHECK(RegionFromEndpoint("cn-shanghai.oss.aliyuncs.com") == "cn-shanghai");
  CHECK(RegionFromEndpoint("oss-accelerate.aliyuncs.com") == "");
  CHECK(RegionFromEndpoint("http://127.0.0.1:9000") == "");
  CHECK(RegionFromEndpoint("s3.amazonaws.com") == "");
}

TEST_CASE("ParseEndpoint keeps the scheme, drops trailing slashes, refuses paths") {
  CHECK(*ParseEndpoint("--endpoint", "oss-cn-beijing.aliyuncs.com") ==
        "oss-cn-beijing.aliyuncs.com");
  CHECK(*ParseEndpoint("--endpoint", "http://127.0.0.1:9000//") == "http://127.0.0.1:9000");
  CHECK(*ParseEndpoint("--endpoint", "https://h:1/") == "https://h:1");
  CHECK(*ParseEndpoint("--endpoint", "h:1") == "h:1");
  for (const char* bad : {"", "/", "http://", "ftp://h", "h/x", "http://h/x", "h?x", "u@h"}) {
    INFO(bad);
    auto r = ParseEndpoint("--data-endpoint", bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().rfind("--data-endpoint: ", 0) == 0);
  }
}

TEST_CASE("Defaults of a minimal command line") {
  MountConfig c = Ok({"bucket1", "/mnt/x", "--endpoint", "oss-cn-beijing.aliyuncs.com"});
  CHECK(c.client.protocol == Protocol::kOss);
  CHECK(c.client.bucket == "bucket1");
  CHECK(c.client.endpoint == "oss-cn-beijing.aliyuncs.com");
  CHECK(c.client.region == "cn-beijing");
  CHECK(c.client.oss_signature == OssSignatureVersion::kV4);
  CHECK(c.client.data_endpoint.empty());
  CHECK_FALSE(c.client.path_style);
  CHECK(c.client.verify_tls);
  CHECK(c.client.credentials == nullptr);
  CHECK(c.fs.prefix.empty());
  REQUIRE(c.fs.metadata_ttl.has_value());
  CHECK(*c.fs.metadata_ttl == 60s);
  CHECK(c.fs.negative_ttl == 5s);
  CHECK(c.fs.small_file_threshold == 8ull << 20);
  CHECK(c.fs.list_ahead == 64);
  CHECK(c.fs.file_mode == 0444);
  CHECK(c.fs.dir_mode == 0555);
  CHECK(c.fs.uid == geteuid());
  CHECK(c.fs.gid == getegid());
  CHECK(c.daemon.mountpoint == "/mnt/x");
  CHECK_FALSE(c.daemon.foreground);
  CHECK_FALSE(c.daemon.allow_other);
  CHECK(c.daemon.log_level == "info");
  CHECK(c.credential_sources.bucket == "bucket1");
  CHECK(c.credential_sources.protocol == Protocol::kOss);
  CHECK_FALSE(c.credential_sources.anonymous);
  CHECK(c.credential_sources.ecs_metadata_url == "http://100.100.100.200");
  CHECK(c.warnings.empty());
}

TEST_CASE("The design's example command line") {
  MountConfig c = Ok({"my-bucket:/imagenet", "/mnt/dataset", "--endpoint",
                      "oss-cn-beijing-internal.aliyuncs.com", "--data-endpoint",
                      "cn-beijing-h-internal.oss-data-acc.aliyuncs.com", "--region", "cn-beijing",
                      "--metadata-ttl", "indefinite"});
  CHECK(c.client.bucket == "my-bucket");
  CHECK(c.fs.prefix == "imagenet/");
  CHECK(c.client.region == "cn-beijing");
  CHECK(c.client.data_endpoint == "cn-beijing-h-internal.oss-data-acc.aliyuncs.com");
  CHECK(c.client.data_signing_region.empty());
  CHECK_FALSE(c.fs.metadata_ttl.has_value());
}

TEST_CASE("Every option lands in the config") {
  MountConfig c = Ok({"s3://data-bucket/train/",
                      "mnt",
                      "--endpoint",
                      "http://127.0.0.1:4568/",
                      "--data-endpoint",
                      "http://127.0.0.1:4569",
                      "--region",
                      "eu-west-1",
                      "--data-region",
                      "eu-west-2",
                      "--path-style",
                      "--credentials-file",
                      "/etc/creds.json",
                      "--passwd-file",
                      "/etc/pw",
                      "--ram-role",
                      "auto",
                      "--ecs-metadata-url",
                      "http://127.0.0.1:1",
                      "--metadata-ttl",
                      "0",
                      "--negative-metadata-ttl",
                      "0",
                      "--small-file-threshold",
                      "1MiB",
                      "--list-ahead",
                      "8",
                      "--uid",
                      "1000",
                      "--gid",
                      "1001",
                      "--file-mode",
                      "0440",
                      "--dir-mode",
                      "750",
                      "--allow-other",
                      "--nonempty",
                      "-f",
                      "--log-file",
                      "/tmp/l.log",
                      "--log-level",
                      "warn",
                      "--ca-bundle",
                      "/etc/ca.pem",
                      "--max-in-flight",
                      "64",
                      "--connect-timeout",
                      "2500ms",
                      "--retries",
                      "2",
                      "--io-threads",
                      "3"});
  CHECK(c.client.protocol == Protocol::kS3);
  CHECK(c.client.bucket == "data-bucket");
  CHECK(c.fs.prefix == "train/");
  CHECK(c.client.endpoint == "http://127.0.0.1:4568");
  CHECK(c.client.data_endpoint == "http://127.0.0.1:4569");
  CHECK(c.client.region == "eu-west-1");
  CHECK(c.client.data_signing_region == "eu-west-2");
  CHECK(c.client.path_style);
  CHECK(c.client.ca_bundle == "/etc/ca.pem");
  CHECK(c.client.max_in_flight == 64);
  CHECK(c.client.timeouts.connect == 2500ms);
  CHECK(c.client.retry.max_attempts == 3);
  CHECK(c.credential_sources.protocol == Protocol::kS3);
  CHECK(c.credential_sources.bucket == "data-bucket");
  CHECK(c.credential_sources.credentials_file == "/etc/creds.json");
  CHECK(c.credential_sources.passwd_file == "/etc/pw");
  CHECK(c.credential_sources.ram_role == "auto");
  CHECK(c.credential_sources.ecs_metadata_url == "http://127.0.0.1:1");
  REQUIRE(c.fs.metadata_ttl.has_value());
  CHECK(*c.fs.metadata_ttl == 0ms);
  CHECK(c.fs.negative_ttl == 0ms);
  CHECK(c.fs.small_file_threshold == 1ull << 20);
  CHECK(c.fs.list_ahead == 8);
  CHECK(c.fs.uid == 1000);
  CHECK(c.fs.gid == 1001);
  CHECK(c.fs.file_mode == 0440);
  CHECK(c.fs.dir_mode == 0750);
  CHECK(c.daemon.allow_other);
  CHECK(c.daemon.nonempty);
  CHECK(c.daemon.foreground);
  CHECK(c.daemon.log_file == "/tmp/l.log");
  CHECK(c.daemon.log_level == "warn");
  CHECK(c.daemon.io_threads == 3);
  CHECK(c.daemon.mountpoint == "mnt");
}

TEST_CASE("The default of --io-threads is the CPUs this process may use, 2 to 4") {
  cpu_set_t saved;
  REQUIRE(sched_getaffinity(0, sizeof saved, &saved) == 0);
  // One CPU allowed (the calling thread's mask is what the default reads): still 2, so one
  // slow disk write does not hold up every completion.
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &saved)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
  const int with_one = Ok(With({})).daemon.io_threads;
  REQUIRE(sched_setaffinity(0, sizeof saved, &saved) == 0);
  CHECK(with_one == 2);
  const int all = CPU_COUNT(&saved);
  CHECK(Ok(With({})).daemon.io_threads == std::clamp(all, 2, 4));
  CHECK(Ok(With({"--io-threads", "7"})).daemon.io_threads == 7);
}

TEST_CASE("fstab -o form maps to the same config as flags") {
  MountConfig flags =
      Ok(With({"--metadata-ttl", "indefinite", "--allow-other", "--file-mode", "0440",
               "--small-file-threshold", "2MiB", "--path-style", "--log-level", "debug"}));
  for (std::vector<std::string> form :
       {With({"-o",
              "metadata_ttl=indefinite,allow_other,file_mode=0440,small_file_threshold=2MiB,"
              "path_style,log_level=debug"}),
        With({"-o", "metadata-ttl=indefinite,allow-other", "-o",
              "file-mode=0440,small_file_threshold=2MiB,path_style,log_level=debug"}),
        With({"-ometadata_ttl=indefinite,allow_other,file_mode=0440,small_file_threshold=2MiB,"
              "path_style,log_level=debug"}),
        std::vector<std::string>{"-o",
                                 "rw,nodev,nosuid,_netdev,noauto,x-systemd.automount,"
                                 "x-systemd.requires=network-online.target,defaults,user,"
                                 "endpoint=http://127.0.0.1:9000,metadata_ttl=indefinite,"
                                 "allow_other,file_mode=0440,small_file_threshold=2MiB,"
                                 "path_style,log_level=debug",
                                 "bucket1", "/mnt/x"}}) {
    MountConfig c = Ok(form);
    CHECK(c.client.endpoint == flags.client.endpoint);
    CHECK(c.client.bucket == "bucket1");
    CHECK(c.daemon.mountpoint == "/mnt/x");
    CHECK(c.fs.metadata_ttl == flags.fs.metadata_ttl);
    CHECK(c.daemon.allow_other == flags.daemon.allow_other);
    CHECK(c.fs.file_mode == flags.fs.file_mode);
    CHECK(c.fs.small_file_threshold == flags.fs.small_file_threshold);
    CHECK(c.client.path_style == flags.client.path_style);
    CHECK(c.daemon.log_level == flags.daemon.log_level);
  }
}

TEST_CASE("fstab 'rw' is accepted with a warning, 'ro' silently") {
  MountConfig rw = Ok(With({"-o", "rw"}));
  REQUIRE(rw.warnings.size() == 1);
  CHECK(rw.warnings[0].find("read-only") != std::string::npos);
  CHECK(Ok(With({"-o", "ro,noatime,nofail,exec,suid,dev,auto,nouser,atime,noexec"}))
            .warnings.empty());
}

TEST_CASE("fstab -o errors name the option") {
  Fails(With({"-o", "bogus_option"}), "-o bogus_option: unknown option");
  Fails(With({"-o", "metadata_ttl"}), "-o metadata_ttl: needs a value");
  Fails(With({"-o", "allow_other=1"}), "-o allow_other: takes no value");
  Fails(With({"-o"}), "-o: missing the option list");
  Fails(With({"-o", "help"}), "-o help: unknown option");
  Fails(With({"-o", "metadata_ttl=abc"}), "--metadata-ttl");
  Fails(With({"-o", "access_key_secret=abc"}), "unknown option");
}

TEST_CASE("Help and version") {
  for (const char* flag : {"--help", "-h"}) {
    auto r = ParseCommandLine({flag});
    REQUIRE(r.ok());
    CHECK(r->command == Command::kHelp);
    CHECK(r->text.find("--metadata-ttl") != std::string::npos);
    CHECK(r->text.find("BUCKET[:/PREFIX]") != std::string::npos);
  }
  // Help wins even when the rest of the line is wrong.
  auto h = ParseCommandLine({"bucket1", "/mnt", "--help", "--metadata-ttl", "bad"});
  REQUIRE(h.ok());
  CHECK(h->command == Command::kHelp);
  auto v = ParseCommandLine({"--version"});
  REQUIRE(v.ok());
  CHECK(v->command == Command::kVersion);
  CHECK(v->text == std::string("ossmount ") + OSSMOUNT_VERSION);
}

TEST_CASE("--help lists every option once, under its group's heading, groups in order") {
  const std::string help = UsageText();
  std::vector<size_t> headings;
  for (const char* h : {"\nConnection:", "\nCredentials (",
                        "\nFilesystem:", "\nData path:", "\nMount and daemon:", "\nForms:"}) {
    INFO(h);
    REQUIRE(help.find(h) != std::string::npos);
    headings.push_back(help.find(h));
  }
  CHECK(std::is_sorted(headings.begin(), headings.end()));
  // Where the option's line starts ("  --uid TEXT", "  -f,--foreground"); npos if absent.
  auto at = [&](const std::string& option) {
    size_t first = std::string::npos;
    int lines = 0;
    for (const std::string& lead : {std::string("  "), std::string(",")}) {
      for (size_t p = help.find(lead + option + " "); p != std::string::npos;
           p = help.find(lead + option + " ", p + 1)) {
        first = std::min(first, p);
        ++lines;
      }
    }
    CHECK(lines == 1);
    return first;
  };
  for (const OptionInfo& o : CommandLineOptions()) {
    INFO(o.name);
    CHECK(at(o.positional ? o.name : "--" + o.name) != std::string::npos);
  }
  auto under = [&](const std::string& option, size_t heading) {
    INFO(option);
    CHECK(at(option) > headings[heading]);
    CHECK(at(option) < headings[heading + 1]);
  };
  under("--max-in-flight", 0);
  under("--anonymous", 1);
  under("--manifest", 2);
  under("--prefetch-on-list", 3);
  under("--no-passthrough", 3);
  under("--fuse-io-uring", 3);
  under("--allow-other", 4);
  under("--io-threads", 4);
  CHECK(at("--metrics-address") < at("--io-threads"));
  CHECK(at("--cache-min-free") < at("--warmup-concurrency"));
  CHECK(at("--prefetch-on-list") < at("--no-passthrough"));
}

TEST_CASE("Protocol, endpoint and region rules") {
  // s3:// selects S3, region defaults to us-east-1.
  MountConfig s3 = Ok({"s3://bucket1", "/m", "--endpoint", "http://127.0.0.1:4568"});
  CHECK(s3.client.protocol == Protocol::kS3);
  CHECK(s3.client.region == "us-east-1");
  CHECK(Ok(With({"--protocol", "s3"})).client.protocol == Protocol::kS3);
  CHECK(Ok({"oss://bucket1", "/m", "--endpoint", "h", "--protocol", "oss"}).client.protocol ==
        Protocol::kOss);
  // No endpoint: derived from the region.
  CHECK(Ok({"bucket1", "/m", "--region", "cn-hangzhou"}).client.endpoint ==
        "https://oss-cn-hangzhou.aliyuncs.com");
  CHECK(Ok({"s3://bucket1", "/m", "--region", "eu-west-1"}).client.endpoint ==
        "https://s3.eu-west-1.amazonaws.com");
  // Signature: V1 when there is no region, V4 when there is, explicit choice honoured.
  CHECK(Ok(kBase).client.oss_signature == OssSignatureVersion::kV1);
  CHECK(Ok(With({"--region", "cn-beijing"})).client.oss_signature == OssSignatureVersion::kV4);
  CHECK(Ok(With({"--region", "cn-beijing", "--signature-version", "v1"})).client.oss_signature ==
        OssSignatureVersion::kV1);
  CHECK(Ok({"bucket1", "/m", "--endpoint", "oss-cn-beijing.aliyuncs.com", "--signature-version",
            "v4"})
            .client.oss_signature == OssSignatureVersion::kV4);
}

TEST_CASE("Contradictions and bad values are errors naming the option") {
  Fails({"s3://bucket1", "/m", "--endpoint", "h", "--protocol", "oss"}, "--protocol oss");
  Fails({"oss://bucket1", "/m", "--endpoint", "h", "--protocol", "s3"}, "--protocol s3");
  Fails(With({"--protocol", "gcs"}), "--protocol: 'gcs'");
  Fails(With({"--allow-other", "--allow-root"}), "--allow-other contradicts --allow-root");
  Fails(With({"--metadata-ttl", "soon"}), "--metadata-ttl: 'soon'");
  Fails(With({"--metadata-ttl", "-5"}), "--metadata-ttl");
  Fails(With({"--negative-metadata-ttl", "x"}), "--negative-metadata-ttl");
  Fails(With({"--list-ahead", "-1"}), "--list-ahead");
  Fails(With({"--list-ahead", "5000"}), "--list-ahead");
  Fails(With({"--max-in-flight", "32", "--list-ahead", "64"}), "--list-ahead 64 is more than");
  CHECK(Ok(With({"--max-in-flight", "32"})).fs.list_ahead == 32);
  CHECK(Ok(With({"-o", "list_ahead=0"})).fs.list_ahead == 0);
  CHECK(Ok(With({})).fs.max_list_pages == 100000);
  CHECK(Ok(With({"-o", "max_list_pages=50"})).fs.max_list_pages == 50);
  Fails(With({"--max-list-pages", "0"}), "--max-list-pages");
  Fails(With({"--file-mode", "01777"}), "--file-mode");
  Fails(With({"--dir-mode", "0800"}), "--dir-mode");
  Fails(With({"--small-file-threshold", "8XB"}), "--small-file-threshold");
  Fails(With({"--uid", "-1"}), "--uid");
  Fails(With({"--gid", "abc"}), "--gid");
  Fails(With({"--max-in-flight", "0"}), "--max-in-flight");
  Fails(With({"--connect-timeout", "0"}), "--connect-timeout");
  Fails(With({"--connect-timeout", "fast"}), "--connect-timeout");
  Fails(With({"--retries", "1000"}), "--retries");
  Fails(With({"--io-threads", "0"}), "--io-threads");
  Fails(With({"--log-level", "verbose"}), "--log-level: 'verbose'");
  Fails(With({"--debug", "--log-level", "error"}), "--log-level error contradicts --debug");
  Fails({"s3://bucket1", "/m", "--endpoint", "h", "--signature-version", "v4"},
        "--signature-version applies to --protocol oss only");
  Fails(With({"--signature-version", "v2"}), "--signature-version: 'v2'");
  Fails(With({"--signature-version", "v4"}), "--signature-version v4 needs --region");
  Fails(With({"--data-region", "cn-beijing"}), "--data-region needs --data-endpoint");
  Fails(With({"--anonymous", "--credentials-file", "/x"}),
        "--credentials-file contradicts --anonymous");
  Fails(With({"--anonymous", "--passwd-file", "/x"}), "--passwd-file contradicts --anonymous");
  Fails(With({"--anonymous", "--ram-role", "r"}), "--ram-role contradicts --anonymous");
  Fails(With({"--ecs-metadata-url", "http://x"}), "--ecs-metadata-url needs --ram-role");
  Fails(With({"--credentials-file", ""}), "--credentials-file: is empty");
  Fails(With({"--data-endpoint", "ftp://x"}), "--data-endpoint");
  Fails({"bucket1", "/m", "--endpoint", "ftp://host"}, "--endpoint: 'ftp://host' has scheme");
  Fails({"bucket1", "/m", "--endpoint", "http://"}, "--endpoint");
  Fails({"bucket1", "/m"}, "--endpoint is required");
  Fails({"bucket1"}, "missing arguments");
  Fails({}, "missing arguments");
  Fails(With({"--bogus"}), "--bogus");
  Fails(With({"extra-positional"}), "extra-positional");
  Fails(With({"--endpoint"}), "--endpoint");
  Fails({"Bad_Bucket", "/m", "--endpoint", "h"}, "Bad_Bucket");
}

TEST_CASE("Secrets are not accepted on the command line") {
  Fails(With({"--access-key-secret", "s3cr3t"}), "--access-key-secret");
  Fails(With({"--access-key-id", "id"}), "--access-key-id");
  Fails(With({"-o", "access_key_id=x"}), "unknown option");
}

TEST_CASE("Debug and no-verify-tls flags") {
  MountConfig d = Ok(With({"--debug"}));
  CHECK(d.daemon.fuse_debug);
  CHECK(d.daemon.log_level == "debug");
  CHECK(Ok(With({"-d", "--log-level", "trace"})).daemon.log_level == "trace");
  MountConfig t = Ok(With({"--no-verify-tls"}));
  CHECK_FALSE(t.client.verify_tls);
  REQUIRE(t.warnings.size() == 1);
  CHECK(t.warnings[0].find("NOT verified") != std::string::npos);
}

TEST_CASE("Kernel readahead defaults to 1MiB with an indefinite TTL within the memory budget") {
  const std::vector<std::string> ds = {"--metadata-ttl", "indefinite"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = ds;
    args.insert(args.end(), extra.begin(), extra.end());
    return With(args);
  };
  CHECK(Ok(with({})).fs.readahead.kernel_readahead == (1ull << 20));
  // By default at most a 64th of --max-memory (in whole MiB); a value given explicitly is kept.
  CHECK(Ok(with({"--max-memory", "64MiB"})).fs.readahead.kernel_readahead == (1ull << 20));
  CHECK(Ok(with({"--max-memory", "32MiB"})).fs.readahead.kernel_readahead == 0);
  CHECK(Ok(with({"--max-memory", "256MiB", "--kernel-readahead", "16MiB"}))
            .fs.readahead.kernel_readahead == (16ull << 20));
  // A finite TTL (objects may change under the kernel's cached size): 0 unless given.
  CHECK(Ok(With({})).fs.readahead.kernel_readahead == 0);
  CHECK(Ok(With({"--kernel-readahead", "8MiB"})).fs.readahead.kernel_readahead == (8ull << 20));
  CHECK(Ok(with({"--kernel-readahead", "0"})).fs.readahead.kernel_readahead == 0);
  CHECK(Ok(With({"-o", "kernel_readahead=4MiB"})).fs.readahead.kernel_readahead == (4ull << 20));
  Fails(With({"--kernel-readahead", "2GiB"}), "--kernel-readahead: at most 1GiB");
  Fails(With({"--kernel-readahead", "lots"}), "--kernel-readahead");
}

TEST_CASE("Anonymous flag sets the credential source") {
  CHECK(Ok(With({"--anonymous"})).credential_sources.anonymous);
}

namespace {
using ::ossmount::testing::TempDir;
}  // namespace

TEST_CASE("CheckMountPoint explains what to fix") {
  TempDir dir;
  CHECK(CheckMountPoint(dir.path(), false).ok());
  auto missing = CheckMountPoint((std::filesystem::path(dir.path()) / "nope").string(), false);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.message().find("does not exist") != std::string::npos);
  CHECK(missing.message().find("mkdir -p") != std::string::npos);
  std::ofstream(std::filesystem::path(dir.path()) / "file") << "x";
  auto notdir = CheckMountPoint((std::filesystem::path(dir.path()) / "file").string(), false);
  REQUIRE_FALSE(notdir.ok());
  CHECK(notdir.message().find("is not a directory") != std::string::npos);
  auto nonempty = CheckMountPoint(dir.path(), false);
  REQUIRE_FALSE(nonempty.ok());
  CHECK(nonempty.message().find("not empty") != std::string::npos);
  CHECK(nonempty.message().find("--nonempty") != std::string::npos);
  CHECK(CheckMountPoint(dir.path(), true).ok());
}

TEST_CASE("AbsoluteMountPoint") {
  CHECK(*AbsoluteMountPoint("/mnt/x/") == "/mnt/x");
  CHECK(*AbsoluteMountPoint("/") == "/");
  char cwd[4096];
  REQUIRE(getcwd(cwd, sizeof cwd) != nullptr);
  CHECK(*AbsoluteMountPoint("mnt") == std::string(cwd) + "/mnt");
  CHECK_FALSE(AbsoluteMountPoint("").ok());
}

TEST_CASE("Dataset prefetch options: defaults, values, and errors naming the option") {
  MountConfig d = Ok(With({}));
  CHECK(d.fs.dataset_prefetch.concurrency == 128);
  CHECK(d.fs.dataset_prefetch.hint_concurrency == 256);
  CHECK(d.fs.dataset_prefetch.hint_ahead_files == 2048);
  CHECK(d.fs.dataset_prefetch.hint_ahead_bytes == (512ull << 20));
  CHECK_FALSE(d.fs.prefetch_on_list);

  MountConfig c =
      Ok(With({"--warmup-concurrency", "32", "--hint-concurrency", "48", "--hint-ahead-files",
               "1000", "--hint-ahead-bytes", "2GiB", "--prefetch-on-list"}));
  CHECK(c.fs.dataset_prefetch.concurrency == 32);
  CHECK(c.fs.dataset_prefetch.hint_concurrency == 48);
  CHECK(c.fs.dataset_prefetch.hint_ahead_files == 1000);
  CHECK(c.fs.dataset_prefetch.hint_ahead_bytes == (2ull << 30));
  CHECK(c.fs.prefetch_on_list);
  // The default follows a lower request cap; an explicit value above it is an error.
  MountConfig capped = Ok(With({"--max-in-flight", "64"}));
  CHECK(capped.fs.dataset_prefetch.concurrency == 64);
  CHECK(capped.fs.dataset_prefetch.hint_concurrency == 64);
  Fails(With({"--max-in-flight", "64", "--warmup-concurrency", "100"}), "--warmup-concurrency");
  Fails(With({"--max-in-flight", "64", "--hint-concurrency", "100"}), "--hint-concurrency");
  Fails(With({"--warmup-concurrency", "0"}), "--warmup-concurrency");
  Fails(With({"--hint-concurrency", "5000"}), "--hint-concurrency");
  Fails(With({"--hint-ahead-files", "0"}), "--hint-ahead-files");
  Fails(With({"--hint-ahead-bytes", "1KiB"}), "--hint-ahead-bytes");
  Fails(With({"--hint-ahead-bytes", "lots"}), "--hint-ahead-bytes");
  // fstab form
  CHECK(Ok(With({"-o", "prefetch_on_list,hint_ahead_files=7"})).fs.prefetch_on_list);
}

TEST_CASE("Observability options for log rotation and the audit log and metrics address") {
  auto d = Ok(kBase).daemon;
  CHECK(d.log_max_size == (100ull << 20));
  CHECK(d.log_max_files == 5);
  CHECK(d.audit_log.empty());
  CHECK(d.metrics_host.empty());

  d = Ok(With({"--log-max-size", "1MiB", "--log-max-files", "3", "--audit-log", "/var/log/a.log",
               "--metrics-address", "127.0.0.1:9464"}))
          .daemon;
  CHECK(d.log_max_size == (1ull << 20));
  CHECK(d.log_max_files == 3);
  CHECK(d.audit_log == "/var/log/a.log");
  CHECK(d.metrics_host == "127.0.0.1");
  CHECK(d.metrics_port == 9464);
  CHECK(Ok(With({"--log-max-size", "0"})).daemon.log_max_size == 0);
  CHECK(Ok(With({"--metrics-address", "[::1]:80"})).daemon.metrics_host == "::1");
  CHECK(Ok(With({"-o", "metrics_address=127.0.0.1:1,audit_log=/a"})).daemon.audit_log == "/a");

  Fails(With({"--log-max-size", "100"}), "--log-max-size");
  Fails(With({"--log-max-files", "0"}), "--log-max-files");
  Fails(With({"--audit-log", ""}), "--audit-log");
  Fails(With({"--metrics-address", "9464"}), "--metrics-address: '9464' is not HOST:PORT");
  Fails(With({"--metrics-address", "localhost:9464"}), "is not an IP address");
  Fails(With({"--metrics-address", "127.0.0.1:99999"}), "--metrics-address");
}

TEST_CASE("The manifest option lands in the config, also as -o manifest=FILE") {
  CHECK(Ok(With({})).manifest.empty());
  CHECK(Ok(With({"--manifest", "/data/train.tsv"})).manifest == "/data/train.tsv");
  CHECK(Ok(With({"-o", "manifest=rel/m.tsv"})).manifest == "rel/m.tsv");
  Fails(With({"--manifest", ""}), "--manifest: give the path of a manifest file");
  CHECK(Ok(With({"--manifest", "/data/train.tsv"})).manifest_key.empty());  // a local file
}

TEST_CASE("A manifest in the mounted bucket is given as oss://BUCKET/KEY or s3://BUCKET/KEY") {
  MountConfig in_bucket = Ok(With({"--manifest", "oss://bucket1/manifests/train.tsv"}));
  CHECK(in_bucket.manifest == "oss://bucket1/manifests/train.tsv");
  CHECK(in_bucket.manifest_key == "manifests/train.tsv");
  CHECK(Ok(With({"--manifest", "S3://bucket1/m.tsv"})).manifest_key == "m.tsv");
  CHECK(Ok(With({"-o", "manifest=oss://bucket1/a b/m.tsv"})).manifest_key == "a b/m.tsv");
  Fails(With({"--manifest", "oss://other/m.tsv"}),
        "the manifest must be an object of the mounted bucket 'bucket1'");
  Fails(With({"--manifest", "oss://bucket1/"}), "oss://BUCKET/KEY (or s3://)");
  Fails(With({"--manifest", "oss://bucket1"}), "oss://BUCKET/KEY (or s3://)");
  Fails(With({"--manifest", "s3://bucket1/dir/"}), "KEY being the full key of one object");
  Fails(With({"--manifest", "oss:///m.tsv"}), "oss://BUCKET/KEY");
  Fails(With({"--manifest", "oss://bucket1/" + std::string(1024, 'k')}), "longer than 1023");
}

TEST_CASE("The FUSE io_uring option: auto by default, on or off, anything else an error") {
  CHECK(Ok(With({})).daemon.fuse_io_uring == "auto");
  CHECK(Ok(With({"--fuse-io-uring", "on", "--no-supervise"})).daemon.fuse_io_uring == "on");
  CHECK(Ok(With({"--fuse-io-uring", "off"})).daemon.fuse_io_uring == "off");
  CHECK(Ok(With({"-o", "fuse_io_uring=on", "--no-supervise"})).daemon.fuse_io_uring == "on");
  Fails(With({"--fuse-io-uring", "yes"}),
        "--fuse-io-uring: 'yes' is not valid; expected auto, on or off");
  // A supervised mount (the default) keeps to /dev/fuse, so insisting on rings is an error.
  Fails(With({"--fuse-io-uring", "on"}), "add --no-supervise to use FUSE over io_uring");
}

TEST_CASE("Supervision: on by default, off with --no-supervise") {
  CHECK(Ok(With({})).daemon.supervise);
  CHECK_FALSE(Ok(With({"--no-supervise"})).daemon.supervise);
  CHECK_FALSE(Ok(With({"-o", "no_supervise"})).daemon.supervise);
  CHECK_FALSE(Ok(With({})).daemon.take_over);
  CHECK(Ok(With({"--take-over"})).daemon.take_over);
  Fails(With({"--take-over", "--no-supervise"}),
        "--take-over: a mount is taken over by its supervisor");
}

TEST_CASE("The control memory: 256MiB by default, a size of at least 1MiB") {
  CHECK(Ok(With({})).fs.dataset_prefetch.control_memory == (256ull << 20));
  CHECK(Ok(With({"--control-memory", "1GiB"})).fs.dataset_prefetch.control_memory == (1ull << 30));
  CHECK(Ok(With({"-o", "control_memory=64MiB"})).fs.dataset_prefetch.control_memory ==
        (64ull << 20));
  Fails(With({"--control-memory", "512KiB"}), "--control-memory: at least 1MiB");
  Fails(With({"--control-memory", "lots"}), "--control-memory");
}

TEST_CASE("Writing options: staging, its budget and the append interval") {
  using ossmount::config::testing::With;
  MountConfig d = Ok(With({"--allow-writes"}));
  CHECK(d.fs.writes.max_staging_size == 16ull << 30);
  CHECK_FALSE(d.fs.writes.staging_dir.empty());  // beside the upload journal
  REQUIRE(d.fs.writes.append_interval.has_value());
  CHECK(*d.fs.writes.append_interval == 1s);
  CHECK(d.fs.writes.max_stream_copy == 512ull << 20);
  CHECK(Ok(With({"--allow-writes", "--max-stream-copy", "0"})).fs.writes.max_stream_copy == 0);
  MountConfig c = Ok(With({"--allow-writes", "--staging-dir", "/var/tmp/st", "--max-staging-size",
                           "2GiB", "--append-interval", "250ms"}));
  CHECK(c.fs.writes.staging_dir == "/var/tmp/st");
  CHECK(c.fs.writes.max_staging_size == 2ull << 30);
  CHECK(*c.fs.writes.append_interval == 250ms);
  MountConfig none = Ok(With({"--allow-writes", "--staging-dir", "", "--append-interval", "off"}));
  CHECK(none.fs.writes.staging_dir.empty());
  CHECK_FALSE(none.fs.writes.append_interval.has_value());
  Fails(With({"--allow-writes", "--append-interval", "1ms"}), "--append-interval");
  Fails(With({"--allow-writes", "--max-staging-size", "lots"}), "--max-staging-size");
  Fails(With({"--staging-dir", "/tmp/x"}), "add --allow-writes");
  Fails(With({"--append-interval", "2s"}), "add --allow-writes");
}
