// SequentialReader: classification of reads, the part map and the readahead window.
// The GETs themselves are in part_fetch.cc.
#include "readahead/sequential_reader.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cstring>

#include "common/metrics.h"
#include "readahead/reader_parts.h"

namespace ossmount::readahead {

namespace {

// Waits for a part answered by bytes that had arrived while its GET was still running.
metrics::Counter& EarlyAnswers() {
  static metrics::Counter& c = metrics::Registry::Global().GetCounter(
      "ossmount_early_answers_total",
      "Reads of large files answered from a part or piece whose GET was still arriving.");
  return c;
}

metrics::Counter& ReadaheadStalls() {
  static metrics::Counter& c = metrics::Registry::Global().GetCounter(
      "ossmount_readahead_stalls_total",
      "Sequential reads of large files that waited for a part readahead should have had "
      "(fetched ahead, or asked for by an earlier read once the reader was 2 MiB in); each "
      "doubles its reader's readahead window.");
  return c;
}

ReadaheadWindow::Options WindowOptions(const ReaderOptions& o) {
  ReadaheadWindow::Options w;
  w.initial = o.initial_window;
  w.max = std::max(o.max_window, o.initial_window);
  w.slack = std::max(o.slack, o.late_tolerance);
  w.establish = o.part_size;
  w.windows = o.windows;
  return w;
}

ReaderOptions Sanitise(ReaderOptions o) {
  if (o.part_size == 0) o.part_size = 8ull << 20;
  if (o.per_file_concurrency < 1) o.per_file_concurrency = 1;
  return o;
}

// Parts a whole-object fold keeps waiting beyond a gap before it gives up: a reader in order
// has at most its window and the GETs in flight ahead of the first part still missing, twice
// that is not a reader in order.
size_t MaxWaitingParts(const ReaderOptions& o) {
  const uint64_t window_parts = std::max(o.max_window, o.initial_window) / o.part_size + 1;
  return static_cast<size_t>(2 * window_parts) + static_cast<size_t>(o.per_file_concurrency) + 2;
}

}  // namespace

SequentialReader::SequentialReader(boost::asio::io_context& io,
                                   std::shared_ptr<ObjectClient> client, std::string key,
                                   uint64_t size, std::string etag, ReaderOptions options,
                                   SharedReadState shared)
    : io_(io),
      client_(std::move(client)),
      key_(std::move(key)),
      size_(size),
      etag_(std::move(etag)),
      options_(Sanitise(options)),
      shared_(std::move(shared)),
      window_(WindowOptions(options_)),
      pieces_(WindowOptions(options_).streams),
      run_read_at_(WindowOptions(options_).streams),
      fold_(size_, options_.part_size, MaxWaitingParts(options_), options_.object_crc64),
      skip_disk_cache_(shared_.disk_cache && IsSuspectVersion(key_, etag_)) {}

SequentialReader::~SequentialReader() {
  // In-flight GETs hold a reference, so nothing is in flight here; parts_ frees its buffers.
}

uint64_t SequentialReader::PartLength(uint64_t index) const {
  const uint64_t start = index * options_.part_size;
  return std::min<uint64_t>(options_.part_size, size_ - start);
}

void SequentialReader::Read(uint64_t offset, size_t size, ReadCallback done) {
  if (offset >= size_ || size == 0) {
    boost::asio::post(io_, [done = std::move(done)]() { done(ReadBytes{}); });
    return;
  }
  const uint64_t end = std::min<uint64_t>(size_, offset + size);
  const uint64_t first = offset / options_.part_size;
  const uint64_t last = (end - 1) / options_.part_size;

  auto gather = std::make_shared<Gather>();
  gather->offset = offset;
  gather->end = end;
  gather->done = std::move(done);
  StartList start;
  std::vector<std::function<void()>> woken;  // waits answered while registering them
  bool direct = false;
  // The read waits for bytes that readahead should have had here: readahead is behind.
  bool stalled = false;
  // A read reaching the end of the object gets the whole-object check's verdict.
  const bool to_end = end == size_;
  Status direct_verdict;
  {
    std::lock_guard lock(mu_);
    if (closed_) {
      boost::asio::post(
          io_, [gather]() { gather->done(Status(ErrorCode::kCancelled, "the file was closed")); });
      return;
    }
    const auto access = window_.OnRead(offset, end - offset);
    // Past twice its first window, a run is a reader of the file, not of its head: waiting
    // for any part it had asked for before, the one it started in included, is a stall.
    // (A `head -c 1M` with the kernel's readahead of 1 MiB reads exactly 2 MiB.)
    const bool outran_start = window_.run() > 2 * options_.initial_window;
    bool covered = true;
    for (uint64_t i = first; i <= last && covered; ++i) covered = parts_.count(i) > 0;
    // Any run's piece may hold the bytes (readers of one record, a run's read out of order).
    std::shared_ptr<Part> holding_piece;
    for (const auto& piece : pieces_) {
      if (piece && piece->offset <= offset && end <= piece->offset + piece->length) {
        holding_piece = piece;
        break;
      }
    }
    const bool in_piece = holding_piece != nullptr;
    // One clock read for both idle rules (pieces and windows).
    const auto now = Now();
    ReleasePiecesLocked(access == ReadaheadWindow::Access::kRandom, holding_piece, now);
    CloseIdleWindowsLocked(now);
    std::shared_ptr<Part>& run_piece = pieces_[window_.stream()];

    bool short_run_piece = false;
    if (access != ReadaheadWindow::Access::kSequential) {
      // Whatever was fetched for a position no run is at any more is no longer wanted.
      DropOutsideLocked(covered ? first : 1, covered ? last : 0);
      // Without a disk cache, a random read fetches exactly its bytes and a short run a piece
      // as long as the run so far (so its next reads find their bytes there, and a run
      // that goes on doubles its pieces until its window opens). With one, both fetch the
      // covering parts, the cache's units.
      const bool fetch_parts = covered || in_piece || shared_.disk_cache;
      direct = !fetch_parts && access == ReadaheadWindow::Access::kRandom;
      short_run_piece = !fetch_parts && access == ReadaheadWindow::Access::kShortRun;
    } else if (!covered && !in_piece && window_.end() > options_.slack &&
               end <= window_.end() - options_.slack) {
      // A straggler: a request the kernel sent long before the reads ahead of it arrived,
      // for bytes whose part was already dropped. Fetch just those bytes (or, with a disk
      // cache, the covering parts, which may be there) and leave the window alone.
      direct = !shared_.disk_cache;
    } else {
      // Keep parts from the one holding (reader - slack) to the end of the window.
      const uint64_t keep_from = offset > options_.slack ? offset - options_.slack : 0;
      const uint64_t window_end =
          std::min<uint64_t>(size_, window_.window_start() + window_.window());
      const uint64_t hi =
          std::max(last, window_end == 0 ? 0 : (window_end - 1) / options_.part_size);
      DropOutsideLocked(std::min(first, keep_from / options_.part_size), hi);
    }
    if (!direct) {
      if (covered) {
        for (uint64_t i = first; i <= last; ++i) gather->parts.push_back(parts_[i]);
      } else if (in_piece) {
        gather->parts.push_back(holding_piece);
      } else if (auto created =
                     short_run_piece ? std::nullopt : NewNeededPartsLocked(first, last)) {
        start = *created;
        for (uint64_t i = first; i <= last; ++i) gather->parts.push_back(parts_[i]);
      } else {
        // A short run's piece, if the budget has room for it; otherwise (the budget is spent
        // by readahead of all files) a small piece instead of a whole part, so that waiting
        // readers overshoot the limit by little.
        const uint64_t left = size_ - offset;
        uint64_t run_len =
            std::min(left, std::max(end - offset, std::min(options_.part_size, window_.run())));
        // A ramping run is a read() of many bytes that the kernel sends in growing requests,
        // each waiting for the one before: fetch what it will likely read in one round.
        const bool ramp = short_run_piece && window_.ramping();
        if (ramp) run_len = std::max(run_len, std::min(left, RampPieceLengthLocked()));
        uint64_t len = std::min(
            left, std::max(end - offset, std::min(options_.part_size, options_.initial_window)));
        const bool granted = short_run_piece && shared_.budget->TryReserve(run_len);
        if (granted) {
          len = run_len;
        } else {
          shared_.budget->Reserve(len);  // a reader waits: never refused
          // Beyond the budget, one piece is kept for later reads (of any run), not one per run.
          for (auto& piece : pieces_) {
            if (piece && piece->over_budget) piece.reset();
          }
        }
        run_piece = NewPieceLocked(offset, len, data::Reservation(shared_.budget, len));
        run_piece->over_budget = !granted;
        if (ramp && granted) {
          run_piece->ramp_served = std::make_shared<uint64_t>(0);
          last_ramp_served_ = run_piece->ramp_served;
        }
        start.push_back(run_piece);
        gather->parts.push_back(run_piece);
      }
      // A part answers the read once the bytes it needs from it have arrived, ready or not.
      std::vector<bool> has;
      size_t not_ready = 0;
      const bool created_here = !start.empty();
      for (auto& part : gather->parts) {
        const uint64_t need = std::min(end, part->offset + part->length) - part->offset;
        if (part->ramp_served) *part->ramp_served = std::max(*part->ramp_served, need);
        gather->buffers.push_back(part->buffer);
        gather->needs.push_back(need);
        has.push_back(part->arrived.load() >= need);
        if (!has.back()) {
          ++not_ready;
          stalled = stalled || part->readahead ||
                    (outran_start && !created_here && part->index != kPieceIndex);
        } else if (part->state == Part::State::kFetching) {
          EarlyAnswers().Add();
        }
      }
      // Reaching the end, the read waits for the whole-object verdict while the fold can
      // still end; otherwise it gets the last one (OK, or a mismatch since).
      const bool await_verdict = to_end && fold_.armed() && FoldCompletableLocked();
      if (to_end && !await_verdict) gather->verdict = mismatch_;
      // Set before any waiter is registered: arrivals and completions need mu_ to wake them.
      gather->pending = not_ready + (await_verdict ? 1 : 0);
      for (size_t i = 0; i < gather->parts.size(); ++i) {
        if (has[i]) continue;
        Part& part = *gather->parts[i];
        part.waiters.push_back({gather->needs[i], [gather]() {
                                  if (--gather->pending == 0) Assemble(gather);
                                }});
        if (gather->needs[i] < part.next_wake.load()) part.next_wake.store(gather->needs[i]);
        // The bytes may have arrived since `has` was taken, unseen by the network thread.
        if (part.arrived.load() >= gather->needs[i]) TakeAnsweredWaitersLocked(part, woken);
      }
      if (await_verdict) {
        verdict_waiters_.push_back([gather](Status verdict) {
          gather->verdict = std::move(verdict);
          if (--gather->pending == 0) Assemble(gather);
        });
      } else if (not_ready == 0) {
        boost::asio::post(io_, [gather]() { Assemble(gather); });
      }
    } else if (to_end) {
      direct_verdict = mismatch_;
    }
    if (access == ReadaheadWindow::Access::kSequential) {
      if (stalled) {
        ReadaheadStalls().Add();
        window_.Grow();
      }
      TopUpLocked(start);
    }
  }
  for (auto& wake : woken) boost::asio::post(io_, std::move(wake));
  StartParts(std::move(start));
  if (direct && !direct_verdict.ok()) {
    boost::asio::post(io_, [gather, direct_verdict]() { gather->done(direct_verdict); });
  } else if (direct) {
    ReadDirect(offset, end - offset, std::move(gather->done));
  }
}

void SequentialReader::OnPartArrival(const std::shared_ptr<Part>& part, size_t bytes) {
  part->arrived.store(bytes);
  if (bytes < part->next_wake.load()) return;  // no read waits for these bytes
  std::vector<std::function<void()>> woken;
  {
    std::lock_guard lock(mu_);
    TakeAnsweredWaitersLocked(*part, woken);
  }
  EarlyAnswers().Add(woken.size());
  // Replies are sent from the io threads, never from the client's network thread.
  for (auto& wake : woken) boost::asio::post(io_, std::move(wake));
}

void SequentialReader::TakeAnsweredWaitersLocked(Part& part,
                                                 std::vector<std::function<void()>>& woken) {
  const uint64_t arrived = part.arrived.load();
  uint64_t next_wake = ~0ull;
  size_t kept = 0;  // the waiters still waiting, moved to the front in order
  for (size_t i = 0; i < part.waiters.size(); ++i) {
    Part::Waiter& waiter = part.waiters[i];
    if (waiter.need <= arrived) {
      woken.push_back(std::move(waiter.wake));
    } else {
      next_wake = std::min(next_wake, waiter.need);
      if (kept != i) part.waiters[kept] = std::move(waiter);
      ++kept;
    }
  }
  part.waiters.erase(part.waiters.begin() + static_cast<std::ptrdiff_t>(kept), part.waiters.end());
  part.next_wake.store(next_wake);
}

std::optional<SequentialReader::StartList> SequentialReader::NewNeededPartsLocked(uint64_t first,
                                                                                  uint64_t last) {
  uint64_t total = 0;
  for (uint64_t i = first; i <= last; ++i) {
    if (!parts_.count(i)) total += PartLength(i);
  }
  if (!shared_.budget->TryReserve(total)) return std::nullopt;
  StartList created;
  for (uint64_t i = first; i <= last; ++i) {
    if (parts_.count(i)) continue;
    auto part = std::make_shared<Part>();
    part->index = i;
    part->offset = i * options_.part_size;
    part->length = PartLength(i);
    part->buffer = std::make_shared<PartBuffer>();
    part->buffer->reservation = data::Reservation(shared_.budget, part->length);
    parts_[i] = part;
    ++in_flight_;
    NotePartCreatedLocked(i);
    created.push_back(std::move(part));
  }
  return created;
}

void SequentialReader::CloseIdleWindowsLocked(std::chrono::steady_clock::time_point now) {
  const size_t run = window_.stream();
  run_read_at_[run] = now;
  for (size_t i = 0; i < run_read_at_.size(); ++i) {
    if (i != run && window_.has_window(i) && now - run_read_at_[i] > options_.piece_idle) {
      window_.CloseWindow(i);
    }
  }
}

void SequentialReader::ReleasePiecesLocked(bool random, const std::shared_ptr<Part>& holding,
                                           std::chrono::steady_clock::time_point now) {
  const size_t run = window_.stream();
  if (random) pieces_[run].reset();  // the slot was a forgotten run's
  if (holding) holding->used = now;
  for (size_t i = 0; i < pieces_.size(); ++i) {
    std::shared_ptr<Part>& piece = pieces_[i];
    if (!piece || piece->state == Part::State::kFetching || !piece->waiters.empty() ||
        piece == holding) {
      continue;  // wanted now (a read waiting for it holds it anyway)
    }
    // The reader left it: its own run reads elsewhere, a lone reader's run (never
    // interleaved) was left for another, or nobody read from it for piece_idle.
    if (i == run || !window_.interleaved(i) || now - piece->used > options_.piece_idle) {
      piece.reset();
    }
  }
}

uint64_t SequentialReader::RampPieceLengthLocked() const {
  if (!last_ramp_served_) return options_.part_size;
  // In 64 KiB steps: a reader of 4 MiB records gets each record in one round of GETs, one of
  // 100 KB records (a zip of images read at random) is not sent megabytes for each.
  constexpr uint64_t kStep = 64 << 10;
  const uint64_t want = *last_ramp_served_ + *last_ramp_served_ / 4;
  return std::clamp((want + kStep - 1) / kStep * kStep, kStep, std::max(kStep, options_.part_size));
}

std::shared_ptr<SequentialReader::Part> SequentialReader::NewPieceLocked(
    uint64_t offset, uint64_t length, data::Reservation reservation) {
  auto part = std::make_shared<Part>();
  part->index = kPieceIndex;
  part->offset = offset;
  part->length = length;
  part->used = Now();
  part->buffer = std::make_shared<PartBuffer>();
  part->buffer->reservation = std::move(reservation);
  ++in_flight_;
  return part;
}

std::shared_ptr<SequentialReader::Part> SequentialReader::NewReadaheadPartLocked(
    uint64_t index, bool* budget_refused) {
  const uint64_t length = PartLength(index);
  if (in_flight_ >= options_.per_file_concurrency) return nullptr;
  if (!shared_.budget->TryReserve(length)) {
    *budget_refused = true;
    return nullptr;
  }
  data::Reservation reservation(shared_.budget, length);
  if (!shared_.slots->TryAcquire()) return nullptr;  // `reservation` is released
  auto part = std::make_shared<Part>();
  part->index = index;
  part->offset = index * options_.part_size;
  part->length = length;
  part->readahead = true;
  part->buffer = std::make_shared<PartBuffer>();
  part->buffer->reservation = std::move(reservation);
  parts_[index] = part;
  ++in_flight_;
  NotePartCreatedLocked(index);
  return part;
}

void SequentialReader::TopUpLocked(StartList& start) {
  const uint64_t window = window_.window();
  if (window == 0 || closed_) return;
  const uint64_t from = window_.window_start();
  const uint64_t to = std::min<uint64_t>(size_, from + window);
  if (from >= to) return;
  for (uint64_t i = from / options_.part_size; i <= (to - 1) / options_.part_size; ++i) {
    if (parts_.count(i)) continue;
    bool refused = false;
    auto part = NewReadaheadPartLocked(i, &refused);
    if (!part) {
      if (refused) window_.Shrink();  // memory pressure: look less far ahead
      return;
    }
    start.push_back(std::move(part));
  }
}

void SequentialReader::DropOutsideLocked(uint64_t lo, uint64_t hi) {
  for (auto it = parts_.begin(); it != parts_.end();) {
    auto next = std::next(it);
    const Part& part = *it->second;
    if ((it->first < lo || it->first > hi) && part.waiters.empty() &&
        !window_.NearAnyRun(part.offset, part.offset + part.length, options_.slack)) {
      DropLocked(it);
    }
    it = next;
  }
}

void SequentialReader::DropLocked(std::map<uint64_t, std::shared_ptr<Part>>::iterator it) {
  // An in-flight GET is aborted; its completion (kCancelled) still arrives and frees the
  // buffer. A ready part's buffer goes once the last reply using it is sent. A GET whose
  // bytes have all arrived is left to complete: aborting it saves nothing, and its part's
  // CRC-64 is still wanted by the whole-object check.
  Part& part = *it->second;
  if (part.state == Part::State::kFetching && part.arrived.load() < part.length) {
    part.cancel->cancelled = true;
  }
  parts_.erase(it);
}

void SequentialReader::Close() {
  std::map<uint64_t, std::shared_ptr<Part>> parts;  // destroyed after the lock
  std::vector<std::function<void(Status)>> verdict_waiters;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    verdict_waiters.swap(verdict_waiters_);
    for (auto& piece : pieces_) {
      if (piece && piece->state == Part::State::kFetching) piece->cancel->cancelled = true;
      piece.reset();
    }
    for (auto& [index, part] : parts_) {
      if (part->state == Part::State::kFetching) part->cancel->cancelled = true;
    }
    parts.swap(parts_);
  }
  for (auto& waiter : verdict_waiters) {
    boost::asio::post(io_, [waiter = std::move(waiter)]() {
      waiter(Status(ErrorCode::kCancelled, "the file was closed"));
    });
  }
}

