// `ossmount stats MOUNTPOINT [--once] [--json] [--interval SECONDS]` and the daemon's
// "stats" control command.
//
// The daemon answers "stats" with {"ok":true,"mountpoint":..,"pid":..,"uptime_seconds":..,
// "metrics":<metrics::Registry::Json()>}. The subcommand asks for it over the control socket
// and prints a view: requests by type and outcome with latency percentiles, bytes and
// throughput, cache hit ratios (memory, disk, page-cache opens), readahead, memory in use
// and open handles. On a terminal it refreshes every second until interrupted; with --once,
// or when stdout is not a terminal, it prints once; --json prints the daemon's JSON once.
// Exit status: 0, 1 when no daemon answers (the message says so), 2 bad arguments.
#pragma once

#include <rapidjson/document.h>

#include <chrono>
#include <string>
#include <vector>

#include "supervised_run.h"

namespace ossmount::daemon {

// The "stats" handler's result fields (a JSON object's text): also the daemon's version and
// its restarts and take-overs ("restarts", "take_overs", "last_restart_cause",
// "restart_pause_ms", "longest_restart_pause_ms").
std::string StatsResult(const std::string& mountpoint,
                        std::chrono::steady_clock::time_point started,
                        const RestartHistory& restarts);

// The human view of one stats reply; `before` (may be null) is the previous reply, taken
// `seconds` earlier, for rates. Pure: unit-testable.
std::string RenderStats(const rapidjson::Value& now, const rapidjson::Value* before,
                        double seconds);

int StatsCommand(const std::vector<std::string>& args);

}  // namespace ossmount::daemon
