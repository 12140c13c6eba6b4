// Bounds the alerts of one run (docs/security.md, class 2): a program that repeats a refused call in a
// loop raises tens of thousands of alerts a second, and nothing it does may cost the host more
// than a fixed amount. Both ends use this: init at the source (so the stream is not flooded) and
// the host again, per execution (init runs next to the program and may be subverted).
//
// The rule: at most `total` alerts, and `per_key` of one (rule, path/address), pass as they are;
// the rest are counted per rule and come out as one summary per rule (`kind: "summary"`, `count`
// = how many alerts it stands for) when the owner asks (init: before kExit; the host: at the end
// of the execution). A summary that arrives from the other side is merged like the alerts it
// stands for. Trace events (no rule) have their own bound, `trace_total`, and one trace summary.
// With `refill_per_s` (init, whose run is a whole session for a session's interpreter) the
// budgets refill at that rate (`per_key`'s at a tenth of it), measured on Event.time_ms, so an
// alert of a later execution of a session still passes; the host sets none: a hard bound.
//
// Memory: at most kMaxKeys keys (past it the per-key counts start again) and one summary per rule
// of the table (protocol/wire_values.h: an unknown rule never parses). Not thread-safe: one run,
// one owner.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/messages.h"

namespace lsb::protocol {

struct AlertBounds {
  uint64_t total = 100;         // alerts passed one by one
  uint64_t per_key = 10;        // of one rule + path/address
  uint64_t trace_total = 1000;  // trace events (monitoring.trace) passed one by one
  uint64_t refill_per_s = 0;    // 0: a hard bound
};

// What init uses: the host's bounds, refilled at 20 alerts a second.
inline AlertBounds InitAlertBounds() {
  AlertBounds b;
  b.refill_per_s = 20;
  return b;
}

class AlertCoalescer {
 public:
  explicit AlertCoalescer(AlertBounds b = {}) : b_(b), tokens_{b.total}, trace_tokens_{b.trace_total} {}
  static constexpr size_t kMaxKeys = 1024;

  // True: pass `e` on as it is. False: it was counted into a summary (TakeSummaries).
  bool Admit(const Event& e);
  // `e` was admitted but could not be delivered (init's output queue was full): count it into
  // its rule's summary instead.
  void Undelivered(const Event& e) { Hold(e.rule, e, AlertWeight(e)); }
  // One summary per rule that had alerts held back (and one trace summary, rule kNone), in rule
  // order; each carries the count it stands for; time_ms is the last one's. Resets the counts.
  std::vector<Event> TakeSummaries();

  bool holding() const { return !held_.empty(); }
  uint64_t seen() const { return seen_; }  // attempts (a summary counts as its count)
  uint64_t suppressed() const { return suppressed_; }

  // timeout, output_flood, oom_kill, pids_limit: outside the total, `per_key` of each in all.
  static bool IsOutcomeRule(AlertRule rule) { return RuleInfo(rule).outcome; }
  // How many alerts `e` stands for: a summary its count, anything else 1.
  static uint64_t AlertWeight(const Event& e) { return e.kind == "summary" && e.count > 0 ? e.count : 1; }

 private:
  struct Held {
    uint64_t count = 0;
    uint64_t first_ms = 0, last_ms = 0;
    Severity severity = Severity::kWarning;
    std::string kind;  // the kind of the first one held back (execve, connect, ...)
  };
  struct Bucket {
    uint64_t tokens = 0;
    uint64_t at_ms = 0;  // the time the tokens were last refilled up to
  };
  void Hold(AlertRule rule, const Event& e, uint64_t n);
  // Refills `b` (capacity `cap`, `rate` per second) up to `now_ms`; true if a token was taken.
  static bool Take(Bucket& b, uint64_t cap, uint64_t rate, uint64_t now_ms);

  AlertBounds b_;
  Bucket tokens_, trace_tokens_;
  uint64_t seen_ = 0, suppressed_ = 0;
  std::map<std::string, Bucket> per_key_;
  std::map<AlertRule, Held> held_;  // by rule; kNone = trace events
};

}  // namespace lsb::protocol
