// config_file_test: the layers beside the command line (environment, JSON config file, the
// OSS Connector's config.json), their precedence, and that their values meet the same
// validation as the command line, with errors that say where a value came from.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "config/config_file.h"
#include "config/mount_config.h"
#include "config/option_layers.h"
#include "support/temp_dir.h"

using namespace ossmount;
using namespace ossmount::config;
using namespace std::chrono_literals;

namespace {

// A scratch directory removed at scope exit.
using ::ossmount::testing::TempDir;

// A fake environment for ParseSources.
struct FakeEnv {
  std::map<std::string, std::string> vars;
  ParseSources Sources(std::string default_path = "") const {
    ParseSources s;
    s.getenv = [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
    s.default_config_path = std::move(default_path);
    return s;
  }
};

MountConfig Ok(const std::vector<std::string>& args, const ParseSources& sources) {
  auto r = ParseCommandLine(args, sources);
  INFO((r.ok() ? std::string("ok") : r.status().message()));
  REQUIRE(r.ok());
  REQUIRE(r->command == Command::kMount);
  return r->config;
}

std::string Fails(const std::vector<std::string>& args, const ParseSources& sources) {
  auto r = ParseCommandLine(args, sources);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kInvalidArgument);
  return r.status().message();
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

const std::vector<std::string> kBase = {"bucket1", "/mnt/x", "--endpoint", "http://127.0.0.1:9"};

std::vector<std::string> With(std::vector<std::string> extra) {
  std::vector<std::string> v = kBase;
  v.insert(v.end(), extra.begin(), extra.end());
  return v;
}

}  // namespace

TEST_CASE("Environment variable names: OSSMOUNT_ plus the option in upper case") {
  CHECK(EnvironmentVariableFor("metadata-ttl") == "OSSMOUNT_METADATA_TTL");
  CHECK(EnvironmentVariableFor("allow-other") == "OSSMOUNT_ALLOW_OTHER");
  CHECK(OptionNameFromKey("metadata_ttl") == "metadata-ttl");
}

TEST_CASE("The option table lists every named option with its kind, and the positionals") {
  auto table = CommandLineOptions();
  std::map<std::string, OptionInfo> by_name;
  for (const auto& o : table) by_name[o.name] = o;
  REQUIRE(by_name.count("metadata-ttl"));
  CHECK_FALSE(by_name["metadata-ttl"].flag);
  REQUIRE(by_name.count("allow-other"));
  CHECK(by_name["allow-other"].flag);
  REQUIRE(by_name.count("source"));
  CHECK(by_name["source"].positional);
  REQUIRE(by_name.count("mountpoint"));
  CHECK(by_name["mountpoint"].positional);
  CHECK_FALSE(by_name.count("help"));
  CHECK_FALSE(by_name.count("version"));
  CHECK_FALSE(by_name.count("config"));
}

TEST_CASE("Every option is set by its environment variable and by a config-file key") {
  // Generic over the table: a value option gets a marker text, a flag gets true; the layer
  // must produce exactly one setting per option, under the option's own name.
  auto table = CommandLineOptions();
  FakeEnv env;
  std::string json = "{";
  for (const auto& o : table) {
    std::string key = o.name;
    std::replace(key.begin(), key.end(), '-', '_');
    if (json.size() > 1) json += ",";
    json += "\"" + key + "\": " + (o.flag ? "true" : "\"v-" + o.name + "\"");
    if (!o.positional) env.vars[EnvironmentVariableFor(o.name)] = o.flag ? "yes" : "v-" + o.name;
  }
  json += "}";
  auto file = ParseConfigText(json, "/etc/x.json", table);
  REQUIRE(file.ok());
  auto from_env = SettingsFromEnvironment(table, env.Sources().getenv);
  REQUIRE(from_env.ok());
  size_t named = 0;
  for (const auto& o : table) {
    if (!o.positional) ++named;
    auto in = [&](const std::vector<OptionSetting>& v) {
      return std::count_if(v.begin(), v.end(), [&](const OptionSetting& s) {
        return s.name == o.name && (o.flag ? s.flag_value : s.value == "v-" + o.name);
      });
    };
    INFO(o.name);
    CHECK(in(file->settings) == 1);
    CHECK(in(*from_env) == (o.positional ? 0 : 1));
  }
  CHECK(from_env->size() == named);
  CHECK(file->settings.size() == table.size());
}

TEST_CASE("Config file values reach the validated config, with '_' or '-' keys") {
  TempDir dir;
  std::string path = dir.Write("c.json", R"({
    "source": "data-bucket:/imagenet", "mountpoint": "/mnt/ds",
    "endpoint": "http://127.0.0.1:9000", "metadata-ttl": "indefinite",
    "negative_metadata_ttl": 7, "max_memory": "64MiB", "prefetch_concurrency": 16,
    "allow_other": true, "path_style": false, "request_timeout": "30s"
  })");
  FakeEnv env;
  MountConfig c = Ok({"--config", path}, env.Sources());
  CHECK(c.client.bucket == "data-bucket");
  CHECK(c.fs.prefix == "imagenet/");
  CHECK(c.daemon.mountpoint == "/mnt/ds");
  CHECK(c.client.endpoint == "http://127.0.0.1:9000");
  CHECK_FALSE(c.fs.metadata_ttl.has_value());
  CHECK(c.fs.negative_ttl == 7s);
  CHECK(c.fs.max_memory == (64ull << 20));
  CHECK(c.fs.readahead.global_concurrency == 16);
  CHECK(c.daemon.allow_other);
  CHECK_FALSE(c.client.path_style);
  CHECK(c.client.timeouts.request == 30s);
}

