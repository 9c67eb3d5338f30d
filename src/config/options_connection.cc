// Connection options: protocol, endpoints and regions, signing, TLS, the request cap,
// timeouts and retries -> MountConfig::client (the bucket comes from the source).
#include <chrono>
#include <string>

#include "config/option_group.h"

namespace ossmount::config {
namespace {

class ConnectionGroup final : public OptionGroup {
 public:
  void Define(OptionDefiner& d) override {
    d.SetHeading(kConnectionHeading);
    d.Value("--endpoint", endpoint_,
            "Endpoint for listings and metadata (and data when no --data-endpoint), e.g. "
            "oss-cn-beijing-internal.aliyuncs.com or http://127.0.0.1:9000");
    d.Value("--data-endpoint", data_endpoint_,
            "Endpoint for object data, e.g. the OSS Accelerator "
            "cn-beijing-internal.oss-data-acc.aliyuncs.com");
    d.Value("--region", region_,
            "Signing region (OSS V4 / SigV4), e.g. cn-beijing; inferred from an "
            "aliyuncs.com endpoint");
    d.Value("--data-region", data_region_,
            "Signing region for --data-endpoint (default: --region)");
    d.Value("--protocol", protocol_, "oss (default) or s3");
    d.Flag("--path-style", path_style_,
           "Address the bucket as ENDPOINT/BUCKET/KEY instead of BUCKET.ENDPOINT/KEY");
    d.Value("--signature-version", signature_version_,
            "OSS signature: v4 (default when a region is known) or v1");
    d.Value("--ca-bundle", ca_bundle_, "PEM file of CAs to trust instead of the system's");
    d.Flag("--no-verify-tls", no_verify_tls_,
           "DANGEROUS: do not verify TLS certificates (testing only)");
    d.Value("--max-in-flight", max_in_flight_,
            "Requests on the wire at once, all endpoints together (default 256)");
    d.Value("--connect-timeout", connect_timeout_,
            "Connect timeout, e.g. 5s or 500ms (default 5s)");
    d.Value("--request-timeout", request_timeout_,
            "Give up one attempt of a request after this long, e.g. 30s (default: no "
            "limit; the stall deadline still applies)");
    d.Value("--retries", retries_,
            "Retries after a failed attempt for transient errors (default 4)");
    d.Value("--retry-budget", retry_budget_,
            "Longest time one request keeps retrying before the read fails (EIO), e.g. "
            "30s (default 120s)");
    d.Value("--stall-timeout", stall_timeout_,
            "Abandon (and retry) a transfer that moves under 1 KiB/s for this long, whole "
            "seconds, e.g. 5s (default 15s)");
  }

  Status Validate(const OptionContext& ctx, MountConfig& c) const override {
    Status st = ValidateProtocol(ctx, c.client);
    if (!st.ok()) return st;
    st = ValidateEndpoints(ctx, c.client);
    if (!st.ok()) return st;
    st = ValidateSigning(ctx, c.client);
    if (!st.ok()) return st;
    return ValidateTransport(ctx, c);
  }

 private:
  // The source's URL scheme (oss://, s3://) sets the protocol; --protocol may only agree.
  Status ValidateProtocol(const OptionContext& ctx, ClientOptions& client) const {
    Protocol protocol = ctx.source.url_protocol.value_or(Protocol::kOss);
    if (ctx.given("--protocol")) {
      Protocol flag;
      if (protocol_ == "oss") {
        flag = Protocol::kOss;
      } else if (protocol_ == "s3") {
        flag = Protocol::kS3;
      } else {
        return InvalidOption("--protocol: '" + protocol_ + "' is not valid; expected oss or s3");
      }
      if (ctx.source.url_protocol && *ctx.source.url_protocol != flag) {
        return InvalidOption("--protocol " + protocol_ + " contradicts the source '" +
                             ctx.source_text + "'; drop one of them");
      }
      protocol = flag;
    }
    client.protocol = protocol;
    client.path_style = path_style_;
    return Status::Ok();
  }

  // Without --endpoint, the region's public endpoint; without --region, the region an
  // aliyuncs.com endpoint names.
  Status ValidateEndpoints(const OptionContext& ctx, ClientOptions& client) const {
    client.region = region_;
    if (ctx.given("--endpoint")) {
      auto ep = ParseEndpoint("--endpoint", endpoint_);
      if (!ep.ok()) return ep.status();
      client.endpoint = *ep;
    }
    if (client.region.empty() && !client.endpoint.empty()) {
      client.region = RegionFromEndpoint(client.endpoint);
    }
    if (client.endpoint.empty()) {
      if (client.region.empty()) {
        return InvalidOption(
            "--endpoint is required (e.g. --endpoint oss-cn-beijing-internal.aliyuncs.com), or "
            "give --region to use the region's public endpoint");
      }
      client.endpoint = client.protocol == Protocol::kOss
                            ? "https://oss-" + client.region + ".aliyuncs.com"
                            : "https://s3." + client.region + ".amazonaws.com";
    }
    if (ctx.given("--data-endpoint")) {
      auto ep = ParseEndpoint("--data-endpoint", data_endpoint_);
      if (!ep.ok()) return ep.status();
      client.data_endpoint = *ep;
    }
    if (ctx.given("--data-region")) {
      if (client.data_endpoint.empty()) {
        return InvalidOption(
            "--data-region needs --data-endpoint (it is the signing region for it)");
      }
      if (data_region_.empty()) return InvalidOption("--data-region: is empty");
      client.data_signing_region = data_region_;
    }
    return Status::Ok();
  }

