// Internal to SequentialReader: the structures its two source files share.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "prefetch/sequential_reader.h"

namespace ossmount::prefetch {

// The bytes of one part and the budget bytes they hold; replies keep it alive as `owner`.
struct SequentialReader::PartBuffer {
  std::shared_ptr<const std::vector<char>> bytes;
  data::Reservation reservation;
};

struct SequentialReader::Part {
  enum class State { kFetching, kReady, kFailed };
  uint64_t index = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  bool readahead = false;  // sent as Priority::kPrefetch and holds a FetchSlots slot
  State state = State::kFetching;
  Status status;
  std::shared_ptr<PartBuffer> buffer;  // reserved at creation, filled when ready
  std::shared_ptr<CancelFlag> cancel = std::make_shared<CancelFlag>();
  std::vector<std::function<void()>> waiters;  // reads waiting for this part
};

struct SequentialReader::Gather {
  std::vector<std::shared_ptr<Part>> parts;  // in order
  std::atomic<size_t> pending{0};
  uint64_t offset = 0;
  uint64_t end = 0;
  ReadCallback done;
};

}  // namespace ossmount::prefetch
