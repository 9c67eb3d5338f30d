// Building the credentials provider from the user's configuration.
//
// Precedence, first source that yields credentials wins (documented in
// docs/CONFIGURATION.md):
//   1. anonymous, when asked for (no other source is consulted)
//   2. explicit key pair from the command line / config file
//   3. environment: OSS_ACCESS_KEY_ID / OSS_ACCESS_KEY_SECRET / OSS_SESSION_TOKEN, then
//      ALIBABA_CLOUD_ACCESS_KEY_ID / _SECRET / ALIBABA_CLOUD_SECURITY_TOKEN, then (S3 mode
//      only) AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN
//   4. credentials file: the given path, else $ALIBABA_CLOUD_CREDENTIALS_FILE, else
//      ~/.alibabacloud/credentials (OSS Connector JSON, or the Credentials tool's INI)
//   5. ossfs passwd file: the given path, else /etc/passwd-ossfs, else ~/.passwd-ossfs
//   6. ECS RAM role from the instance metadata service, when a role is configured
// A source that is configured explicitly but broken (unreadable file, loose permissions,
// malformed content) is an error, not silently skipped.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "auth/credential_sources.h"
#include "auth/credentials.h"
#include "ossmount/client_options.h"
#include "ossmount/status.h"

namespace ossmount::auth {

// The provider for the first source that has credentials, or an error that lists what was
// tried and how to provide credentials. Never puts a secret in the message.
Result<std::shared_ptr<CredentialsProvider>> BuildCredentialsProvider(
    const CredentialSources& sources);

}  // namespace ossmount::auth