  // S3 always signs with SigV4; OSS uses V4 when a region is known, else V1.
  Status ValidateSigning(const OptionContext& ctx, ClientOptions& client) const {
    if (client.protocol == Protocol::kS3) {
      if (ctx.given("--signature-version")) {
        return InvalidOption(
            "--signature-version applies to --protocol oss only (S3 always uses SigV4)");
      }
      if (client.region.empty()) client.region = "us-east-1";
      return Status::Ok();
    }
    if (!ctx.given("--signature-version")) {
      client.oss_signature =
          client.region.empty() ? OssSignatureVersion::kV1 : OssSignatureVersion::kV4;
      return Status::Ok();
    }
    if (signature_version_ == "v1") {
      client.oss_signature = OssSignatureVersion::kV1;
    } else if (signature_version_ == "v4") {
      if (client.region.empty()) {
        return InvalidOption("--signature-version v4 needs --region (e.g. --region cn-beijing)");
      }
      client.oss_signature = OssSignatureVersion::kV4;
    } else {
      return InvalidOption("--signature-version: '" + signature_version_ +
                           "' is not valid; expected v1 or v4");
    }
    return Status::Ok();
  }

  Status ValidateTransport(const OptionContext& ctx, MountConfig& c) const {
    ClientOptions& client = c.client;
    client.ca_bundle = ca_bundle_;
    if (ctx.given("--ca-bundle") && ca_bundle_.empty()) {
      return InvalidOption("--ca-bundle: is empty");
    }
    if (no_verify_tls_) {
      client.verify_tls = false;
      c.warnings.push_back(
          "--no-verify-tls: TLS certificates are NOT verified; anyone on the network path can "
          "impersonate the server and read your credentials' signatures and data");
    }
    if (ctx.given("--max-in-flight")) {
      auto v = ParseInteger("--max-in-flight", max_in_flight_, 1, 4096);
      if (!v.ok()) return v.status();
      client.max_in_flight = static_cast<int>(*v);
      client.max_connections_per_host = static_cast<int>(*v);
    }
    if (ctx.given("--connect-timeout")) {
      auto v = ParseDuration("--connect-timeout", connect_timeout_);
      if (!v.ok()) return v.status();
      if (v->count() == 0) return InvalidOption("--connect-timeout: must be more than 0");
      client.timeouts.connect = *v;
    }
    if (ctx.given("--request-timeout")) {
      auto v = ParseDuration("--request-timeout", request_timeout_);
      if (!v.ok()) return v.status();
      client.timeouts.request = *v;
    }
    if (ctx.given("--retries")) {
      auto v = ParseInteger("--retries", retries_, 0, 100);
      if (!v.ok()) return v.status();
      client.retry.max_attempts = static_cast<int>(*v) + 1;
    }
    if (ctx.given("--retry-budget")) {
      auto v = ParseDuration("--retry-budget", retry_budget_);
      if (!v.ok()) return v.status();
      if (v->count() == 0) return InvalidOption("--retry-budget: must be more than 0");
      client.retry.total_budget = *v;
    }
    if (ctx.given("--stall-timeout")) {
      auto v = ParseDuration("--stall-timeout", stall_timeout_);
      if (!v.ok()) return v.status();
      // libcurl measures the low-speed window in whole seconds.
      if (v->count() < 1000 || v->count() % 1000 != 0) {
        return InvalidOption("--stall-timeout: give whole seconds, at least 1s (e.g. 5s)");
      }
      client.timeouts.low_speed_time = std::chrono::duration_cast<std::chrono::seconds>(*v);
    }
    return Status::Ok();
  }

  std::string endpoint_, data_endpoint_, region_, data_region_, protocol_, signature_version_;
  bool path_style_ = false;
  std::string ca_bundle_;
  bool no_verify_tls_ = false;
  std::string max_in_flight_, connect_timeout_, request_timeout_, retries_, retry_budget_,
      stall_timeout_;
};

}  // namespace

std::unique_ptr<OptionGroup> MakeConnectionGroup() { return std::make_unique<ConnectionGroup>(); }

}  // namespace ossmount::config
