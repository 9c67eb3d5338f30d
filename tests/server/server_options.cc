// Command-line parsing for ossmount-testserver (CLI11).
#include <CLI/CLI.hpp>
#include <sstream>

#include "server.h"

namespace ossmount::testserver {

Result<ServerOptions> ParseServerOptions(int argc, char** argv, int* exit_code) {
  ServerOptions o;
  CLI::App app{
      "ossmount-testserver: an OSS/S3 object server over a directory tree, with fault "
      "injection, for ossmount's tests and benchmarks. Each subdirectory of --root is a "
      "bucket; keys are relative file paths. Control API (unauthenticated): GET "
      "/_ossmount/stats, POST /_ossmount/reset, GET|POST /_ossmount/faults?<setting>=<value>, "
      "POST /_ossmount/rescan."};
  std::string auth = "on";
  std::optional<int64_t> sts_expires;
  app.add_option("--root", o.root, "Directory whose subdirectories are buckets")->required();
  app.add_option("--bucket", o.buckets, "Bucket to create (as ROOT/NAME) if missing; repeatable");
  app.add_option("--host", o.host, "Address to listen on")->capture_default_str();
  app.add_option("--port", o.port, "Port; 0 picks a free one")->capture_default_str();
  app.add_option("--port-file", o.port_file, "Write the chosen port to this file");
  app.add_option("--threads", o.threads, "I/O threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--auth", auth, "Verify signatures (on) or accept anything (off)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--access-key-id", o.auth.access_key_id, "The one access key id accepted");
  app.add_option("--access-key-secret", o.auth.access_key_secret, "Its secret");
  app.add_option("--sts-token", o.auth.sts_token, "Require this security token");
  app.add_option("--sts-expires-at", sts_expires, "Unix time after which the token is expired");
  std::string region;
  app.add_option("--region", region,
                 "Region of this endpoint: GetBucketLocation reports it and V4/SigV4 scopes "
                 "must name it (default: cn-hangzhou, any scope accepted)");
  app.add_option("--min-part-size", o.api.min_part_size,
                 "Smallest multipart part (except the last) Complete accepts, bytes")
      ->capture_default_str();
  app.add_option("--copy-object-limit", o.api.copy_object_limit,
                 "Largest source CopyObject copies, bytes (above: 400; use UploadPartCopy)")
      ->capture_default_str();
  app.add_option("--append-object-limit", o.api.append_object_limit,
                 "Largest object AppendObject grows, bytes (past it: 400 InvalidArgument)")
      ->capture_default_str();
  app.add_option("--memory-cache-mb", o.memory_cache_mb,
                 "Budget for caching small file contents in memory")
      ->capture_default_str();
  app.add_option("--max-body-mb", o.max_body_mb, "Largest request body accepted")
      ->capture_default_str();
  app.add_option("--idle-timeout-s", o.idle_timeout_s,
                 "Close idle keep-alive connections after this")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "Seed of the fault generator")->capture_default_str();
  app.add_option("--origin", o.origin,
                 "Accelerator mode: serve GET/HEAD from memory, fetching misses from this "
                 "ossmount-testserver (http://HOST:PORT), signed with --access-key-id/secret");
  app.add_option("--accelerator-cache-mb", o.accelerator_cache_mb,
                 "Accelerator mode: bytes of objects held in memory, MiB")
      ->capture_default_str();
  app.add_flag("--access-log", o.access_log, "Log one line per request to stderr");
  app.add_option("--tls-cert", o.tls_cert,
                 "Serve HTTPS (only) with this PEM certificate chain (needs --tls-key)");
  app.add_option("--tls-key", o.tls_key, "PEM private key of --tls-cert");

  // Fault settings are parsed by FaultSettings::Set so the control API accepts the same.
  const char* fault_flags[][2] = {
      {"ttfb-ms", "Fixed time to first byte, ms (all object-API requests)"},
      {"ttfb-p50-ms", "Lognormal time to first byte: median, ms (with --ttfb-p99-ms)"},
      {"ttfb-p99-ms", "Lognormal time to first byte: 99th percentile, ms"},
      {"error-rate", "Probability of an injected error response"},
      {"error-kinds", "Comma list of 500,502,503,504,429,SlowDown,QpsLimitExceeded"},
      {"retry-after", "Retry-After seconds on injected errors"},
      {"retry-after-rate", "Fraction of injected errors that carry Retry-After (default 1)"},
      {"reset-rate", "Probability of a connection reset (before the head or in the body)"},
      {"truncate-rate", "Probability of a body shorter than Content-Length, then close"},
      {"stall-rate", "Probability of a stall after part of the body"},
      {"stall-ms", "Stall duration, ms"},
      {"bandwidth-mbps", "Per-connection body pacing, megabits per second"},
      {"corrupt-rate", "Probability of one flipped body byte (headers stay right)"},
      {"corrupt-key", "Flip one body byte of every ranged GET of keys containing this"},
      {"malformed",
       "Comma list of malformed-response kinds: invalid-xml,truncated-xml,huge-xml,html-200,"
       "short-content-length,long-content-length,missing-headers,wrong-crc"},
      {"malformed-rate", "Probability that a successful response is malformed (default 1)"},
      {"fault-ops", "Operations the faults apply to: get,head,list,put,delete,append,other,all"},
      {"write-error-rate",
       "Probability that a write request is refused with a --write-error-kinds error"},
      {"write-error-kinds", "Comma list of error kinds for write errors (default 503)"},
      {"write-reset-rate", "Probability of a connection reset in a write request's body"},
      {"write-truncate-rate",
       "Probability that a write request's body is read in part, then 400 IncompleteBody"},
      {"lost-complete-rate",
       "Probability that a successful CompleteMultipartUpload's answer is dropped (reset)"},
      {"lost-copy-rate",
       "Probability that a successful CopyObject's or UploadPartCopy's answer is dropped"},
      {"unanswered-complete",
       "Never answer a CompleteMultipartUpload: 'applied' executes it first, 'ignored' not"},
      {"write-fault-prefix", "Write faults only for keys starting with this"},
      {"synthetic-listing",
       "PREFIX=COUNT: listings of exactly PREFIX show COUNT generated keys (0: never ending)"},
      {"list-loop-prefix",
       "Listings under this prefix never end: continuation tokens alternate A, B, A, ..."},
  };
  std::vector<std::pair<std::string, std::string>> fault_values(std::size(fault_flags));
  for (size_t i = 0; i < std::size(fault_flags); ++i) {
    fault_values[i].first = fault_flags[i][0];
    app.add_option("--" + fault_values[i].first, fault_values[i].second, fault_flags[i][1]);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    *exit_code = app.exit(e, out, err);
    return Status(ErrorCode::kInvalidArgument, out.str() + err.str());
  }
  *exit_code = 2;
  for (const auto& [name, value] : fault_values) {
    if (value.empty()) continue;
    Status s = o.faults.Set(name, value);
    if (!s.ok()) return Status(ErrorCode::kInvalidArgument, "--" + name + ": " + s.message());
  }
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    return Status(ErrorCode::kInvalidArgument, "--tls-cert and --tls-key go together");
  }
  o.auth.enabled = auth == "on";
  if (!region.empty()) o.api.region = o.auth.region = region;
  o.auth.sts_expires_at = sts_expires;
  if (o.auth.enabled && (o.auth.access_key_id.empty() || o.auth.access_key_secret.empty())) {
    return Status(ErrorCode::kInvalidArgument,
                  "--auth on needs --access-key-id and --access-key-secret (or use --auth off)");
  }
  return o;
}

}  // namespace ossmount::testserver
