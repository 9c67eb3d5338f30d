#include "faults.h"

#include "malformed.h"

#include <cmath>
#include <sstream>

namespace ossmount::testserver {

namespace {

uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, 1).
double Uniform(uint64_t& state) { return (SplitMix(state) >> 11) * 0x1.0p-53; }

Result<double> ParseDouble(std::string_view v) {
  try {
    size_t used = 0;
    std::string s(v);
    double d = std::stod(s, &used);
    if (used != s.size() || !(d >= 0)) throw std::invalid_argument("bad");
    return d;
  } catch (...) {
    return Status(ErrorCode::kInvalidArgument,
                  "not a non-negative number: '" + std::string(v) + "'");
  }
}

std::vector<std::string> SplitComma(std::string_view v) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    if (comma == std::string_view::npos) comma = v.size();
    if (comma > start) out.emplace_back(v.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

const char* FaultOpName(FaultOp op) {
  switch (op) {
    case FaultOp::kGet:
      return "get";
    case FaultOp::kHead:
      return "head";
    case FaultOp::kList:
      return "list";
    case FaultOp::kPut:
      return "put";
    case FaultOp::kDelete:
      return "delete";
    case FaultOp::kAppend:
      return "append";
    case FaultOp::kOther:
      return "other";
  }
  return "other";
}

}  // namespace

Result<ErrorKind> ParseErrorKind(std::string_view name) {
  if (name == "500")
    return ErrorKind{500, "InternalError", "We encountered an internal error. Please try again."};
  if (name == "502") return ErrorKind{502, "BadGateway", "Injected bad gateway."};
  if (name == "503")
    return ErrorKind{503, "ServiceUnavailable", "Please reduce your request rate."};
  if (name == "504") return ErrorKind{504, "GatewayTimeout", "Injected gateway timeout."};
  if (name == "429") return ErrorKind{429, "TooManyRequests", "Please reduce your request rate."};
  if (name == "SlowDown") return ErrorKind{503, "SlowDown", "Please reduce your request rate."};
  if (name == "QpsLimitExceeded") return ErrorKind{503, "QpsLimitExceeded", "Qps limit exceeded."};
  return Status(ErrorCode::kInvalidArgument,
                "unknown error kind '" + std::string(name) +
                    "' (known: 500 502 503 504 429 SlowDown QpsLimitExceeded)");
}

Status FaultSettings::Set(std::string_view name, std::string_view value) {
  auto number = [&](double& field) -> Status {
    auto d = ParseDouble(value);
    if (!d.ok()) return d.status();
    field = d.value();
    return Status::Ok();
  };
  auto rate = [&](double& field) -> Status {
    Status s = number(field);
    if (s.ok() && field > 1)
      return Status(ErrorCode::kInvalidArgument, std::string(name) + " must be in [0, 1]");
    return s;
  };
  auto integer = [&](int& field) -> Status {
    double d = 0;
    Status s = number(d);
    if (s.ok()) field = static_cast<int>(d);
    return s;
  };
  if (name == "write-error-rate") return rate(write_error_rate);
  if (name == "write-reset-rate") return rate(write_reset_rate);
  if (name == "write-truncate-rate") return rate(write_truncate_rate);
  if (name == "lost-complete-rate") return rate(lost_complete_rate);
  if (name == "lost-copy-rate") return rate(lost_copy_rate);
  if (name == "unanswered-complete") {
    if (value != "" && value != "applied" && value != "ignored") {
      return Status(ErrorCode::kInvalidArgument,
                    "unanswered-complete is 'applied', 'ignored' or '' (off), not '" +
                        std::string(value) + "'");
    }
    unanswered_complete = std::string(value);
    return Status::Ok();
  }
  if (name == "write-fault-prefix") {
    write_fault_prefix = std::string(value);
    return Status::Ok();
  }
  if (name == "write-error-kinds") {
    auto kinds = SplitComma(value);
    for (const auto& k : kinds) {
      auto parsed = ParseErrorKind(k);
      if (!parsed.ok()) return parsed.status();
    }
    if (kinds.empty()) return Status(ErrorCode::kInvalidArgument, "write-error-kinds is empty");
    write_error_kinds = kinds;
    return Status::Ok();
  }
  if (name == "synthetic-listing") {
    // PREFIX=COUNT
    const size_t eq = value.rfind('=');
    if (eq == std::string_view::npos) {
      return Status(ErrorCode::kInvalidArgument, "synthetic-listing is PREFIX=COUNT");
    }
    try {
      synthetic_count = std::stoull(std::string(value.substr(eq + 1)));
    } catch (...) {
      return Status(ErrorCode::kInvalidArgument, "synthetic-listing: COUNT is a number");
    }
    synthetic_prefix = std::string(value.substr(0, eq));
    return Status::Ok();
  }
  if (name == "list-loop-prefix") {
    list_loop_prefix = std::string(value);
    return Status::Ok();
  }
  if (name == "ttfb-ms") return number(ttfb_ms);
  if (name == "ttfb-p50-ms") return number(ttfb_p50_ms);
  if (name == "ttfb-p99-ms") return number(ttfb_p99_ms);
  if (name == "error-rate") return rate(error_rate);
  if (name == "reset-rate") return rate(reset_rate);
  if (name == "truncate-rate") return rate(truncate_rate);
  if (name == "stall-rate") return rate(stall_rate);
  if (name == "corrupt-rate") return rate(corrupt_rate);
  if (name == "corrupt-key") {
    corrupt_key = std::string(value);  // "" turns it off
    return Status::Ok();
  }
  if (name == "stall-ms") return integer(stall_ms);
  if (name == "retry-after") return integer(retry_after_s);
  if (name == "bandwidth-mbps") return number(bandwidth_mbps);
  if (name == "malformed-rate") return rate(malformed_rate);
  if (name == "retry-after-rate") return rate(retry_after_rate);
  if (name == "malformed") {
    auto kinds = SplitComma(value);
    for (const auto& k : kinds) {
      if (!IsMalformedKind(k)) {
        return Status(ErrorCode::kInvalidArgument,
                      "unknown malformed kind '" + k + "' (known: " + MalformedKindList() + ")");
      }
    }
    malformed_kinds = kinds;  // empty: off
    return Status::Ok();
  }
  if (name == "error-kinds") {
    auto kinds = SplitComma(value);
    for (const auto& k : kinds) {
      auto parsed = ParseErrorKind(k);
      if (!parsed.ok()) return parsed.status();
    }
    if (kinds.empty()) return Status(ErrorCode::kInvalidArgument, "error-kinds is empty");
    error_kinds = kinds;
    return Status::Ok();
  }
  if (name == "fault-ops") {
    std::set<FaultOp> ops;
    for (const auto& op : SplitComma(value)) {
      if (op == "get")
        ops.insert(FaultOp::kGet);
      else if (op == "head")
        ops.insert(FaultOp::kHead);
      else if (op == "list")
        ops.insert(FaultOp::kList);
      else if (op == "put")
        ops.insert(FaultOp::kPut);
      else if (op == "delete")
        ops.insert(FaultOp::kDelete);
      else if (op == "append")
        ops.insert(FaultOp::kAppend);
      else if (op == "other")
        ops.insert(FaultOp::kOther);
      else if (op == "all")
        ops = {FaultOp::kGet,    FaultOp::kHead,   FaultOp::kList, FaultOp::kPut,
               FaultOp::kDelete, FaultOp::kAppend, FaultOp::kOther};
      else
        return Status(ErrorCode::kInvalidArgument,
                      "unknown fault op '" + op + "' (get head list put delete append other all)");
    }
    fault_ops = ops;
    return Status::Ok();
  }
  return Status(ErrorCode::kInvalidArgument, "unknown fault setting '" + std::string(name) + "'");
}

std::string FaultSettings::ToJson() const {
  std::ostringstream o;
  o << "{\"ttfb-ms\":" << ttfb_ms << ",\"ttfb-p50-ms\":" << ttfb_p50_ms
    << ",\"ttfb-p99-ms\":" << ttfb_p99_ms << ",\"error-rate\":" << error_rate
    << ",\"error-kinds\":[";
  for (size_t i = 0; i < error_kinds.size(); ++i)
    o << (i ? "," : "") << '"' << error_kinds[i] << '"';
  o << "],\"retry-after\":" << retry_after_s << ",\"retry-after-rate\":" << retry_after_rate
    << ",\"reset-rate\":" << reset_rate << ",\"truncate-rate\":" << truncate_rate
    << ",\"stall-rate\":" << stall_rate << ",\"stall-ms\":" << stall_ms
    << ",\"bandwidth-mbps\":" << bandwidth_mbps << ",\"corrupt-rate\":" << corrupt_rate
    << ",\"corrupt-key\":\"" << corrupt_key << "\""
    << ",\"malformed\":[";
  for (size_t i = 0; i < malformed_kinds.size(); ++i)
    o << (i ? "," : "") << '"' << malformed_kinds[i] << '"';
  o << "],\"write-error-rate\":" << write_error_rate << ",\"write-error-kinds\":[";
  for (size_t i = 0; i < write_error_kinds.size(); ++i)
    o << (i ? "," : "") << '"' << write_error_kinds[i] << '"';
  o << "],\"write-reset-rate\":" << write_reset_rate
    << ",\"write-truncate-rate\":" << write_truncate_rate
    << ",\"lost-complete-rate\":" << lost_complete_rate << ",\"lost-copy-rate\":" << lost_copy_rate
    << ",\"unanswered-complete\":\"" << unanswered_complete << "\",\"write-fault-prefix\":\""
    << write_fault_prefix << "\"";
  o << ",\"synthetic-listing\":\"" << synthetic_prefix << "=" << synthetic_count << "\"";
  o << ",\"malformed-rate\":" << malformed_rate << ",\"list-loop-prefix\":\"" << list_loop_prefix
    << "\",\"fault-ops\":[";
  bool first = true;
  for (auto op : fault_ops) {
    o << (first ? "" : ",") << '"' << FaultOpName(op) << '"';
    first = false;
  }
  o << "]}";
  return o.str();
}

FaultInjector::FaultInjector(FaultSettings settings, uint64_t seed)
    : seed_(seed), settings_(std::make_shared<const FaultSettings>(std::move(settings))) {}

FaultSettings FaultInjector::settings() const {
  std::lock_guard lock(mu_);
  return *settings_;
}

void FaultInjector::set_settings(FaultSettings settings) {
  auto fresh = std::make_shared<const FaultSettings>(std::move(settings));
  std::lock_guard lock(mu_);
  settings_ = std::move(fresh);
}

FaultPlan FaultInjector::Plan(FaultOp op, const WriteTarget* write) {
  std::shared_ptr<const FaultSettings> s;
  {
    std::lock_guard lock(mu_);
    s = settings_;
  }
  FaultPlan plan;
  plan.sequence = sequence_.fetch_add(1);
  uint64_t state = seed_ ^ (plan.sequence * 0xD1B54A32D192ED03ull);
  SplitMix(state);
  // Always draw the same number of values so one setting does not shift another's stream.
  double u_err = Uniform(state), u_kind = Uniform(state), u_reset = Uniform(state);
  double u_reset_where = Uniform(state), u_trunc = Uniform(state), u_cut = Uniform(state);
  double u_stall = Uniform(state), u_stall_at = Uniform(state), u_corrupt = Uniform(state);
  double u_corrupt_at = Uniform(state), u_lat1 = Uniform(state), u_lat2 = Uniform(state);
  double u_malformed = Uniform(state), u_malformed_kind = Uniform(state);  // drawn last
  double u_retry_after = Uniform(state);
  double u_werr = Uniform(state), u_wkind = Uniform(state), u_wreset = Uniform(state);
  double u_wtrunc = Uniform(state), u_wcut = Uniform(state), u_lost = Uniform(state);

  if (s->ttfb_p50_ms > 0 && s->ttfb_p99_ms > 0) {
    double mu = std::log(s->ttfb_p50_ms);
    double sigma = std::max(0.0, (std::log(s->ttfb_p99_ms) - mu) / 2.3263478740);
    double z = std::sqrt(-2.0 * std::log(1.0 - u_lat1)) * std::cos(2 * M_PI * u_lat2);
    double ms = std::exp(mu + sigma * z);
    plan.delay = std::chrono::microseconds(static_cast<int64_t>(ms * 1000));
  } else if (s->ttfb_ms > 0) {
    plan.delay = std::chrono::microseconds(static_cast<int64_t>(s->ttfb_ms * 1000));
  }
  if (op == FaultOp::kGet) plan.corrupt_key = s->corrupt_key;
  if (write && write->key.substr(0, s->write_fault_prefix.size()) == s->write_fault_prefix) {
    if (u_werr < s->write_error_rate && !s->write_error_kinds.empty()) {
      size_t i =
          std::min(s->write_error_kinds.size() - 1,
                   static_cast<size_t>(u_wkind * static_cast<double>(s->write_error_kinds.size())));
      auto kind = ParseErrorKind(s->write_error_kinds[i]);
      if (kind.ok()) {
        plan.error = plan.write_error = true;
        plan.error_kind = kind.value();
        plan.retry_after_s = u_retry_after < s->retry_after_rate ? s->retry_after_s : 0;
        return plan;
      }
    }
    if (u_wreset < s->write_reset_rate) {
      plan.body_cut = FaultPlan::BodyCut::kReset;
    } else if (u_wtrunc < s->write_truncate_rate) {
      plan.body_cut = FaultPlan::BodyCut::kTruncate;
    } else if (write->complete && u_lost < s->lost_complete_rate) {
      plan.lose_answer = true;
    } else if (write->copy && u_lost < s->lost_copy_rate) {
      plan.lose_answer = true;
    }
    if (write->complete && !s->unanswered_complete.empty()) {
      plan.unanswered = s->unanswered_complete == "applied" ? FaultPlan::Unanswered::kApplied
                                                            : FaultPlan::Unanswered::kIgnored;
    }
    plan.body_cut_fraction = u_wcut;
  }
  if (!s->fault_ops.count(op)) return plan;

  if (s->bandwidth_mbps > 0) plan.bytes_per_second = s->bandwidth_mbps * 1e6 / 8;
  if (!s->malformed_kinds.empty() && u_malformed < s->malformed_rate) {
    size_t i = std::min(
        s->malformed_kinds.size() - 1,
        static_cast<size_t>(u_malformed_kind * static_cast<double>(s->malformed_kinds.size())));
    plan.malformed = s->malformed_kinds[i];
  }
  if (u_err < s->error_rate && !s->error_kinds.empty()) {
    size_t i = std::min(s->error_kinds.size() - 1,
                        static_cast<size_t>(u_kind * static_cast<double>(s->error_kinds.size())));
    auto kind = ParseErrorKind(s->error_kinds[i]);
    if (kind.ok()) {
      plan.error = true;
      plan.error_kind = kind.value();
      plan.retry_after_s = u_retry_after < s->retry_after_rate ? s->retry_after_s : 0;
      return plan;
    }
  }
  if (u_reset < s->reset_rate) {
    plan.cut =
        u_reset_where < 0.5 ? FaultPlan::Cut::kResetBeforeHeaders : FaultPlan::Cut::kResetInBody;
    plan.cut_fraction = u_cut;
  } else if (u_trunc < s->truncate_rate) {
    plan.cut = FaultPlan::Cut::kTruncate;
    plan.cut_fraction = u_cut;
  }
  if (u_stall < s->stall_rate) {
    plan.stall = true;
    plan.stall_fraction = u_stall_at;
    plan.stall_for = std::chrono::milliseconds(s->stall_ms);
  }
  if (u_corrupt < s->corrupt_rate) {
    plan.corrupt = true;
    plan.corrupt_fraction = u_corrupt_at;
  }
  return plan;
}

}  // namespace ossmount::testserver
