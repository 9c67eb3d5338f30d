#include "object/signer_choice.h"

namespace ossmount::object {

SignerChoice ChooseSigner(const ClientOptions& options, bool for_data_endpoint) {
  std::string region = options.region;
  if (for_data_endpoint && !options.data_signing_region.empty()) {
    region = options.data_signing_region;
  }
  if (options.protocol == Protocol::kS3) {
    return {SignerKind::kAwsSigV4, region.empty() ? "us-east-1" : region};
  }
  // V4 needs a region for its scope. Without a region OSS still accepts V1, so fall back
  // rather than fail the mount.
  if (options.oss_signature == OssSignatureVersion::kV4 && !region.empty()) {
    return {SignerKind::kOssV4, region};
  }
  return {SignerKind::kOssV1, ""};
}

std::shared_ptr<const auth::Signer> MakeSigner(const SignerChoice& choice) {
  switch (choice.kind) {
    case SignerKind::kOssV1:
      return auth::MakeOssV1Signer();
    case SignerKind::kOssV4:
      return auth::MakeOssV4Signer(choice.region);
    case SignerKind::kAwsSigV4:
      return auth::MakeAwsSigV4Signer(choice.region);
  }
  return auth::MakeOssV1Signer();
}

}  // namespace ossmount::object
