// Test harness for src/upload: a FakeObjectClient (optionally behind a FailingObjectClient)
// whose completions run on an io_context that the test itself drains (Drain), so every step
// is deterministic: nothing completes while the test is not draining, and Pause() on the
// fake holds completions across drains.
#pragma once

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "data/memory_budget.h"
#include "support/byte_units.h"
#include "support/failing_object_client.h"
#include "support/fake_object_client.h"
#include "upload/object_upload.h"
#include "upload/upload_gate.h"
#include "upload/upload_options.h"

namespace uploadtest {

using namespace ossmount;
using namespace ossmount::upload;
using ossmount::testing::FailingObjectClient;
using ossmount::testing::FakeObjectClient;
using ossmount::testing::KiB;
using ossmount::testing::MiB;
using ossmount::testing::Op;

// Deterministic pseudo-random bytes.
inline std::string Bytes(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(size, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

// Small parts so that multipart uploads take kilobytes, not megabytes.
inline UploadOptions SmallParts() {
  UploadOptions o;
  o.part_size = 64 * KiB;
  o.min_part_size = 16 * KiB;
  o.max_parts_in_flight = 8;
  o.copy_object_limit = 100 * KiB;
  o.copy_part_size = 40 * KiB;
  return o;
}

struct Rig {
  explicit Rig(uint64_t budget_limit = 64 * MiB, int max_in_flight = 8, bool failing = false)
      : fake(std::make_shared<FakeObjectClient>(io)),
        budget(std::make_shared<data::MemoryBudget>(budget_limit)),
        gate(std::make_shared<UploadGate>(budget, max_in_flight)) {
    fake->set_min_part_size(16 * KiB);
    client = fake;
    if (failing) {
      fail = std::make_shared<FailingObjectClient>(io, fake);
      client = fail;
    }
    options = SmallParts();
    options.max_parts_in_flight = max_in_flight;
  }

  // Runs every completion that is ready (the fake's, unless paused).
  void Drain() {
    io.restart();
    io.run();
  }

  std::shared_ptr<ObjectUpload> Make(const std::string& key, WriteOptions wo = {},
                                     std::shared_ptr<UploadJournal> journal = nullptr) {
    auto up = ObjectUpload::Make(client, gate, std::move(journal), key, options, wo);
    made.push_back(up);
    return up;
  }

  // Bytes the uploads still alive keep for a continuation (ObjectUpload::kept_bytes): what
  // the budget holds once everything ended.
  uint64_t KeptBytes() const {
    uint64_t kept = 0;
    for (const auto& weak : made) {
      if (auto up = weak.lock()) kept += up->kept_bytes();
    }
    return kept;
  }
  std::vector<std::weak_ptr<ObjectUpload>> made;

  // Appends `data` in pieces of `piece` bytes, requiring each Append to succeed.
  static void AppendAll(ObjectUpload& up, const std::string& data, size_t piece) {
    for (size_t at = 0; at < data.size(); at += piece) {
      const size_t n = std::min(piece, data.size() - at);
      REQUIRE(up.Append(data.data() + at, n).ok());
    }
  }

  // Finish, drained to its answer.
  Result<UploadedObject> Finish(ObjectUpload& up) {
    std::optional<Result<UploadedObject>> out;
    up.Finish([&](Result<UploadedObject> r) { out.emplace(std::move(r)); });
    Drain();
    REQUIRE(out.has_value());
    return std::move(*out);
  }

  boost::asio::io_context io;
  std::shared_ptr<FakeObjectClient> fake;
  std::shared_ptr<FailingObjectClient> fail;
  std::shared_ptr<ObjectClient> client;
  std::shared_ptr<data::MemoryBudget> budget;
  std::shared_ptr<UploadGate> gate;
  UploadOptions options;
};

}  // namespace uploadtest
