#include "abort_uploads_command.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <future>
#include <thread>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "bucket_connection.h"
#include "config/mount_config.h"
#include "config/option_values.h"

namespace ossmount::daemon {
namespace {

constexpr const char* kAbortUploadsUsage =
    "usage: ossmount abort-uploads BUCKET[:/PREFIX] [--older-than AGE] [--dry-run] "
    "[--endpoint ...] [other mount options]\n";

std::string UtcTime(int64_t sec) {
  if (sec == 0) return "an unknown time";
  const std::time_t t = static_cast<std::time_t>(sec);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

std::vector<OpenUpload> UploadsToAbort(const std::vector<OpenUpload>& open, int64_t now_sec,
                                       int64_t older_than_sec) {
  std::vector<OpenUpload> chosen;
  for (const OpenUpload& upload : open) {
    const bool known = upload.initiated_sec > 0;
    if (older_than_sec == 0 || (known && now_sec - upload.initiated_sec >= older_than_sec)) {
      chosen.push_back(upload);
    }
  }
  return chosen;
}

int AbortUploadsCommand(const std::vector<std::string>& args) {
  std::vector<std::string> rest;
  int64_t older_than_sec = 24 * 3600;
  bool dry_run = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--dry-run") {
      dry_run = true;
    } else if (args[i] == "--older-than" || args[i].rfind("--older-than=", 0) == 0) {
      std::string value;
      if (args[i] == "--older-than") {
        if (i + 1 == args.size()) {
          std::fprintf(stderr, "ossmount abort-uploads: --older-than needs an age\n%s",
                       kAbortUploadsUsage);
          return 2;
        }
        value = args[++i];
      } else {
        value = args[i].substr(std::string("--older-than=").size());
      }
      auto age = config::ParseDuration("--older-than", value);
      if (!age.ok()) {
        std::fprintf(stderr, "ossmount abort-uploads: %s\n", age.status().message().c_str());
        return 2;
      }
      older_than_sec = std::chrono::duration_cast<std::chrono::seconds>(*age).count();
    } else if (args[i] == "-h" || args[i] == "--help") {
      std::printf("%s", kAbortUploadsUsage);
      return 0;
    } else {
      rest.push_back(args[i]);
    }
  }
  // The mount's parser wants a mountpoint; none is used (no mount checks run here).
  std::vector<std::string> mount_args = rest;
  mount_args.push_back("/");
  auto parsed = config::ParseCommandLine(mount_args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "ossmount abort-uploads: %s\n%s", parsed.status().message().c_str(),
                 kAbortUploadsUsage);
    return 2;
  }
  if (parsed->command != config::Command::kMount) {
    std::printf("%s", kAbortUploadsUsage);
    return 0;
  }
  config::MountConfig cfg = std::move(parsed->config);
  // The client's own notes (retries) go to stderr, beside this command's errors.
  spdlog::set_default_logger(spdlog::stderr_color_mt("abort-uploads"));
  spdlog::set_level(spdlog::level::warn);

  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  std::thread runner([&io] { io.run(); });
  auto finish = [&](int code) {
    guard.reset();
    io.stop();
    runner.join();
    return code;
  };
  auto connection = ConnectToBucket(io, cfg);
  if (!connection.ok()) {
    std::fprintf(stderr, "ossmount abort-uploads: %s\n", connection.status().message().c_str());
    return finish(1);
  }
  std::shared_ptr<ObjectClient> client = connection->client;

  std::promise<Result<std::vector<OpenUpload>>> listed;
  client->ListMultipartUploads(cfg.fs.prefix, [&listed](Result<std::vector<OpenUpload>> r) {
    listed.set_value(std::move(r));
  });
  auto open = listed.get_future().get();
  if (!open.ok()) {
    std::fprintf(stderr, "ossmount abort-uploads: listing the open uploads under '%s': %s\n",
                 cfg.fs.prefix.c_str(), open.status().message().c_str());
    return finish(1);
  }
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  const auto chosen = UploadsToAbort(*open, now, older_than_sec);
  int failures = 0;
  for (const OpenUpload& upload : chosen) {
    if (dry_run) {
      std::printf("would abort %s (upload %s, started %s)\n", upload.key.c_str(),
                  upload.upload_id.c_str(), UtcTime(upload.initiated_sec).c_str());
      continue;
    }
    std::promise<Status> aborted;
    client->AbortMultipart(upload.key, upload.upload_id,
                           [&aborted](Status s) { aborted.set_value(std::move(s)); });
    Status s = aborted.get_future().get();
    if (s.ok()) {
      std::printf("aborted %s (upload %s, started %s)\n", upload.key.c_str(),
                  upload.upload_id.c_str(), UtcTime(upload.initiated_sec).c_str());
    } else {
      ++failures;
      std::fprintf(stderr, "ossmount abort-uploads: %s (upload %s): %s\n", upload.key.c_str(),
                   upload.upload_id.c_str(), s.message().c_str());
    }
  }
  std::printf("%zu open upload(s) under '%s/%s'; %s %zu started more than %llds ago%s\n",
              open->size(), cfg.client.bucket.c_str(), cfg.fs.prefix.c_str(),
              dry_run ? "would abort" : "aborted", chosen.size() - static_cast<size_t>(failures),
              static_cast<long long>(older_than_sec),
              failures > 0 ? " (some failed: see above)" : "");
  return finish(failures > 0 ? 1 : 0);
}

}  // namespace ossmount::daemon
