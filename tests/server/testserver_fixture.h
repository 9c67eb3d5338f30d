// Shared pieces of the test server's end-to-end tests: a temporary root with a bucket, a
// running server process over it, file helpers and XML parsing.
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <pugixml.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/crc64.h"
#include "http_test_client.h"
#include "server_process.h"

namespace ossmount::testserver {

inline std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

inline uint64_t CrcOf(const std::string& s) { return Crc64(0, s.data(), s.size()); }

// A temp root with bucket "bkt", and a server over it started by Start().
class ServerFixture {
 public:
  ServerFixture() {
    root_ = MakeTempDir("ossmount-testserver-");
    REQUIRE(!root_.empty());
    std::filesystem::create_directories(root_ + "/bkt");
  }
  ~ServerFixture() {
    server_.reset();
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  void WriteFile(const std::string& key, const std::string& data) {
    std::filesystem::path p = root_ + "/bkt/" + key;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << data;
  }

  void Start(std::vector<std::string> args = {"--auth", "off"}) {
    args.insert(args.begin(), {"--root", root_, "--bucket", "bkt"});
    auto p = TestServerProcess::Start(args);
    REQUIRE(p.ok());
    server_ = std::move(p.value());
    client_ = std::make_unique<HttpTestClient>(server_->port());
  }

  HttpTestClient& client() { return *client_; }
  TestServerProcess& server() { return *server_; }
  const std::string& root() const { return root_; }

  // A counter from GET /_ossmount/stats ("GET", "faults.reset", ...).
  uint64_t Stat(const std::string& name) {
    HttpTestClient c(server_->port());
    auto r = c.Request("GET", "/_ossmount/stats");
    REQUIRE(r.status == 200);
    std::string section, field = name;
    if (auto dot = name.find('.'); dot != std::string::npos) {
      section = name.substr(0, dot);
      field = name.substr(dot + 1);
    }
    std::string body = r.body;
    if (!section.empty()) {
      auto at = body.find("\"" + section + "\":{");
      REQUIRE(at != std::string::npos);
      body = body.substr(at, body.find('}', at) - at);
    }
    auto at = body.find("\"" + field + "\":");
    REQUIRE(at != std::string::npos);
    return std::stoull(body.substr(at + field.size() + 3));
  }

 private:
  std::string root_;
  std::unique_ptr<TestServerProcess> server_;
  std::unique_ptr<HttpTestClient> client_;
};

inline pugi::xml_node ParseXml(pugi::xml_document& doc, const std::string& body) {
  auto ok = doc.load_buffer(body.data(), body.size());
  INFO(body);
  REQUIRE(ok);
  return doc.first_child();
}

}  // namespace ossmount::testserver
