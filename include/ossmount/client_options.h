// ClientOptions: everything needed to build an ObjectClient (src/object/client_factory.h).
// Filled in by src/config from the command line, environment and config file.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace ossmount {

namespace auth {
class CredentialsProvider;
}

enum class Protocol { kOss, kS3 };
enum class OssSignatureVersion { kV1, kV4 };

struct RetryOptions {
  int max_attempts = 5;                       // total attempts per request, including the first
  std::chrono::milliseconds base_delay{200};  // full jitter: rand[0,1) * min(base*2^n, max)
  std::chrono::milliseconds max_delay{20000};
  std::chrono::milliseconds total_budget{120000};  // give up after this long in all
};

struct TimeoutOptions {
  std::chrono::milliseconds connect{5000};
  // A transfer that moves fewer than low_speed_bytes per second for low_speed_time is
  // abandoned (and retried): the stall deadline.
  std::chrono::seconds low_speed_time{15};
  long low_speed_bytes = 1024;
  std::chrono::milliseconds request{0};  // whole-request cap per attempt; 0 = none
};

struct ClientOptions {
  Protocol protocol = Protocol::kOss;
  std::string bucket;
  // "https://oss-cn-beijing-internal.aliyuncs.com", "http://127.0.0.1:9000", or a bare
  // host (https is assumed). Used for listing and metadata, and for data when no
  // data_endpoint is set.
  std::string endpoint;
  // Optional: endpoint for GET/HEAD of object data (OSS Accelerator). A request that fails
  // there with a connection error is retried on `endpoint`.
  std::string data_endpoint;
  std::string region;               // V4 / SigV4 signing region
  std::string data_signing_region;  // signing region for data_endpoint; "" = region
  OssSignatureVersion oss_signature = OssSignatureVersion::kV4;  // V1 when region is empty
  bool path_style = false;  // https://endpoint/bucket/key instead of bucket.endpoint
  bool verify_tls = true;
  std::string ca_bundle;  // PEM file; "" = system CAs
  std::shared_ptr<auth::CredentialsProvider> credentials;

  RetryOptions retry;
  TimeoutOptions timeouts;
  int max_in_flight = 256;  // requests on the wire at once, all endpoints together
  int max_connections_per_host = 256;
  bool verify_crc64 = true;
};

}  // namespace ossmount
