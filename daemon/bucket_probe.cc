#include "bucket_probe.h"

#include <algorithm>
#include <future>
#include <memory>

#include <spdlog/spdlog.h>

namespace ossmount::daemon {

std::string ProbeHint(const Status& status, const config::MountConfig& config) {
  const std::string& bucket = config.client.bucket;
  const std::string& endpoint = config.client.endpoint;
  switch (status.code()) {
    case ErrorCode::kNoSuchBucket:
      return "bucket '" + bucket + "' does not exist at endpoint " + endpoint +
             ": check the bucket name, and that --endpoint/--region are the bucket's region";
    case ErrorCode::kNotFound:
      return "bucket '" + bucket + "' does not exist at endpoint " + endpoint +
             " (or the endpoint is not an object store)";
    case ErrorCode::kSignatureDoesNotMatch:
      return "the access key secret does not match the access key id: check the secret "
             "(OSS_ACCESS_KEY_SECRET, the credentials file or the passwd file)";
    case ErrorCode::kInvalidAccessKeyId:
      return "the access key id is unknown or disabled: check OSS_ACCESS_KEY_ID (or the "
             "credentials file), and that it belongs to this account";
    case ErrorCode::kAccessDenied:
      return "the credentials are valid but may not list bucket '" + bucket +
             "': check the RAM policy (oss:ListObjects on the bucket and prefix), and that "
             "--region is the bucket's region";
    case ErrorCode::kRequestTimeTooSkewed:
      return "this machine's clock is more than 15 minutes off: fix the time (NTP/chrony)";
    case ErrorCode::kTokenExpired:
      return "the STS security token has expired: refresh the credentials";
    case ErrorCode::kNetwork:
    case ErrorCode::kTimeout:
      return "cannot reach endpoint " + endpoint +
             ": check --endpoint (scheme, host, port), DNS, the network path and any proxy";
    case ErrorCode::kProtocol:
      return "endpoint " + endpoint + " did not answer like an " +
             (config.client.protocol == Protocol::kS3 ? "S3" : "OSS") +
             " server: check --endpoint and --protocol";
    default:
      return "check --endpoint, --region and the credentials";
  }
}

std::string DescribeBucket(const config::MountConfig& config) {
  return "bucket '" + config.client.bucket + "' at endpoint " + config.client.endpoint;
}

bool WaitForStartupAnswer(const std::future<Status>& answer, const std::string& what,
                          std::chrono::seconds timeout, const WaitingNotice& on_waiting) {
  constexpr std::chrono::seconds kFirstNotice{5}, kNoticeEvery{15};
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  for (auto next_notice = start + kFirstNotice;; next_notice += kNoticeEvery) {
    if (answer.wait_until(std::min(deadline, next_notice)) == std::future_status::ready) {
      return true;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    const auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - start);
    const std::string note = "waiting for " + what + ": " + std::to_string(waited.count()) +
                             " s so far, at most " + std::to_string(timeout.count()) + " s";
    spdlog::warn("{}", note);
    if (on_waiting) on_waiting(note);
  }
}

Status ProbeBucket(ObjectClient& client, const config::MountConfig& config,
                   std::chrono::seconds timeout, const WaitingNotice& on_waiting) {
  ListRequest request;
  request.prefix = config.fs.prefix;
  request.delimiter = "/";
  request.max_keys = 1;
  auto done = std::make_shared<std::promise<Status>>();
  std::future<Status> result = done->get_future();
  client.List(request, [done](Result<ListPage> page) { done->set_value(page.status()); });
  const std::string where = DescribeBucket(config);
  if (!WaitForStartupAnswer(result, where + " to answer the start-up listing", timeout,
                            on_waiting)) {
    return Status(ErrorCode::kTimeout,
                  "listing " + where + " did not finish within " + std::to_string(timeout.count()) +
                      " s\nhint: " + ProbeHint(Status(ErrorCode::kTimeout, ""), config));
  }
  Status st = result.get();
  if (st.ok()) return st;
  Status out(st.code(),
             "cannot list " + where + ": " + st.ToString() + "\nhint: " + ProbeHint(st, config),
             st.retryable());
  return out;
}

void WarmRootListing(fs::Filesystem& filesystem, std::chrono::seconds timeout) {
  auto opened = std::make_shared<std::promise<Result<uint64_t>>>();
  auto handle_future = opened->get_future();
  filesystem.OpenDir(fs::kRootInode, [opened](Result<uint64_t> r) { opened->set_value(r); });
  if (handle_future.wait_for(timeout) != std::future_status::ready) {
    spdlog::info("root listing not ready within {} s; continuing", timeout.count());
    return;
  }
  Result<uint64_t> handle = handle_future.get();
  if (!handle.ok()) {
    spdlog::warn("cannot open the mount root: {}", handle.status().ToString());
    return;
  }
  auto listed = std::make_shared<std::promise<Status>>();
  auto listed_future = listed->get_future();
  filesystem.ReadDir(fs::kRootInode, *handle, 0, [listed](Result<std::vector<fs::DirEntry>> r) {
    if (r.ok()) spdlog::debug("root listing: first batch {}", r->size());
    listed->set_value(r.status());
  });
  if (listed_future.wait_for(timeout) != std::future_status::ready) {
    // The handle stays open until the listing ends: releasing it under a running ReadDir
    // is allowed by the contract, but there is no need to race it.
    spdlog::info("root listing not ready within {} s; continuing", timeout.count());
    return;
  }
  if (Status st = listed_future.get(); !st.ok()) {
    spdlog::warn("cannot list the mount root: {}", st.ToString());
  }
  filesystem.ReleaseDir(fs::kRootInode, *handle);
}

}  // namespace ossmount::daemon
