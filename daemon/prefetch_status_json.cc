#include "prefetch_status_json.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace ossmount::daemon {

std::string PrefetchStatusJson(const prefetch::PrefetchStatus& st,
                               const prefetch::DatasetPrefetchOptions& options) {
  using prefetch::HintStatus;
  using prefetch::WarmupJobStatus;
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("in_flight");
  w.Int(st.in_flight);
  w.Key("held_bytes");
  w.Uint64(st.held_bytes);
  w.Key("concurrency");
  w.Int(options.concurrency);
  w.Key("hint_concurrency");
  w.Int(options.hint_concurrency);
  // The counters of one list, or of all of them summed.
  auto hint_fields = [&w](const HintStatus& h) {
    w.Key("files");
    w.Uint64(h.files);
    w.Key("next");
    w.Uint64(h.next);
    w.Key("read");
    w.Uint64(h.read);
    w.Key("fetched");
    w.Uint64(h.fetched);
    w.Key("failed");
    w.Uint64(h.failed);
    w.Key("page_cached");
    w.Uint64(h.page_cached);
    w.Key("released_unread");
    w.Uint64(h.released_unread);
    w.Key("outstanding_files");
    w.Uint64(h.outstanding_files);
    w.Key("outstanding_bytes");
    w.Uint64(h.outstanding_bytes);
    w.Key("in_flight");
    w.Int(h.in_flight);
    w.Key("memory_bytes");
    w.Uint64(h.memory_bytes);
  };
  w.Key("hints");
  w.StartObject();
  w.Key("lists");
  w.Uint64(st.hints.generation);
  hint_fields(st.hints);
  w.Key("budget_wait");
  w.Bool(st.hints.budget_wait);
  w.Key("senders");
  w.StartArray();
  for (const HintStatus& h : st.hint_lists) {
    w.StartObject();
    w.Key("pid");
    w.Int(h.pid);
    w.Key("uid");
    w.Uint(h.uid);
    if (!h.name.empty()) {
      w.Key("name");
      w.String(h.name.c_str(), static_cast<rapidjson::SizeType>(h.name.size()));
    }
    w.Key("list");
    w.Uint64(h.generation);
    hint_fields(h);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  w.Key("jobs");
  w.StartArray();
  for (const WarmupJobStatus& j : st.jobs) {
    w.StartObject();
    w.Key("id");
    w.Uint64(j.id);
    w.Key("paths");
    w.StartArray();
    for (const auto& p : j.paths) w.String(p.c_str(), static_cast<rapidjson::SizeType>(p.size()));
    w.EndArray();
    w.Key("state");
    w.String(prefetch::JobStateName(j.state));
    w.Key("listing_done");
    w.Bool(j.listing_done);
    w.Key("files_total");
    w.Uint64(j.files_total);
    w.Key("bytes_total");
    w.Uint64(j.bytes_total);
    w.Key("files_done");
    w.Uint64(j.files_done);
    w.Key("bytes_done");
    w.Uint64(j.bytes_done);
    w.Key("files_fetched");
    w.Uint64(j.files_fetched);
    w.Key("files_cached");
    w.Uint64(j.files_cached);
    w.Key("files_skipped");
    w.Uint64(j.files_skipped);
    w.Key("files_failed");
    w.Uint64(j.files_failed);
    w.Key("in_flight");
    w.Int(j.in_flight);
    w.Key("seconds");
    w.Double(j.seconds);
    w.Key("message");
    w.String(j.message.c_str(), static_cast<rapidjson::SizeType>(j.message.size()));
    w.Key("queued_files");
    w.Uint64(j.queued_files);
    w.Key("queued_bytes");
    w.Uint64(j.queued_bytes);
    w.Key("uid");
    w.Uint(j.uid);
    w.EndObject();
  }
  w.EndArray();
  const prefetch::ControlMemoryStatus& cm = st.control_memory;
  w.Key("control_memory");
  w.StartObject();
  w.Key("used");
  w.Uint64(cm.used);
  w.Key("limit");
  w.Uint64(cm.limit);
  w.Key("other_users_used");
  w.Uint64(cm.other_users_used);
  w.Key("other_users_limit");
  w.Uint64(cm.other_users_limit);
  w.Key("hint_bytes");
  w.Uint64(cm.hint_bytes);
  w.Key("warmup_bytes");
  w.Uint64(cm.warmup_bytes);
  w.EndObject();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace ossmount::daemon
