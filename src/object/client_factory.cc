// MakeObjectClient: the production wiring of the object client (FetchEngine executor, real
// clock, signers from src/auth).
#include "object/client_factory.h"

#include "object/clock.h"
#include "object/http_executor.h"
#include "object/object_client_impl.h"
#include "object/signer_choice.h"

namespace ossmount::object {

Result<std::shared_ptr<ObjectClient>> MakeObjectClient(boost::asio::io_context& io,
                                                       http::FetchEngine& engine,
                                                       const ClientOptions& options) {
  ClientParts parts;
  parts.executor = MakeFetchEngineExecutor(engine);
  parts.clock = MakeAsioClock(io);
  parts.signer = MakeSigner(ChooseSigner(options, /*for_data_endpoint=*/false));
  parts.data_signer = MakeSigner(ChooseSigner(options, /*for_data_endpoint=*/true));
  return NewObjectClient(io, options, std::move(parts));
}

}  // namespace ossmount::object
