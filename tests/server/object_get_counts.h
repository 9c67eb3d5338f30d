// ObjectGetCounts: how many GetObject requests (whole or ranged) each object received, so a
// test can assert "the origin served each object at most once per epoch" instead of only a
// total. Exposed by the control API as GET /_ossmount/object-gets; POST /_ossmount/reset
// clears it with the other counters.
//
// Thread-safety: every method may be called concurrently (one mutex; a GET takes it once).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace ossmount::testserver {

class ObjectGetCounts {
 public:
  void Count(const std::string& bucket, const std::string& key);
  void Reset();
  // "bucket/key" -> GETs, sorted by name.
  std::map<std::string, uint64_t> Snapshot() const;
  // {"objects":N,"gets":N,"max":N,"keys":{"bucket/key":N,...}}: objects = distinct keys with
  // at least one GET, max = the most GETs any one key received.
  std::string ToJson() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, uint64_t> counts_;  // guarded by mu_
};

}  // namespace ossmount::testserver
