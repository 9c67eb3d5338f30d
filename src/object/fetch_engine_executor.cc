// HttpExecutor over the real FetchEngine.
#include "object/http_executor.h"

namespace ossmount::object {
namespace {

class FetchEngineExecutor final : public HttpExecutor {
 public:
  explicit FetchEngineExecutor(http::FetchEngine& engine) : engine_(engine) {}
  void Execute(http::Request request, http::ResponseHandler done) override {
    engine_.Execute(std::move(request), std::move(done));
  }

 private:
  http::FetchEngine& engine_;
};

}  // namespace

std::shared_ptr<HttpExecutor> MakeFetchEngineExecutor(http::FetchEngine& engine) {
  return std::make_shared<FetchEngineExecutor>(engine);
}

}  // namespace ossmount::object
