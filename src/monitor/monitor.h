// The daemon's monitoring (docs/monitoring.md), one object the routes talk to:
//   executions and sessions -> metrics (Prometheus), live events (SSE), the audit log (JSON lines,
//   durable before the answer), webhooks (alerts, own thread), and a small in-memory view for the
//   dashboard (running executions with their last CPU/RAM sample, recent ones with their output).
//
// Ownership: the Daemon owns the Monitor; it outlives every request. Concurrency: `mu_` guards
// `running_` and `recent_`; Metrics, EventBus, AuditLog and WebhookSender lock for themselves.
// An Execution handle is used by one worker thread at a time (the runner's callbacks, then Finish).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/time_format.h"
#include "base/result.h"
#include "monitor/audit_history.h"
#include "monitor/audit_log.h"
#include "monitor/event_bus.h"
#include "monitor/execution_filter.h"
#include "monitor/host_usage.h"
#include "monitor/metrics.h"
#include "monitor/webhook.h"
#include "runtime/runner.h"

namespace lsb::monitor {

struct MonitorOptions {
  std::string audit_path;              // "" = no audit log
  uint64_t audit_max_bytes = 64ull << 20;
  int audit_keep = 5;
  WebhookOptions webhooks;             // no URLs = no webhooks
  size_t recent_limit = 100;           // executions kept for the dashboard
  size_t recent_max_bytes = 16 << 20;  // ... and their JSON, in all (the oldest go first)
  size_t recent_entry_bytes = 1 << 20; // one recent execution's JSON (past it: alerts/trace cut)
  size_t output_keep_bytes = 64 << 10; // of stdout and of stderr, per recent execution
  size_t trace_limit = 1000;           // trace records kept per execution (the rest counted)
  size_t trace_max_bytes = 1 << 20;    // ... and their JSON
  size_t alert_record_limit = 100;     // alert records/webhooks per execution (the rest counted;
                                       // the runner's per-rule summaries always pass)
  uint64_t usage_interval_ms = 1000;
};

// What is known when an execution starts.
struct ExecutionInfo {
  std::string id;
  std::string policy;
  std::string kind;        // "execute" | "batch" | "session"
  std::string session_id;  // kind session
  std::string language;
  std::string code;        // hashed, never stored
  std::string owner;       // who asked (server/owner.h); the views and events are its alone
  double cpu_limit = 0;    // the (tightened) policy's resources.cpu; 0 = none (monitor/cpu_share.h)
};

class Monitor;

// One execution under way: collects what its callbacks see until Finish().
class Execution {
 public:
  const std::string& id() const { return info_.id; }

 private:
  friend class Monitor;
  ExecutionInfo info_;
  std::string code_sha256_;
  uint64_t code_bytes_ = 0;
  std::chrono::system_clock::time_point started_;
  std::chrono::steady_clock::time_point started_mono_;
  size_t alerts_seen_ = 0;     // alerts with a rule already published through on_event
  size_t alerts_recorded_ = 0; // alert records/webhooks sent (bounded)
  std::vector<nlohmann::json> alert_records_;  // audit records, written with the execution's
  nlohmann::json trace_ = nlohmann::json::array();
  uint64_t trace_dropped_ = 0;
  size_t trace_bytes_ = 0;
  double cpu_cores_ = 1;  // CpuLimitCores(info_.cpu_limit)
  std::optional<BoxUsage> last_usage_;
  std::optional<double> last_cpu_percent_;  // of one core, between the last two samples
  std::chrono::steady_clock::time_point last_usage_at_;
};

class Monitor {
 public:
  static Result<std::unique_ptr<Monitor>> Create(MonitorOptions opts);
  ~Monitor();

  Metrics& metrics() { return metrics_; }
  EventBus& events() { return events_; }
  const MonitorOptions& options() const { return opts_; }

  std::shared_ptr<Execution> Begin(ExecutionInfo info);
  // `inner` plus the monitor's hooks (alerts and trace events, usage samples).
  RunCallbacks Wrap(const std::shared_ptr<Execution>& ex, RunCallbacks inner);
  // The end: metrics, events, webhooks, recent view, and the audit records, durable on return.
  void Finish(const std::shared_ptr<Execution>& ex, const ExecResult* result, const std::string& error,
              const std::string& backend);

  void SessionEvent(const std::string& type, nlohmann::json data, const std::string& owner);
  // A pull into the image store (image_pull, seen by every owner: the store is shared); a final
  // one ("done"/"failed") is counted in lsb_image_pulls_total{result}.
  void ImagePullEvent(nlohmann::json data);
  void HttpRequest(const std::string& route, int status, double seconds);

  // The views of `owner`'s executions only: another owner's are absent (404 for one by id).
  nlohmann::json Running(const std::string& owner) const;
  size_t RunningCount() const;  // of every owner, for the metrics
  // `filter` (may be null) selects among them (monitor/execution_filter.h).
  nlohmann::json Recent(size_t limit, const std::string& owner, const ExecutionFilter* filter = nullptr) const;
  std::optional<nlohmann::json> FindExecution(const std::string& id, const std::string& owner) const;

  // History beyond the recent view, from the audit log (monitor/audit_history.h); an error when
  // this daemon keeps no audit log.
  bool has_audit_log() const { return audit_ != nullptr; }
  Result<HistoryPage> History(const HistoryQuery& query, const HistoryLimits& limits = {}) const;
  // The daemon's and the host's CPU and memory now (monitor/host_usage.h).
  nlohmann::json HostTotals() { return usage_sampler_.Sample(); }

  // Stops webhooks and closes event subscribers (shutdown).
  void Stop();

 private:
  explicit Monitor(MonitorOptions opts);
  void OnAlert(Execution& ex, const protocol::Event& e);
  void OnUsage(Execution& ex, const BoxUsage& u);
  nlohmann::json RunningJson(const Execution& ex) const;
  std::string TraceKindLabel(const std::string& kind);

  MonitorOptions opts_;
  Metrics metrics_;
  EventBus events_;
  std::unique_ptr<AuditLog> audit_;
  std::unique_ptr<WebhookSender> webhooks_;
  UsageSampler usage_sampler_;

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Execution>> running_;
  struct Kept {
    std::string owner;
    nlohmann::json view;
    size_t bytes = 0;  // of view, serialized
  };
  std::deque<Kept> recent_;  // newest first
  size_t recent_bytes_ = 0;
  std::set<std::string> trace_kinds_;  // metric labels of trace kinds seen (bounded)
};

}  // namespace lsb::monitor