TEST_CASE("Precedence: command line over environment over file over defaults") {
  TempDir dir;
  std::string path = dir.Write("c.json", R"({"metadata_ttl": "300", "max_memory": "32MiB",
      "prefetch_concurrency": 8, "io_threads": 3, "allow_other": true})");
  FakeEnv env;
  env.vars["OSSMOUNT_METADATA_TTL"] = "200";
  env.vars["OSSMOUNT_MAX_MEMORY"] = "48MiB";
  env.vars["OSSMOUNT_ALLOW_OTHER"] = "false";  // an explicit "off" beats the file's true
  MountConfig c = Ok(With({"--config", path, "--metadata-ttl", "100"}), env.Sources());
  CHECK(c.fs.metadata_ttl.value() == 100s);          // command line
  CHECK(c.fs.max_memory == (48ull << 20));           // environment
  CHECK(c.fs.readahead.global_concurrency == 8);     // file
  CHECK(c.daemon.io_threads == 3);                   // file
  CHECK_FALSE(c.daemon.allow_other);                 // environment's false
  CHECK(c.fs.small_file_threshold == (8ull << 20));  // default

  // -o lists (fstab) are the command line too.
  c = Ok(With({"-o", "config=" + path + ",max_memory=20MiB"}), env.Sources());
  CHECK(c.fs.max_memory == (20ull << 20));
  CHECK(c.fs.readahead.global_concurrency == 8);

  // Command-line positionals win over the file's; a missing one is taken from it.
  std::string with_pos = dir.Write("p.json", R"({"source": "fb", "mountpoint": "/mnt/f",
      "endpoint": "http://127.0.0.1:9"})");
  c = Ok({"clibucket", "/mnt/cli", "--config", with_pos}, env.Sources());
  CHECK(c.client.bucket == "clibucket");
  CHECK(c.daemon.mountpoint == "/mnt/cli");
  c = Ok({"clibucket", "--config", with_pos}, env.Sources());
  CHECK(c.client.bucket == "clibucket");
  CHECK(c.daemon.mountpoint == "/mnt/f");
}

TEST_CASE("The default config file is read only when it exists, and OSSMOUNT_CONFIG names one") {
  TempDir dir;
  FakeEnv env;
  std::string missing = (std::filesystem::path(dir.path()) / "none.json").string();
  MountConfig c = Ok(kBase, env.Sources(missing));
  CHECK(c.fs.metadata_ttl.value() == 60s);
  std::string def = dir.Write("config.json", R"({"metadata_ttl": "indefinite"})");
  auto r = ParseCommandLine(kBase, env.Sources(def));
  REQUIRE(r.ok());
  CHECK_FALSE(r->config.fs.metadata_ttl.has_value());
  CHECK(r->config_file == def);

  std::string other = dir.Write("o.json", R"({"metadata_ttl": "42"})");
  env.vars["OSSMOUNT_CONFIG"] = other;
  c = Ok(kBase, env.Sources(def));
  CHECK(c.fs.metadata_ttl.value() == 42s);

  // --config must exist.
  std::string msg = Fails(With({"--config", missing}), env.Sources());
  CHECK(Contains(msg, missing));
  CHECK(Contains(msg, "cannot be read"));
}

