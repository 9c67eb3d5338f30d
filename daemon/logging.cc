#include "logging.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace ossmount::daemon {
namespace {

// The file sink behind --log-file, replaceable by Reopen() (SIGHUP) while the logger runs.
class ReopenableFileSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  ReopenableFileSink(std::string path, uint64_t max_size, int max_files)
      : path_(std::move(path)), max_size_(max_size), max_files_(max_files) {
    inner_ = Open();  // throws spdlog_ex when the file cannot be opened
  }

  // A failure keeps the old file (and reports on stderr: the log itself may be the problem).
  void Reopen() {
    std::lock_guard lock(mutex_);
    try {
      inner_ = Open();
      inner_->set_formatter(formatter_->clone());
    } catch (const spdlog::spdlog_ex& e) {
      std::fprintf(stderr, "ossmount: cannot reopen log file %s: %s\n", path_.c_str(), e.what());
    }
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override { inner_->log(msg); }
  void flush_() override { inner_->flush(); }
  void set_formatter_(std::unique_ptr<spdlog::formatter> f) override {
    inner_->set_formatter(f->clone());
    spdlog::sinks::base_sink<std::mutex>::set_formatter_(std::move(f));
  }
  void set_pattern_(const std::string& pattern) override {
    set_formatter_(std::make_unique<spdlog::pattern_formatter>(pattern));
  }

 private:
  std::shared_ptr<spdlog::sinks::sink> Open() {
    // The inner sinks are only used under our mutex: the _st variants suffice.
    if (max_size_ == 0) return std::make_shared<spdlog::sinks::basic_file_sink_st>(path_);
    return std::make_shared<spdlog::sinks::rotating_file_sink_st>(
        path_, static_cast<size_t>(max_size_), static_cast<size_t>(max_files_));
  }

  std::string path_;
  uint64_t max_size_;
  int max_files_;
  std::shared_ptr<spdlog::sinks::sink> inner_;
};

// "<N>": the syslog priority journald reads at the start of a stderr line.
class SyslogPriorityFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    int priority = LOG_INFO;
    switch (msg.level) {
      case spdlog::level::trace:
      case spdlog::level::debug:
        priority = LOG_DEBUG;
        break;
      case spdlog::level::info:
        priority = LOG_INFO;
        break;
      case spdlog::level::warn:
        priority = LOG_WARNING;
        break;
      case spdlog::level::err:
        priority = LOG_ERR;
        break;
      case spdlog::level::critical:
        priority = LOG_CRIT;
        break;
      default:
        break;
    }
    char text[4] = {'<', static_cast<char>('0' + priority), '>', 0};
    dest.append(text, text + 3);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<SyslogPriorityFlag>();
  }
};

std::shared_ptr<ReopenableFileSink> g_file_sink;
std::atomic<int> g_configured_level{spdlog::level::info};
int g_signal_pipe[2] = {-1, -1};

void OnLogSignal(int sig) {
  int saved = errno;
  char c = sig == SIGHUP ? 'H' : 'U';
  if (g_signal_pipe[1] >= 0) {
    ssize_t ignored = write(g_signal_pipe[1], &c, 1);
    (void)ignored;
  }
  errno = saved;
}

}  // namespace

bool StderrIsJournal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (stream == nullptr) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(stream, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st {};
  if (fstat(STDERR_FILENO, &st) != 0) return false;
  return st.st_dev == dev && st.st_ino == ino;
}

Status SetupLogging(const config::DaemonSettings& settings, bool to_stderr) {
  std::vector<spdlog::sink_ptr> sinks;
  bool journal = to_stderr && StderrIsJournal();
  try {
    if (to_stderr) {
      auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();  // no colour codes
      auto formatter = std::make_unique<spdlog::pattern_formatter>();
      if (journal) {
        formatter->add_flag<SyslogPriorityFlag>('*').set_pattern("%*%l %v");
      } else {
        formatter->set_pattern("%Y-%m-%d %H:%M:%S.%e %l [%t] %v");
      }
      sink->set_formatter(std::move(formatter));
      sinks.push_back(sink);
    }
    if (!settings.log_file.empty()) {
      g_file_sink = std::make_shared<ReopenableFileSink>(settings.log_file, settings.log_max_size,
                                                         settings.log_max_files);
      g_file_sink->set_pattern("%Y-%m-%d %H:%M:%S.%e %l [%t] %v");
      sinks.push_back(g_file_sink);
    }
    if (sinks.empty()) {
      auto sink =
          std::make_shared<spdlog::sinks::syslog_sink_mt>("ossmount", LOG_PID, LOG_DAEMON, false);
      sink->set_pattern("%l %v");  // syslog stamps the time itself
      sinks.push_back(sink);
    }
  } catch (const spdlog::spdlog_ex& e) {
    return Status(ErrorCode::kInvalidArgument,
                  "--log-file '" + settings.log_file + "' cannot be opened: " + e.what());
  }
  auto logger = std::make_shared<spdlog::logger>("ossmount", sinks.begin(), sinks.end());
  auto level = spdlog::level::from_str(settings.log_level);
  g_configured_level = level;
  logger->set_level(level);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
  // Lines below warn are flushed at least every second, so `tail -f` and tests see them.
  spdlog::flush_every(std::chrono::seconds(1));
  return Status::Ok();
}

void ReopenLogFile() {
  if (g_file_sink) g_file_sink->Reopen();
}

const char* ToggleDebugLevel() {
  auto configured = static_cast<spdlog::level::level_enum>(g_configured_level.load());
  auto now = spdlog::default_logger()->level();
  auto next =
      (now == configured && configured > spdlog::level::debug) ? spdlog::level::debug : configured;
  spdlog::default_logger()->set_level(next);
  return spdlog::level::to_string_view(next).data();
}

void StartLogSignalThread(std::function<void()> on_reopen) {
  if (pipe2(g_signal_pipe, O_CLOEXEC) != 0) {
    spdlog::warn("log signals unavailable: pipe2: {}", std::strerror(errno));
    return;
  }
  fcntl(g_signal_pipe[1], F_SETFL, O_NONBLOCK);  // a signal handler must never block
  std::thread([on_reopen = std::move(on_reopen)] {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    char c;
    while (true) {
      ssize_t n = read(g_signal_pipe[0], &c, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      if (c == 'H') {
        ReopenLogFile();
        if (on_reopen) on_reopen();
        spdlog::info("SIGHUP: log files reopened");
      } else {
        // Logged at warn so the change shows whatever the level is.
        spdlog::warn("SIGUSR2: log level now {}", ToggleDebugLevel());
      }
    }
  }).detach();
  struct sigaction sa {};
  sa.sa_handler = OnLogSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGHUP, &sa, nullptr);
  sigaction(SIGUSR2, &sa, nullptr);
}

}  // namespace ossmount::daemon
