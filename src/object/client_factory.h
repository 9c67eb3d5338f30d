// Building the OSS or S3 ObjectClient described by ClientOptions.
#pragma once

#include <memory>

#include "http/fetch_engine.h"
#include "ossmount/client_options.h"
#include "ossmount/object_client.h"

namespace boost::asio {
class io_context;
}

namespace ossmount::object {

// Validates the options (endpoint syntax, bucket name, region needed for V4, credentials
// present) and returns a client whose requests run on `engine` (which must outlive it).
// Errors name the option to fix.
Result<std::shared_ptr<ObjectClient>> MakeObjectClient(boost::asio::io_context& io,
                                                       http::FetchEngine& engine,
                                                       const ClientOptions& options);

}  // namespace ossmount::object
