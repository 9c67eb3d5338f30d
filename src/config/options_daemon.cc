// Daemon options: the process itself (foreground, worker threads), its logs and what it
// exposes for observation (audit log, Prometheus metrics) -> MountConfig::daemon.
#include <algorithm>
#include <array>
#include <boost/asio/ip/address.hpp>
#include <string>
#include <string_view>

#include "config/option_group.h"

namespace ossmount::config {
namespace {

class DaemonGroup final : public OptionGroup {
 public:
  void Define(OptionDefiner& d) override {
    d.SetHeading(kMountHeading);
    d.Flag("-f,--foreground", foreground_, "Stay in the foreground, log to stderr");
    d.Flag("--no-supervise", no_supervise_,
           "Serve the mount from this one process: if it dies, the mount fails until mounted "
           "again (default: a supervisor keeps the mount and restarts the daemon on it)");
    d.Flag("--take-over", take_over_,
           "Take the mount on MOUNTPOINT over from the ossmount serving it, without unmounting "
           "(an upgrade): it hands over once its files open for writing are closed (30 s at "
           "most) and exits once this one serves");
    d.Value("--log-file", log_file_,
            "Log to this file (default: stderr in the foreground, syslog otherwise)");
    d.Value("--log-level", log_level_, "trace, debug, info (default), warn or error");
    d.Flag("-d,--debug", debug_, "Log level debug and trace every FUSE request");
    d.Value("--log-max-size", log_max_size_,
            "Rotate --log-file when it reaches this size; 0 = never (default 100MiB)");
    d.Value("--log-max-files", log_max_files_,
            "Rotated log files kept (FILE.1 ... FILE.N, default 5)");
    d.Value("--audit-log", audit_log_,
            "Write one JSON line per opened file (path, pid, uid, bytes read, duration) "
            "to this file");
    d.Value("--metrics-address", metrics_address_,
            "Serve Prometheus metrics on HOST:PORT at /metrics (default: off)");
    d.Value("--io-threads", io_threads_, "Worker threads (default: the CPUs, 2 to 4)");
  }

  Status Validate(const OptionContext& ctx, MountConfig& c) const override {
    DaemonSettings& d = c.daemon;
    d.foreground = foreground_;
    d.supervise = !no_supervise_;
    d.take_over = take_over_;
    if (take_over_ && no_supervise_) {
      return InvalidOption(
          "--take-over: a mount is taken over by its supervisor; drop "
          "--no-supervise");
    }
    Status st = ValidateLogs(ctx, d);
    if (!st.ok()) return st;
    if (ctx.given("--audit-log")) {
      if (audit_log_.empty()) return InvalidOption("--audit-log: is empty");
      d.audit_log = audit_log_;
    }
    if (ctx.given("--metrics-address")) {
      st = ValidateMetricsAddress(d);
      if (!st.ok()) return st;
    }
    if (ctx.given("--io-threads")) {
      auto v = ParseInteger("--io-threads", io_threads_, 1, 64);
      if (!v.ok()) return v.status();
      d.io_threads = static_cast<int>(*v);
    }
    return Status::Ok();
  }

 private:
  Status ValidateLogs(const OptionContext& ctx, DaemonSettings& d) const {
    d.log_file = log_file_;
    if (ctx.given("--log-file") && log_file_.empty()) return InvalidOption("--log-file: is empty");
    if (debug_) {
      d.log_level = "debug";
      d.fuse_debug = true;
    }
    if (ctx.given("--log-level")) {
      static constexpr std::array<std::string_view, 5> kLevels = {"trace", "debug", "info", "warn",
                                                                  "error"};
      if (std::find(kLevels.begin(), kLevels.end(), log_level_) == kLevels.end()) {
        return InvalidOption("--log-level: '" + log_level_ +
                             "' is not valid; expected trace, debug, info, warn or error");
      }
      if (debug_ && log_level_ != "debug" && log_level_ != "trace") {
        return InvalidOption("--log-level " + log_level_ +
                             " contradicts --debug; drop one of them");
      }
      d.log_level = log_level_;
    }
    auto size = ParseSize("--log-max-size", log_max_size_);
    if (!size.ok()) return size.status();
    d.log_max_size = *size;
    if (d.log_max_size != 0 && d.log_max_size < 4096) {
      return InvalidOption("--log-max-size: " + log_max_size_ +
                           " is too small; give at least 4KiB or 0");
    }
    auto files = ParseInteger("--log-max-files", log_max_files_, 1, 1000);
    if (!files.ok()) return files.status();
    d.log_max_files = static_cast<int>(*files);
    return Status::Ok();
  }

  // HOST:PORT with a numeric IPv4 address or [IPv6]; a name would be resolved at start.
  Status ValidateMetricsAddress(DaemonSettings& d) const {
    const std::string& a = metrics_address_;
    auto colon = a.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return InvalidOption("--metrics-address: '" + a + "' is not HOST:PORT (e.g. 127.0.0.1:9464)");
    }
    std::string host = a.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    boost::system::error_code ec;
    boost::asio::ip::make_address(host, ec);
    if (ec) {
      return InvalidOption("--metrics-address: '" + host +
                           "' is not an IP address (e.g. 127.0.0.1:9464; names are not resolved)");
    }
    auto port = ParseInteger("--metrics-address", a.substr(colon + 1), 1, 65535);
    if (!port.ok()) return port.status();
    d.metrics_host = host;
    d.metrics_port = static_cast<uint16_t>(*port);
    return Status::Ok();
  }

  bool foreground_ = false, debug_ = false, no_supervise_ = false, take_over_ = false;
  std::string log_file_, log_level_, log_max_size_ = "100MiB", log_max_files_ = "5";
  std::string audit_log_, metrics_address_, io_threads_;
};

}  // namespace

std::unique_ptr<OptionGroup> MakeDaemonGroup() { return std::make_unique<DaemonGroup>(); }

}  // namespace ossmount::config