TEST_CASE("Config file errors name the key and the file") {
  TempDir dir;
  FakeEnv env;
  struct Case {
    const char* json;
    std::vector<std::string> needles;
  };
  std::vector<Case> cases = {
      {R"({"metadata_tl": "60"})", {"\"metadata_tl\"", "unknown key"}},
      {R"({"allow_other": "yes"})", {"\"allow_other\"", "true or false"}},
      {R"({"metadata_ttl": true})", {"\"metadata_ttl\"", "string or a number"}},
      {R"({"max_memory": 1.5})", {"\"max_memory\"", "whole number"}},
      {R"({"endpoint": ["a"]})", {"\"endpoint\"", "an array"}},
      {R"({"endpoint": null})", {"\"endpoint\"", "null"}},
      {R"({"metadata_ttl": "60", "metadata-ttl": "61"})", {"\"metadata-ttl\"", "already set"}},
      {R"({"config": "/x"})", {"\"config\"", "not allowed"}},
      // Values from the file fail the command line's own checks, and say where they came from.
      {R"({"metadata_ttl": "soon"})", {"--metadata-ttl", "key \"metadata_ttl\" in "}},
      {R"({"max_cache_size": "1GiB"})", {"--max-cache-size needs --cache", "\"max_cache_size\""}},
      {R"({"cache": "/var/cache/o", "cache_min_free": "150%"})",
       {"--cache-min-free: '150%' is not valid", "\"cache_min_free\""}},
      {R"({"io_threads": 0})", {"--io-threads", "key \"io_threads\" in "}},
      {"{\"endpoint\": \"x\",\n  \"region\" \"r\"}", {"not valid JSON", "line 2"}},
      {R"([1, 2])", {"must be a JSON object"}},
  };
  for (const Case& k : cases) {
    std::string path = dir.Write("bad.json", k.json);
    INFO(k.json);
    std::string msg = Fails(With({"--config", path}), env.Sources());
    INFO(msg);
    CHECK(Contains(msg, path));
    for (const auto& n : k.needles) CHECK(Contains(msg, n));
  }
}

TEST_CASE("Config files over the size or nesting limit are refused, naming the file and limit") {
  TempDir dir;
  FakeEnv env;
  // Over 1 MiB: refused before parsing, with the file's size.
  std::string big = R"({"endpoint": "x", "pad": ")" + std::string(kMaxConfigFileBytes, ' ') + "\"}";
  std::string path = dir.Write("big.json", big);
  std::string msg = Fails(With({"--config", path}), env.Sources());
  CHECK(Contains(msg, "config file " + path + ": " + std::to_string(big.size()) +
                          " bytes, over the 1048576-byte limit"));
  // A file without an end is read only up to the limit.
  msg = Fails(With({"--config", "/dev/zero"}), env.Sources());
  CHECK(Contains(msg, "/dev/zero: more than 1048576 bytes, over the 1048576-byte limit"));

  // Deeply nested: a million '[' (the recursive parser overflowed the stack), and a value
  // nested past the limit inside a valid object.
  path = dir.Write("deep.json", std::string(1'000'000, '['));
  msg = Fails(With({"--config", path}), env.Sources());
  CHECK(Contains(msg, path + ": nested deeper than 32 levels at offset 32"));
  path = dir.Write("deep2.json", "{\n  \"endpoint\": " + std::string(40, '[') + "1" +
                                     std::string(40, ']') + "\n}\n");
  msg = Fails(With({"--config", path}), env.Sources());
  CHECK(Contains(msg, path + ": nested deeper than 32 levels at line 2, column 46 (offset 47)"));
}

