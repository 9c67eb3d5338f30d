#include "logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/syslog_sink.h>
#include <spdlog/spdlog.h>
#include <syslog.h>

#include <vector>

namespace ossmount::daemon {

Status SetupLogging(const config::DaemonSettings& settings, bool to_stderr) {
  std::vector<spdlog::sink_ptr> sinks;
  try {
    if (to_stderr) sinks.push_back(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    if (!settings.log_file.empty()) {
      sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(settings.log_file));
    }
    if (sinks.empty()) {
      sinks.push_back(
          std::make_shared<spdlog::sinks::syslog_sink_mt>("ossmount", LOG_PID, LOG_DAEMON, false));
    }
  } catch (const spdlog::spdlog_ex& e) {
    return Status(ErrorCode::kInvalidArgument,
                  "--log-file '" + settings.log_file + "' cannot be opened: " + e.what());
  }
  auto logger = std::make_shared<spdlog::logger>("ossmount", sinks.begin(), sinks.end());
  logger->set_level(spdlog::level::from_str(settings.log_level));
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ [%t] %v");
  return Status::Ok();
}

}  // namespace ossmount::daemon
