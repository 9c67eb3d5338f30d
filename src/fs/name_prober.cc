#include "fs/name_prober.h"

#include <mutex>

namespace ossmount::fs {

namespace {

struct ProbeState {
  std::mutex mu;  // guards the fields below; never held while `done` runs
  int pending = 2;
  std::optional<Result<ObjectInfo>> head;
  std::optional<Result<ListPage>> list;
  ProbeCallback done;

  // Called by each half; the second one decides.
  void Arrive(std::optional<Result<ObjectInfo>> h, std::optional<Result<ListPage>> l) {
    {
      std::lock_guard lock(mu);
      if (h) head = std::move(h);
      if (l) list = std::move(l);
      if (--pending > 0) return;
    }
    done(Decide());
  }

  ProbeResult Decide() {
    const Result<ObjectInfo>& h = *head;
    const Result<ListPage>& l = *list;
    if (l.ok() && (!l->objects.empty() || !l->common_prefixes.empty())) {
      return std::optional<meta::NodeAttr>(meta::DirAttr());
    }
    if (!l.ok()) return l.status();  // cannot rule out a directory that would win
    if (h.ok()) return std::optional<meta::NodeAttr>(meta::FileAttrFrom(*h));
    if (h.status().code() == ErrorCode::kNotFound) return std::optional<meta::NodeAttr>();
    return h.status();
  }
};

}  // namespace

void ProbeName(ObjectClient& client, const std::string& key, ProbeCallback done) {
  auto state = std::make_shared<ProbeState>();
  state->done = std::move(done);
  ListRequest list;
  list.prefix = key + "/";
  list.max_keys = 1;
  client.Head(key, [state](Result<ObjectInfo> r) { state->Arrive(std::move(r), std::nullopt); });
  client.List(list, [state](Result<ListPage> r) { state->Arrive(std::nullopt, std::move(r)); });
}

}  // namespace ossmount::fs