TEST_CASE("Environment errors name the variable") {
  FakeEnv env;
  env.vars["OSSMOUNT_ALLOW_OTHER"] = "maybe";
  std::string msg = Fails(kBase, env.Sources());
  CHECK(Contains(msg, "OSSMOUNT_ALLOW_OTHER"));
  env.vars.clear();
  env.vars["OSSMOUNT_METADATA_TTL"] = "soon";
  msg = Fails(kBase, env.Sources());
  CHECK(Contains(msg, "--metadata-ttl"));
  CHECK(Contains(msg, "OSSMOUNT_METADATA_TTL in the environment"));
  // Empty values count as unset; unrelated OSSMOUNT_* variables are not options.
  env.vars["OSSMOUNT_METADATA_TTL"] = "";
  env.vars["OSSMOUNT_BIN"] = "/usr/bin/ossmount";
  CHECK(Ok(kBase, env.Sources()).fs.metadata_ttl.value() == 60s);
}

TEST_CASE("OSS Connector config.json: fields map onto ossmount's options") {
  TempDir dir;
  FakeEnv env;
  std::string logdir = (std::filesystem::path(dir.path()) / "logs").string();
  std::filesystem::create_directory(logdir);
  std::string path = dir.Write("connector.json", R"({
    "logLevel": 2, "logPath": ")" + logdir + R"(", "auditPath": "/var/log/oss-connector/",
    "prefetchMB": 2048, "prefetchUnitMB": 4, "timeoutMs": 15000, "prefetchConcurrency": 8,
    "datasetConfig": {"prefetchConcurrency": 32, "prefetchWorker": 2},
    "checkpointConfig": {"prefetchConcurrency": 24, "prefetchWorker": 4, "uploadConcurrency": 64}
  })");
  auto r = ParseCommandLine(With({"--config", path}), env.Sources());
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  const MountConfig& c = r->config;
  CHECK(c.daemon.log_level == "warn");
  CHECK(c.daemon.log_file == logdir + "/ossmount.log");
  CHECK(c.fs.max_memory == (2048ull << 20));
  CHECK(c.fs.readahead.part_size == (4ull << 20));
  CHECK(c.client.timeouts.request == 15000ms);
  CHECK(c.fs.readahead.global_concurrency == 32);  // datasetConfig's, the more specific
  // Fields without a meaning here: one warning each.
  auto count = [&](const std::string& needle) {
    return std::count_if(c.warnings.begin(), c.warnings.end(),
                         [&](const std::string& w) { return Contains(w, needle); });
  };
  CHECK(count("\"datasetConfig.prefetchWorker\"") == 1);
  CHECK(count("\"checkpointConfig\"") == 1);
  // auditPath: --audit-log when this build has it, else reported as meaningless.
  auto table = CommandLineOptions();
  bool has_audit = std::any_of(table.begin(), table.end(),
                               [](const OptionInfo& o) { return o.name == "audit-log"; });
  CHECK(count("\"auditPath\"") == (has_audit ? 0 : 1));

  // A command-line option still wins over the connector file.
  MountConfig c2 = Ok(With({"--config", path, "--max-memory", "100MiB"}), env.Sources());
  CHECK(c2.fs.max_memory == (100ull << 20));
}

TEST_CASE("OSS Connector config.json: auditPath maps to --audit-log when the option exists") {
  std::vector<OptionInfo> table = {{"audit-log", false, false}, {"log-file", false, false}};
  auto r = ParseConfigText(R"({"auditPath": "/var/log/oss-connector/", "logPath": "/l/c.log"})",
                           "/etc/oss-connector/config.json", table);
  REQUIRE(r.ok());
  CHECK(r->connector_format);
  CHECK(r->warnings.empty());
  REQUIRE(r->settings.size() == 2);
  std::map<std::string, std::string> got;
  for (const auto& s : r->settings) got[s.name] = s.value;
  CHECK(got["audit-log"] == "/var/log/oss-connector/audit.log");
  CHECK(got["log-file"] == "/l/c.log");  // not a directory: the file itself
  table.erase(table.begin());
  r = ParseConfigText(R"({"auditPath": "/var/log/oss-connector/"})", "/c.json", table);
  REQUIRE(r.ok());
  REQUIRE(r->warnings.size() == 1);
  CHECK(Contains(r->warnings[0], "no meaning"));
}

