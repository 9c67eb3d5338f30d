// Which signature scheme and region sign requests to each endpoint.
//   OSS: V4 with `region` when oss_signature is kV4 and a region is set, else V1.
//   S3:  AWS SigV4 with `region`, "us-east-1" when none is set.
//   The data endpoint uses data_signing_region when set, else the same region.
// Pure; thread-safe.
#pragma once

#include <memory>
#include <string>

#include "auth/signer.h"
#include "ossmount/client_options.h"

namespace ossmount::object {

enum class SignerKind { kOssV1, kOssV4, kAwsSigV4 };

struct SignerChoice {
  SignerKind kind;
  std::string region;  // "" for OSS V1
};

SignerChoice ChooseSigner(const ClientOptions& options, bool for_data_endpoint);

// Builds the signer (uses src/auth).
std::shared_ptr<const auth::Signer> MakeSigner(const SignerChoice& choice);

}  // namespace ossmount::object