SequentialReader::Stats SequentialReader::stats() const {
  std::lock_guard lock(mu_);
  Stats s;
  s.parts = parts_.size();
  s.in_flight = in_flight_;
  s.window = window_.largest_window();
  return s;
}

void SequentialReader::Assemble(const std::shared_ptr<Gather>& gather) {
  for (size_t i = 0; i < gather->parts.size(); ++i) {
    const Part& part = *gather->parts[i];
    if (part.arrived.load() < gather->needs[i]) {
      // Woken by the part's end without its bytes: it failed (its status was set before).
      gather->done(part.status.ok() ? Status(ErrorCode::kCancelled, "read abandoned")
                                    : part.status);
      return;
    }
  }
  if (!gather->verdict.ok()) return gather->done(gather->verdict);
  ReadBytes reply;
  reply.size = gather->end - gather->offset;
  if (gather->parts.size() == 1) {
    const auto& part = gather->parts[0];
    reply.data = gather->buffers[0]->data + (gather->offset - part->offset);
    reply.owner = gather->buffers[0];
  } else {
    auto buffer = std::make_shared<ByteBuffer>(reply.size);
    for (size_t i = 0; i < gather->parts.size(); ++i) {
      const Part& part = *gather->parts[i];
      const uint64_t from = std::max(gather->offset, part.offset);
      const uint64_t to = std::min(gather->end, part.offset + part.length);
      std::memcpy(buffer->data() + (from - gather->offset),
                  gather->buffers[i]->data + (from - part.offset), to - from);
    }
    reply.data = buffer->data();
    reply.owner = buffer;
  }
  gather->done(std::move(reply));
}

}  // namespace ossmount::readahead
