// HttpExecutor: the seam between the object clients and the network.
//
// The clients never talk to libcurl or the FetchEngine directly; they hand one fully built,
// signed attempt to an HttpExecutor. Production wires in the FetchEngine (below); unit tests
// wire in a scripted fake, so every retry, fallback and error path runs without a socket.
//
// Contract (the same as FetchEngine::Execute): one attempt per call, no retries; `done` is
// called exactly once, never inline from inside Execute(), on an io_context thread.
// Thread-safety: Execute() may be called concurrently from any thread.
#pragma once

#include <memory>

#include "http/fetch_engine.h"

namespace ossmount::object {

class HttpExecutor {
 public:
  virtual ~HttpExecutor() = default;
  virtual void Execute(http::Request request, http::ResponseHandler done) = 0;
};

// Adapter over a FetchEngine. The engine must outlive the executor.
std::shared_ptr<HttpExecutor> MakeFetchEngineExecutor(http::FetchEngine& engine);

}  // namespace ossmount::object
