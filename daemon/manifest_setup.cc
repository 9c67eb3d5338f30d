#include "manifest_setup.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <future>

#include "bucket_probe.h"
#include "meta/key_mapping.h"
#include "meta/manifest_client.h"
#include "meta/manifest_parser.h"

namespace ossmount::daemon {

namespace {

// GET bytes 0-0 of `key`: any answer from the bucket itself (the object, an empty object's
// invalid range, NoSuchKey) proves endpoint, bucket and credentials.
Status ProbeWithGet(ObjectClient& client, const std::string& key, const config::MountConfig& config,
                    std::chrono::seconds timeout, const WaitingNotice& on_waiting) {
  auto body = std::make_shared<std::vector<char>>();
  auto done = std::make_shared<std::promise<Status>>();
  std::future<Status> result = done->get_future();
  GetRequest request;
  request.key = key;
  request.offset = 0;
  request.length = 1;
  client.Get(request, GetTarget::Growable(body.get()),
             [done, body](Result<GetResult> r) { done->set_value(r.status()); });
  const std::string where = DescribeBucket(config);
  if (!WaitForStartupAnswer(result, where + " to answer the start-up read of '" + key + "'",
                            timeout, on_waiting)) {
    return Status(ErrorCode::kTimeout,
                  "reading '" + key + "' from " + where + " did not finish within " +
                      std::to_string(timeout.count()) +
                      " s\nhint: " + ProbeHint(Status(ErrorCode::kTimeout, ""), config));
  }
  Status st = result.get();
  switch (st.code()) {
    case ErrorCode::kOk:
    case ErrorCode::kInvalidRange:
      return Status::Ok();
    case ErrorCode::kNotFound:
      spdlog::warn("manifest: its first entry '{}' is not in {}; reading it will fail", key, where);
      return Status::Ok();
    default:
      return Status(st.code(),
                    "cannot read '" + key + "' from " + where + ": " + st.ToString() +
                        "\nhint: " + ProbeHint(st, config),
                    st.retryable());
  }
}

}  // namespace

Result<std::shared_ptr<ObjectClient>> SetUpManifest(boost::asio::io_context& io,
                                                    std::shared_ptr<ObjectClient> client,
                                                    const config::MountConfig& config,
                                                    std::chrono::seconds probe_timeout,
                                                    const WaitingNotice& on_waiting) {
  auto prefix = meta::NormalizeMountPrefix(config.fs.prefix);
  if (!prefix.ok()) return prefix.status();
  auto start = std::chrono::steady_clock::now();
  auto loaded = meta::LoadManifestFile(config.manifest, {config.client.bucket, *prefix});
  if (!loaded.ok()) return loaded.status();
  // Give back the heap the parse used (line buffers, the growing arena and records, the sort
  // permutation): what stays is the index itself.
  malloc_trim(0);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  start)
                .count();
  const meta::ManifestStats& s = loaded->stats;
  spdlog::info(
      "manifest {}: {} entries from {} lines in {} ms, index {} bytes ({:.1f} per entry); "
      "{} without a size and {} without an etag (one HEAD each when first listed)",
      config.manifest, s.entries, s.lines, ms, loaded->index->MemoryBytes(),
      static_cast<double>(loaded->index->MemoryBytes()) / static_cast<double>(s.entries),
      s.without_size, s.without_etag);
  std::string first = *prefix + std::string(loaded->index->at(0).key);
  if (Status st = ProbeWithGet(*client, first, config, probe_timeout, on_waiting); !st.ok())
    return st;
  return meta::MakeManifestObjectClient(io, std::move(client), loaded->index,
                                        meta::ManifestClientOptions{*prefix, loaded->mtime_sec});
}

}  // namespace ossmount::daemon
