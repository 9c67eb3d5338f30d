// The ObjectClient for OSS and S3 (one implementation; the protocol differences live in
// Dialect and in the signer). Built by MakeObjectClient (client_factory.h) for production,
// and directly by unit tests with a fake executor, a fake clock and chosen signers.
#pragma once

#include <memory>

#include "auth/signer.h"
#include "object/clock.h"
#include "object/http_executor.h"
#include "ossmount/client_options.h"
#include "ossmount/object_client.h"

namespace boost::asio {
class io_context;
}

namespace ossmount::object {

struct ClientParts {
  std::shared_ptr<HttpExecutor> executor;
  std::shared_ptr<Clock> clock;
  std::shared_ptr<const auth::Signer> signer;       // main endpoint
  std::shared_ptr<const auth::Signer> data_signer;  // data endpoint; null = `signer`
};

// Validates the options (bucket name, endpoints, credentials present, retry limits) and
// builds the client. Handlers run on `io`. Errors name the option to fix.
Result<std::shared_ptr<ObjectClient>> NewObjectClient(boost::asio::io_context& io,
                                                      const ClientOptions& options,
                                                      ClientParts parts);

}  // namespace ossmount::object
