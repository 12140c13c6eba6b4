#include "protocol/alert_coalescer.h"

namespace lsb::protocol {

bool AlertCoalescer::Take(Bucket& b, uint64_t cap, uint64_t rate, uint64_t now_ms) {
  if (rate > 0 && now_ms > b.at_ms) {
    uint64_t add = (now_ms - b.at_ms) * rate / 1000;
    if (add > 0) {
      b.tokens = b.tokens + add >= cap ? cap : b.tokens + add;
      b.at_ms += add * 1000 / rate;  // keep the remainder of the interval
    }
  }
  if (b.tokens == 0) return false;
  --b.tokens;
  return true;
}

bool AlertCoalescer::Admit(const Event& e) {
  const uint64_t n = AlertWeight(e);
  seen_ += n;
  if (e.kind == "summary") {  // never passes one by one: its count joins ours
    Hold(e.rule, e, n);
    return false;
  }
  if (e.rule == AlertRule::kNone) {  // a trace event
    if (Take(trace_tokens_, b_.trace_total, b_.refill_per_s * 10, e.time_ms)) return true;
    Hold(AlertRule::kNone, e, n);
    return false;
  }
  // A run's outcome (timeout, output cap, OOM, pids) is raised once per run: it never waits behind
  // a flood of other alerts, and is keyed by its rule alone, so it stays bounded by per_key.
  const bool outcome = IsOutcomeRule(e.rule);
  std::string key = outcome ? Name(e.rule) : Name(e.rule) + ('\n' + (e.address.empty() ? e.path : e.address));
  auto it = per_key_.find(key);
  if (it == per_key_.end()) {
    if (per_key_.size() >= kMaxKeys) per_key_.clear();
    it = per_key_.emplace(key, Bucket{b_.per_key, e.time_ms}).first;
  }
  // Both budgets must have room; a refused alert takes from neither.
  Bucket key_probe = it->second, total_probe = tokens_;
  const uint64_t key_rate = b_.refill_per_s ? (b_.refill_per_s + 9) / 10 : 0;
  if (!Take(key_probe, b_.per_key, key_rate, e.time_ms) ||
      (!outcome && !Take(total_probe, b_.total, b_.refill_per_s, e.time_ms))) {
    Hold(e.rule, e, n);
    return false;
  }
  it->second = key_probe;
  tokens_ = total_probe;
  return true;
}

void AlertCoalescer::Hold(AlertRule rule, const Event& e, uint64_t n) {
  suppressed_ += n;
  Held& h = held_[rule];
  if (h.count == 0) {
    h.first_ms = e.time_ms;
    h.severity = e.severity;
  }
  if (h.kind.empty() && e.kind != "summary") h.kind = e.kind;
  h.count += n;
  h.last_ms = e.time_ms;
}

std::vector<Event> AlertCoalescer::TakeSummaries() {
  std::vector<Event> out;
  for (auto& [rule, h] : held_) {
    if (h.count == 0) continue;
    Event s;
    s.kind = "summary";
    s.rule = rule;
    const bool trace = rule == AlertRule::kNone;
    s.severity = trace ? Severity::kInfo : h.severity;
    s.decision = trace ? "" : "denied";
    s.count = h.count;
    s.time_ms = h.last_ms;
    s.message = std::to_string(h.count) + " more " +
                (trace ? std::string("trace events") : std::string(Name(rule)) + " alerts") +
                (h.kind.empty() ? std::string() : " (" + h.kind + ")") + " between " + std::to_string(h.first_ms) +
                " and " + std::to_string(h.last_ms) + " ms, past the bound of one by one: coalesced into this one";
    out.push_back(std::move(s));
  }
  held_.clear();
  return out;
}

}  // namespace lsb::protocol
