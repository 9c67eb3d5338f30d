// CheckAcrossGroups: every rule that involves options of more than one group, in one place.
// The groups have validated and stored their own values; this caps, derives and copies.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "config/option_group.h"

namespace ossmount::config {
namespace {

// Work sent at foreground or prefetch priority must not outnumber the request cap: an
// explicit value above --max-in-flight is an error, the default follows a lower cap.
// (Listings ahead queued inside the engine would make reads wait behind them; prefetches
// queued there would make a reader that joins one wait behind the others.)
template <typename T>
Status CapAtMaxInFlight(const OptionContext& ctx, const char* option, int max_in_flight, T& value) {
  if (ctx.given(option) && value > static_cast<T>(max_in_flight)) {
    return InvalidOption(std::string(option) + " " + std::to_string(value) +
                         " is more than --max-in-flight " + std::to_string(max_in_flight) +
                         "; lower it or raise --max-in-flight");
  }
  value = std::min(value, static_cast<T>(max_in_flight));
  return Status::Ok();
}

// The protocol's part limits, and where the upload journal lives by default.
// Where the daemon keeps `leaf` (its upload journal, its staged files) by default: in the
// cache directory when there is one, else in the system's or the user's state directory;
// "" when there is none.
std::string StateDirectory(const MountConfig& c, const std::string& leaf) {
  if (!c.cache.dir.empty()) return c.cache.dir + "/" + leaf;
  if (geteuid() == 0) return "/var/lib/ossmount/" + leaf;
  if (const char* state = getenv("XDG_STATE_HOME"); state && *state) {
    return std::string(state) + "/ossmount/" + leaf;
  }
  if (const char* home = getenv("HOME"); home && *home) {
    return std::string(home) + "/.local/state/ossmount/" + leaf;
  }
  return "";
}

Status CheckWrites(const OptionContext& ctx, MountConfig& c) {
  fs::WritePolicy& w = c.fs.writes;
  if (!w.enabled) return Status::Ok();
  // Writable modes by default, so that default_permissions lets the owner write.
  if (!ctx.given("--file-mode")) c.fs.file_mode = 0644;
  if (!ctx.given("--dir-mode")) c.fs.dir_mode = 0755;
  if (c.client.protocol == Protocol::kS3) {
    // S3 refuses parts under 5 MiB but the last, and copies single objects up to 5 GiB.
    w.upload.min_part_size = 5ull << 20;
    w.upload.copy_object_limit = 5ull << 30;
    if (w.upload.part_size < w.upload.min_part_size) {
      if (ctx.given("--upload-part-size")) {
        return InvalidOption("--upload-part-size: S3 needs parts of at least 5MiB");
      }
      w.upload.part_size = w.upload.min_part_size;
    }
  }
  if (!ctx.given("--upload-journal")) w.upload.journal_dir = StateDirectory(c, "uploads");
  if (!ctx.given("--staging-dir")) w.staging_dir = StateDirectory(c, "staging");
  return Status::Ok();
}

}  // namespace

Status CheckAcrossGroups(const OptionContext& ctx, MountConfig& c) {
  // Credentials are looked up for the protocol and bucket the connection settled on.
  c.credential_sources.protocol = c.client.protocol;
  c.credential_sources.bucket = c.client.bucket;

  const int max_in_flight = c.client.max_in_flight;
  Status st = CapAtMaxInFlight(ctx, "--list-ahead", max_in_flight, c.fs.list_ahead);
  if (!st.ok()) return st;
  st = CapAtMaxInFlight(ctx, "--warmup-concurrency", max_in_flight,
                        c.fs.dataset_prefetch.concurrency);
  if (!st.ok()) return st;
  st = CapAtMaxInFlight(ctx, "--hint-concurrency", max_in_flight,
                        c.fs.dataset_prefetch.hint_concurrency);
  if (!st.ok()) return st;

  st = CheckWrites(ctx, c);
  if (!st.ok()) return st;

  // A supervised mount never asks for rings (a request a dead daemon's ring entry held would
  // be neither answered nor resent), so insisting on them contradicts supervision.
  if (c.daemon.fuse_io_uring == "on" && c.daemon.supervise &&
      c.daemon.mountpoint.rfind("/dev/fd/", 0) != 0) {
    return InvalidOption(
        "--fuse-io-uring on: a supervised mount serves over /dev/fuse only, so that it outlives "
        "its daemon; add --no-supervise to use FUSE over io_uring");
  }

  if (!ctx.given("--kernel-readahead")) {
    // 1 MiB: the kernel's reads are then 1 MiB (its largest), as with more, and a
    // sequential reader's readahead is the daemon's window (a 1 GiB read was no faster with
    // 16 MiB). More would cost random readers of a memory-mapped file (Arrow, numpy.memmap,
    // LMDB): the kernel reads its whole readahead around every page fault. The kernel's
    // readahead requests of every open file are answered even when the budget is spent, so
    // by default they are kept a small share of it. And only with an indefinite metadata
    // TTL: where objects may change, the kernel can still hold an old, larger size, and its
    // concurrent readahead requests past the new end then leave zeroed pages (seen in
    // mount:replace), which one 128 KiB request at a time does not.
    uint64_t& kernel_ra = c.fs.readahead.kernel_readahead;
    kernel_ra =
        c.fs.metadata_ttl.has_value() ? 0 : std::min(kernel_ra, c.fs.max_memory / 64 >> 20 << 20);
  }
  return Status::Ok();
}

}  // namespace ossmount::config
