// Accelerator: the test server's stand-in for the OSS Accelerator, a cache tier in front of an
// origin server (--origin URL). It serves object data (GetObject and HeadObject, ranged too)
// from whole objects held in its own memory, and fetches an object it does not hold from the
// origin with one whole-object GET. Listings and metadata are not its business: clients send
// them to the origin (ossmount: --endpoint = origin, --data-endpoint = accelerator).
//
// Contract:
// - A hit costs the origin nothing. A miss costs exactly one origin GET, however many requests
//   for that object arrive while it is in flight (single flight: they wait for the same fetch,
//   counted as "merged").
// - A fetched object keeps the origin's ETag, size, CRC-64 (x-oss-hash-crc64ecma), Last-Modified,
//   content type, object type and user metadata, so a client sees the same object through
//   either server.
// - A request whose If-Match names another ETag than the one held is treated as a miss (the
//   object may have changed at the origin): it is fetched again and replaces the held copy.
// - Objects are held until Drop() while they fit in the byte budget (first come, first held,
//   no eviction); an object that does not fit is served once from the fetch and not held
//   ("uncached").
// - An origin 404 is answered as NoSuchKey (nullptr) and not remembered; any other origin
//   failure is an error Status for the waiting requests, and not remembered either.
//
// Thread-safety: every method may be called concurrently. Done callbacks run on the thread
// that completed the fetch (or inline for a hit), never under the accelerator's lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "object_store.h"
#include "ossmount/status.h"

namespace ossmount::testserver {

// What the origin answered to one request.
struct OriginReply {
  unsigned status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names as sent
  std::string body;
};

// Sends requests to the origin. Fetch calls `done` exactly once, from any thread; a transport
// failure (no connection, reset, timeout) is an error Status.
class OriginFetcher {
 public:
  virtual ~OriginFetcher() = default;
  virtual void Fetch(const std::string& bucket, const std::string& key,
                     std::function<void(Result<OriginReply>)> done) = 0;
};

// The memory-only object an origin's 200 GetObject reply describes. kProtocol or kIntegrity when
// the reply lacks an ETag or its body's length disagrees with Content-Length. The CRC-64 is the
// origin's header when present, else computed. The reply's body moves into the object.
Result<ObjectPtr> ObjectFromOriginReply(const std::string& key, OriginReply reply);

struct AcceleratorCounts {
  uint64_t hits = 0;            // answered from memory
  uint64_t misses = 0;          // started an origin fetch
  uint64_t merged = 0;          // waited for a fetch another request started
  uint64_t origin_errors = 0;   // fetches that failed (404 excluded)
  uint64_t origin_missing = 0;  // fetches the origin answered 404
  uint64_t uncached = 0;        // fetched objects served but not held (budget full)
  uint64_t cached_objects = 0;  // held now
  uint64_t cached_bytes = 0;    // held now
};

class Accelerator {
 public:
  // The object (nullptr: NoSuchKey at the origin) or the origin's failure.
  using Done = std::function<void(Result<ObjectPtr>)>;

  Accelerator(OriginFetcher& origin, uint64_t cache_bytes)
      : origin_(origin), budget_(cache_bytes) {}

  // Calls `done` with the object: inline when held (and matching `if_match`, a client's
  // If-Match value, "" for none), else after the one origin fetch of this object in flight.
  void Get(const std::string& bucket, const std::string& key, const std::string& if_match,
           Done done);

  AcceleratorCounts counts() const;
  // Zeroes the counters, not the held objects.
  void ResetCounts();
  // Forgets every held object (a cold cache); fetches in flight complete normally.
  void Drop();
  // {"hits":N,"misses":N,"merged":N,"origin_errors":N,"origin_missing":N,"uncached":N,
  //  "cached_objects":N,"cached_bytes":N}
  std::string ToJson() const;

 private:
  void Complete(const std::string& name, const Result<ObjectPtr>& result);

  OriginFetcher& origin_;
  const uint64_t budget_;

  mutable std::mutex mu_;
  std::map<std::string, ObjectPtr> held_;               // "bucket\nkey"; guarded by mu_
  std::map<std::string, std::vector<Done>> in_flight_;  // waiters per fetch; guarded by mu_
  uint64_t held_bytes_ = 0;                             // guarded by mu_
  std::atomic<uint64_t> hits_{0}, misses_{0}, merged_{0}, origin_errors_{0}, origin_missing_{0},
      uncached_{0};
};

}  // namespace ossmount::testserver
