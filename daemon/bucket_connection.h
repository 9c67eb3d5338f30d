// ConnectToBucket: the object client a mount or a one-shot command talks to its bucket
// through, built from a parsed configuration: credentials from the configured sources, the
// HTTP engine, and the OSS or S3 client. Errors say what to fix ("no usable credentials:
// ...", or the option the client refused).
//
// The engine is allocated and never freed: the process leaves with _Exit, and requests in
// flight at that moment still reference it.
#pragma once

#include <memory>
#include <string>

#include "config/mount_config.h"
#include "ossmount/object_client.h"
#include "ossmount/status.h"

namespace boost::asio {
class io_context;
}

namespace ossmount::daemon {

struct BucketConnection {
  std::shared_ptr<ObjectClient> client;
  std::string credentials;  // where the credentials came from, for the log (never a secret)
};

// Sets config.client.credentials to the provider it builds.
Result<BucketConnection> ConnectToBucket(boost::asio::io_context& io, config::MountConfig& config);

}  // namespace ossmount::daemon
