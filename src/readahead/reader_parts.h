// Internal to SequentialReader: the structures its two source files share.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/page_buffer.h"
#include "readahead/sequential_reader.h"

namespace ossmount::readahead {

// The bytes of one part and the budget bytes they hold; replies keep it alive as `owner`.
// The bytes live in `pages` (mapped, see page_buffer.h) or, when they come from or go to the
// disk cache (whose interface shares vectors), in `vec`. `data` points at them; it is set
// before the GET is sent and read by others only once the part is ready.
struct SequentialReader::PartBuffer {
  char* data = nullptr;
  std::unique_ptr<PageBuffer> pages;
  std::shared_ptr<const ByteBuffer> vec;
  data::Reservation reservation;

  // Storage for `size` bytes: a vector when `shareable` (or when mapping fails), else pages.
  void Allocate(size_t size, bool shareable) {
    if (!shareable) pages = PageBuffer::Allocate(size);
    if (pages) {
      data = pages->data();
    } else {
      auto v = std::make_shared<ByteBuffer>(size);
      data = v->data();
      vec = std::move(v);
    }
  }
};

struct SequentialReader::Part {
  enum class State { kFetching, kReady, kFailed };
  uint64_t index = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  bool readahead = false;  // sent as Priority::kPrefetch and holds a FetchSlots slot
  bool from_disk = false;  // its bytes came from the disk cache (set before it is ready)
  State state = State::kFetching;
  Status status;
  std::shared_ptr<PartBuffer> buffer;  // reserved at creation, filled when ready
  std::shared_ptr<CancelFlag> cancel = std::make_shared<CancelFlag>();
  // Bytes from the part's start that are in place (the GET reports them as they arrive; all
  // of them once ready); never decreases, and stays valid if the part fails afterwards.
  std::atomic<uint64_t> arrived{0};
  // The least `need` among `waiters` (max: none), so that the network thread takes mu_ only
  // when an arrival answers a read. Stored before `arrived` is checked by a reader, and
  // `arrived` before it is checked by the network thread (both seq_cst): no wake-up is lost.
  std::atomic<uint64_t> next_wake{~0ull};
  struct Waiter {
    uint64_t need;               // bytes from the part's start the read needs
    std::function<void()> wake;  // called once: the bytes are there, or the part ended
  };
  std::vector<Waiter> waiters;  // reads waiting for this part
  // Pieces: when it was created, completed, or last answered a read; and whether its memory
  // was Reserve()d past the budget (a reader waited and the budget was spent).
  std::chrono::steady_clock::time_point used;
  bool over_budget = false;
  // A ramping run's piece: the furthest byte from its start that a read took (guarded by the
  // reader's mu_, shared with SequentialReader::last_ramp_served_); null for other parts.
  std::shared_ptr<uint64_t> ramp_served;
};

struct SequentialReader::Gather {
  std::vector<std::shared_ptr<Part>> parts;  // in order
  // Per part: its buffer (held here: a part that fails lets go of its own) and the bytes
  // from its start the read needs.
  std::vector<std::shared_ptr<PartBuffer>> buffers;
  std::vector<uint64_t> needs;
  std::atomic<size_t> pending{0};
  uint64_t offset = 0;
  uint64_t end = 0;
  // A read reaching the end of the object: the whole-object check's verdict (set before
  // `pending` is decremented for it, or before the read is answered); not OK fails the read.
  Status verdict;
  ReadCallback done;
};

}  // namespace ossmount::readahead
