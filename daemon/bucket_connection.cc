#include "bucket_connection.h"

#include "auth/credential_providers.h"
#include "http/fetch_engine.h"
#include "http/metadata_fetcher.h"
#include "object/client_factory.h"

namespace ossmount::daemon {

Result<BucketConnection> ConnectToBucket(boost::asio::io_context& io, config::MountConfig& config) {
  auth::CredentialSources sources = config.credential_sources;
  if (!sources.ram_role.empty()) sources.fetcher = http::MakeBlockingHttpFetcher();
  auto provider = auth::BuildCredentialsProvider(sources);
  if (!provider.ok()) {
    return Status(provider.status().code(),
                  "no usable credentials: " + provider.status().message());
  }
  config.client.credentials = *provider;

  http::EngineOptions engine_options;
  engine_options.timeouts = config.client.timeouts;
  engine_options.max_in_flight = config.client.max_in_flight;
  engine_options.max_connections_per_host = config.client.max_connections_per_host;
  engine_options.verify_tls = config.client.verify_tls;
  engine_options.ca_bundle = config.client.ca_bundle;
  auto* engine = new http::FetchEngine(io, engine_options);  // see the header: never freed

  auto client = object::MakeObjectClient(io, *engine, config.client);
  if (!client.ok()) return client.status();
  return BucketConnection{*client, (*provider)->Describe()};
}

}  // namespace ossmount::daemon
