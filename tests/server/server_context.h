// ServerContext: everything a connection needs, owned by the Server and shared (by
// reference) by all sessions. Each member is thread-safe on its own.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "accelerator.h"
#include "auth_check.h"
#include "faults.h"
#include "multipart.h"
#include "object_api.h"
#include "object_get_counts.h"
#include "object_store.h"
#include "stats.h"

namespace ossmount::testserver {

struct ServerOptions {
  std::string root;
  std::vector<std::string> buckets;  // created (as directories) at start
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string port_file;
  int threads = 2;
  AuthSettings auth;
  FaultSettings faults;
  uint64_t seed = 1;
  uint64_t memory_cache_mb = 512;
  uint64_t max_body_mb = 5120;  // largest PUT/part body accepted
  int idle_timeout_s = 120;     // a keep-alive connection idle this long is closed
  int write_timeout_s = 300;    // a client that reads nothing for this long is dropped
  bool access_log = false;      // one line per request on stderr
  std::string tls_cert;         // PEM certificate chain; with tls_key the server speaks HTTPS
  std::string tls_key;          // PEM private key
  ApiOptions api;
  // Accelerator mode (--origin http://HOST:PORT): GetObject and HeadObject are served from
  // memory and fetched from this origin on a miss; other object-API requests are refused
  // (they belong to the origin). Empty: a normal server over --root.
  std::string origin;
  uint64_t accelerator_cache_mb = 1024;  // objects held in accelerator mode
};

struct ServerContext {
  explicit ServerContext(const ServerOptions& o)
      : options(o),
        store(o.root, o.memory_cache_mb << 20),
        api(store, uploads, o.api),
        auth(o.auth),
        faults(o.faults, o.seed) {
    api.set_faults(&faults);
    api.set_stats(&stats);
  }

  const ServerOptions options;
  ObjectStore store;
  MultipartUploads uploads;
  ObjectApi api;
  RequestAuthenticator auth;
  FaultInjector faults;
  ServerStats stats;
  ObjectGetCounts object_gets;  // GetObject requests per object
  // Accelerator mode only (set by Server::Start): the origin client and the cache in front.
  std::unique_ptr<OriginFetcher> origin;
  std::unique_ptr<Accelerator> accelerator;
  // The server's I/O pool (null when sessions run without a Server): request-body digests
  // are computed on it, beside the thread reading the body.
  boost::asio::io_context* io = nullptr;
};

// Handles /_ossmount/...: GET stats (counters, plus the gauge open_multipart_uploads), GET
// uploads (every open multipart upload), POST reset (counters only; open uploads stay),
// GET/POST faults (query = settings; "clear" restores the start-up defaults of no faults
// first), POST rescan, GET health, POST sts?token=T&expires_at=UNIX (accept another STS
// token: rotation), GET object-gets (GetObject requests per object), and in accelerator mode
// GET accelerator (hits, misses, ...) and POST accelerator-drop (forget every held object).
Response HandleControl(const RequestInfo& info, ServerContext& ctx);

}  // namespace ossmount::testserver