TEST_CASE("OSS Connector config.json: wrong types and mixed vocabularies are errors") {
  TempDir dir;
  FakeEnv env;
  std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"prefetchMB": "lots"})", "\"prefetchMB\""},
      {R"({"logLevel": 9})", "\"logLevel\""},
      {R"({"datasetConfig": 3})", "\"datasetConfig\""},
      {R"({"datasetConfig": {"prefetchConcurrency": -1}})",
       "\"datasetConfig.prefetchConcurrency\""},
      {R"({"logLevel": 1, "metadata_ttl": "60"})", "\"metadata_ttl\""},
  };
  for (const auto& [json, needle] : cases) {
    std::string path = dir.Write("c.json", json);
    INFO(json);
    std::string msg = Fails(With({"--config", path}), env.Sources());
    INFO(msg);
    CHECK(Contains(msg, needle));
    CHECK(Contains(msg, path));
  }
  // A connector value that fails ossmount's checks says which connector field it was.
  std::string path = dir.Write("c.json", R"({"prefetchMB": 4})");
  std::string msg = Fails(With({"--config", path}), env.Sources());
  CHECK(Contains(msg, "--max-memory"));
  CHECK(Contains(msg, "\"prefetchMB\""));
}

TEST_CASE("The shipped example config parses and validates") {
  std::string path = std::string(OSSMOUNT_SOURCE_DIR) + "/systemd/config.example.json";
  FakeEnv env;
  MountConfig c = Ok({"--config", path}, env.Sources());
  CHECK(c.client.bucket == "my-bucket");
  CHECK(c.daemon.mountpoint == "/mnt/dataset");
  CHECK(c.client.region == "cn-beijing");
  CHECK_FALSE(c.fs.metadata_ttl.has_value());
  CHECK(c.cache.dir == "/var/cache/ossmount/dataset");
  CHECK(c.cache.min_free.fraction == Approx(0.05));
  CHECK(c.daemon.allow_other);
}

TEST_CASE("Every command-line option is documented in docs/CONFIGURATION.md") {
  std::ifstream in(std::string(OSSMOUNT_SOURCE_DIR) + "/docs/CONFIGURATION.md");
  REQUIRE(in);
  std::stringstream buf;
  buf << in.rdbuf();
  std::string doc = buf.str();
  for (const auto& o : CommandLineOptions()) {
    if (o.positional) continue;
    INFO("--" << o.name);
    CHECK(Contains(doc, "`--" + o.name));
  }
  CHECK(Contains(doc, "`--config"));
}

TEST_CASE("ParseSources without an environment getter means no environment layer") {
  // Regression (fuzz_command_line): a default ParseSources (getenv null, documented as "none")
  // called the empty std::function and threw bad_function_call.
  ParseSources none;
  MountConfig c = Ok({"bucket", "/mnt", "--endpoint", "http://127.0.0.1:9000"}, none);
  CHECK(c.client.bucket == "bucket");
  CHECK(Contains(
      Fails({"bucket", "/mnt", "--endpoint", "http://127.0.0.1:9000", "--metadata-ttl", "soon"},
            none),
      "--metadata-ttl"));
  auto settings = SettingsFromEnvironment(CommandLineOptions(), EnvironmentGetter());
  REQUIRE(settings.ok());
  CHECK(settings->empty());
}

TEST_CASE(
    "The control memory comes from OSSMOUNT_CONTROL_MEMORY and the config key control_memory") {
  TempDir dir;
  std::string path = dir.Write("c.json", R"({"control_memory": "32MiB"})");
  FakeEnv env;
  CHECK(Ok(With({"--config", path}), env.Sources()).fs.dataset_prefetch.control_memory ==
        (32ull << 20));
  env.vars["OSSMOUNT_CONTROL_MEMORY"] = "2GiB";
  CHECK(Ok(With({"--config", path}), env.Sources()).fs.dataset_prefetch.control_memory ==
        (2ull << 30));
  env.vars["OSSMOUNT_CONTROL_MEMORY"] = "1KiB";
  CHECK(Contains(Fails(With({}), env.Sources()), "OSSMOUNT_CONTROL_MEMORY in the environment"));
}
