#include "monitor/monitor.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "monitor/cpu_share.h"
#include "base/sha256.h"
#include "policy/alert_rules.h"

namespace lsb::monitor {
namespace {

using nlohmann::json;

const std::vector<double> kLatencyBuckets = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};

std::string Cut(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n); }

json EventJson(const protocol::Event& e) {
  json j = e;
  return j;
}

size_t JsonBytes(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace).size(); }

// A recent execution's view bounded to `max` bytes of JSON: the trace goes first, then the
// alerts past the first ten, then the output (the view's cost is fixed per execution).
size_t BoundView(json& view, size_t max) {
  size_t bytes = JsonBytes(view);
  if (bytes <= max) return bytes;
  if (view.contains("trace")) {
    view["trace_omitted"] = view["trace"].size();
    view.erase("trace");
    bytes = JsonBytes(view);
  }
  if (bytes > max && view.contains("alerts") && view["alerts"].size() > 10) {
    json& a = view["alerts"];
    view["alerts_omitted"] = a.size() - 10;
    a.erase(a.begin() + 10, a.end());
    bytes = JsonBytes(view);
  }
  for (const char* k : {"stdout", "stderr", "alerts"}) {
    if (bytes <= max) break;
    if (!view.contains(k)) continue;
    view[k] = view[k].is_string() ? json("") : json::array();
    view["view_truncated"] = true;
    bytes = JsonBytes(view);
  }
  return bytes;
}

}  // namespace

Monitor::Monitor(MonitorOptions opts) : opts_(std::move(opts)) {
  metrics_.Declare("lsb_executions_total", MetricType::kCounter, "Executions finished, by status and policy.");
  metrics_.Declare("lsb_execution_errors_total", MetricType::kCounter,
                   "Executions the sandbox could not run (sandbox_error), by policy.");
  metrics_.Declare("lsb_execution_duration_seconds", MetricType::kHistogram,
                   "Wall time of executions as the daemon saw them (box start to result), by policy.", kLatencyBuckets);
  metrics_.Declare("lsb_execution_cpu_seconds_total", MetricType::kCounter, "CPU time used by programs, by policy.");
  metrics_.Declare("lsb_alerts_total", MetricType::kCounter, "Alerts raised, by rule and severity.");
  metrics_.Declare("lsb_trace_events_total", MetricType::kCounter, "Trace events (monitoring.trace), by kind.");
  metrics_.Declare("lsb_executions_running", MetricType::kGauge, "Executions running now.");
  metrics_.Declare("lsb_executor_workers", MetricType::kGauge, "Worker threads of the executor (the pool size).");
  metrics_.Declare("lsb_executor_busy", MetricType::kGauge, "Workers running box work now.");
  metrics_.Declare("lsb_queue_depth", MetricType::kGauge, "Requests waiting for a worker.");
  metrics_.Declare("lsb_queue_limit", MetricType::kGauge, "Requests that may wait before 429.");
  metrics_.Declare("lsb_boxes_live", MetricType::kGauge, "Boxes alive now (executions and sessions).");
  metrics_.Declare("lsb_sessions_active", MetricType::kGauge, "Sessions open now.");
  metrics_.Declare("lsb_sessions_limit", MetricType::kGauge, "Sessions that may be open at once.");
  metrics_.Declare("lsb_sessions_queued", MetricType::kGauge, "Session creates waiting for a slot at the limit.");
  metrics_.Declare("lsb_sessions_created_total", MetricType::kCounter, "Sessions created.");
  metrics_.Declare("lsb_session_pool_warm", MetricType::kGauge, "Warm python session boxes waiting (--session-pool).");
  metrics_.Declare("lsb_session_pool_hits_total", MetricType::kCounter, "Sessions started from a warm box.");
  metrics_.Declare("lsb_session_pool_misses_total", MetricType::kCounter,
                   "Sessions with a setup started cold (their key had no warm box).");
  metrics_.Declare("lsb_image_pulls_total", MetricType::kCounter,
                   "Pulls into the image store on first use (container.pull), by result.");
  metrics_.Declare("lsb_http_requests_total", MetricType::kCounter, "HTTP requests answered, by route and status.");
  metrics_.Declare("lsb_http_request_duration_seconds", MetricType::kHistogram, "HTTP request latency, by route.",
                   kLatencyBuckets);
  metrics_.Declare("lsb_events_subscribers", MetricType::kGauge, "Clients on GET /v1/events.");
  metrics_.Declare("lsb_events_dropped_total", MetricType::kCounter,
                   "Live events dropped for subscribers that fell behind.");
  metrics_.Declare("lsb_audit_records_total", MetricType::kCounter, "Audit log records made durable.");
  metrics_.Declare("lsb_audit_errors_total", MetricType::kCounter, "Audit log writes that failed.");
  metrics_.Declare("lsb_webhook_deliveries_total", MetricType::kCounter, "Webhook deliveries, by outcome.");
  metrics_.Declare("lsb_webhook_retries_total", MetricType::kCounter, "Webhook attempts retried.");
  metrics_.Declare("lsb_webhook_dropped_total", MetricType::kCounter,
                   "Webhook deliveries dropped (queue full or shutdown).");
  metrics_.Declare("lsb_alerts_suppressed_total", MetricType::kCounter,
                   "Alerts past the per-execution bound: counted, not recorded or posted one by one.");
}

Monitor::~Monitor() { Stop(); }

Result<std::unique_ptr<Monitor>> Monitor::Create(MonitorOptions opts) {
  std::unique_ptr<Monitor> m(new Monitor(std::move(opts)));
  if (!m->opts_.audit_path.empty()) {
    AuditLogOptions a;
    a.path = m->opts_.audit_path;
    a.max_bytes = m->opts_.audit_max_bytes;
    a.keep = m->opts_.audit_keep;
    LSB_ASSIGN_OR_RETURN(m->audit_, AuditLog::Open(a));
  }
  (void)m->usage_sampler_.Sample();  // so the first totals have an interval to measure CPU over
  if (!m->opts_.webhooks.urls.empty()) m->webhooks_ = std::make_unique<WebhookSender>(m->opts_.webhooks, m->metrics_);
  return m;
}

void Monitor::Stop() {
  events_.CloseAll();
  if (webhooks_) webhooks_->Stop();
}

std::shared_ptr<Execution> Monitor::Begin(ExecutionInfo info) {
  auto ex = std::make_shared<Execution>();
  ex->code_sha256_ = Hex(Sha256(info.code));
  ex->code_bytes_ = info.code.size();
  info.code.clear();
  ex->info_ = std::move(info);
  ex->cpu_cores_ = CpuLimitCores(ex->info_.cpu_limit);
  ex->started_ = std::chrono::system_clock::now();
  ex->started_mono_ = std::chrono::steady_clock::now();
  json started;
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_[ex->info_.id] = ex;
    started = RunningJson(*ex);
  }
  events_.Publish("execution_started", std::move(started), ex->info_.owner);
  return ex;
}

json Monitor::RunningJson(const Execution& ex) const {
  json j = {{"execution_id", ex.info_.id},
            {"policy", ex.info_.policy},
            {"kind", ex.info_.kind},
            {"language", ex.info_.language},
            {"started_at", Rfc3339(ex.started_)},
            {"code_sha256", ex.code_sha256_},
            {"code_bytes", ex.code_bytes_},
            {"cpu_limit", ex.cpu_cores_},
            {"state", "running"}};
  if (!ex.info_.session_id.empty()) j["session_id"] = ex.info_.session_id;
  if (ex.last_usage_) {
    j["cpu_ms"] = ex.last_usage_->cpu_ns ? json(*ex.last_usage_->cpu_ns / 1000000) : json(nullptr);
    j["memory_bytes"] = ex.last_usage_->memory_bytes ? json(*ex.last_usage_->memory_bytes) : json(nullptr);
  }
  if (ex.last_cpu_percent_) {
    j["cpu_percent"] = *ex.last_cpu_percent_;
    j["cpu_percent_of_limit"] = *ex.last_cpu_percent_ / ex.cpu_cores_;
  }
  return j;
}

void Monitor::OnAlert(Execution& ex, const protocol::Event& e) {
  // A summary stands for `count` alerts past the runner's bound (protocol/alert_coalescer.h); the
  // runner passes at most one per rule, so it is always recorded.
  bool summary = e.kind == "summary";
  double weight = summary && e.count > 0 ? static_cast<double>(e.count) : 1.0;
  metrics_.Inc("lsb_alerts_total", {{"rule", protocol::Name(e.rule)}, {"severity", protocol::Name(e.severity)}}, weight);
  if (summary) metrics_.Inc("lsb_alerts_suppressed_total", {}, weight);
  if (!summary && ex.alerts_recorded_ >= opts_.alert_record_limit) {
    metrics_.Inc("lsb_alerts_suppressed_total");
    return;
  }
  ++ex.alerts_recorded_;
  json a = EventJson(e);
  a["execution_id"] = ex.info_.id;
  a["policy"] = ex.info_.policy;
  a["time"] = Rfc3339(std::chrono::system_clock::now());
  if (!ex.info_.session_id.empty()) a["session_id"] = ex.info_.session_id;
  if (webhooks_) {
    json body = {{"event", "alert"}, {"alert", a}};
    webhooks_->Send("alert", e.severity, body.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  if (size_t d = events_.Publish("alert", a, ex.info_.owner)) metrics_.Inc("lsb_events_dropped_total", {}, static_cast<double>(d));
  if (audit_) {
    a["type"] = "alert";
    ex.alert_records_.push_back(std::move(a));
  }
}

std::string Monitor::TraceKindLabel(const std::string& kind) {
  // A syscall name; at most kMaxTraceKinds different ones are labels, the rest "other".
  static constexpr size_t kMaxTraceKinds = 64;
  bool plain = !kind.empty() && kind.size() <= 32 &&
               kind.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
  if (!plain) return "other";
  std::lock_guard<std::mutex> lock(mu_);
  if (trace_kinds_.count(kind)) return kind;
  if (trace_kinds_.size() >= kMaxTraceKinds) return "other";
  trace_kinds_.insert(kind);
  return kind;
}

void Monitor::OnUsage(Execution& ex, const BoxUsage& u) {
  auto now = std::chrono::steady_clock::now();
  json j = {{"execution_id", ex.info_.id}, {"policy", ex.info_.policy}};
  j["memory_bytes"] = u.memory_bytes ? json(*u.memory_bytes) : json(nullptr);
  j["cpu_ms"] = u.cpu_ns ? json(*u.cpu_ns / 1000000) : json(nullptr);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ex.last_usage_ && ex.last_usage_->cpu_ns && u.cpu_ns && *u.cpu_ns >= *ex.last_usage_->cpu_ns) {
      double wall_ns = std::chrono::duration<double, std::nano>(now - ex.last_usage_at_).count();
      if (wall_ns > 0) {
        ex.last_cpu_percent_ = 100.0 * static_cast<double>(*u.cpu_ns - *ex.last_usage_->cpu_ns) / wall_ns;
        j["cpu_percent"] = *ex.last_cpu_percent_;
        j["cpu_percent_of_limit"] = *ex.last_cpu_percent_ / ex.cpu_cores_;
      }
    }
    ex.last_usage_ = u;
    ex.last_usage_at_ = now;
  }
  j["elapsed_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(now - ex.started_mono_).count();
  events_.Publish("usage", std::move(j), ex.info_.owner);
}

RunCallbacks Monitor::Wrap(const std::shared_ptr<Execution>& ex, RunCallbacks inner) {
  RunCallbacks cb = inner;
  Execution* e = ex.get();  // the caller keeps `ex` alive for the run
  cb.on_event = [this, e, fn = inner.on_event](const protocol::Event& ev) {
    if (ev.rule == protocol::AlertRule::kNone) {
      metrics_.Inc("lsb_trace_events_total", {{"kind", TraceKindLabel(ev.kind)}});
      json t = EventJson(ev);
      size_t bytes = JsonBytes(t);
      if (e->trace_.size() < opts_.trace_limit && e->trace_bytes_ + bytes <= opts_.trace_max_bytes) {
        e->trace_bytes_ += bytes;
        e->trace_.push_back(t);
      } else {
        ++e->trace_dropped_;
      }
      t["execution_id"] = e->info_.id;
      events_.Publish("trace", std::move(t), e->info_.owner);
    } else {
      ++e->alerts_seen_;
      OnAlert(*e, ev);
    }
    if (fn) fn(ev);
  };
  cb.usage_interval_ms = opts_.usage_interval_ms;
  cb.on_usage = [this, e, fn = inner.on_usage](const BoxUsage& u) {
    OnUsage(*e, u);
    if (fn) fn(u);
  };
  return cb;
}

void Monitor::Finish(const std::shared_ptr<Execution>& ex, const ExecResult* r, const std::string& error,
                     const std::string& backend) {
  const std::string& policy = ex->info_.policy;
  // Alerts the callbacks did not see: the host's own (timeout, OOM, pids, output) and those of
  // runs without callbacks (session interpreters).
  if (r) {
    size_t with_rule = 0;
    for (const auto& a : r->alerts) {
      if (a.rule == protocol::AlertRule::kNone) continue;
      if (++with_rule > ex->alerts_seen_) OnAlert(*ex, a);
    }
  }
  auto now = std::chrono::system_clock::now();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - ex->started_mono_).count();
  json rec = {{"type", "execution"},
              {"time", Rfc3339(now)},
              {"started_at", Rfc3339(ex->started_)},
              {"execution_id", ex->info_.id},
              {"policy", policy},
              {"kind", ex->info_.kind},
              {"language", ex->info_.language},
              {"backend", backend},
              {"code_sha256", ex->code_sha256_},
              {"code_bytes", ex->code_bytes_}};
  if (!ex->info_.session_id.empty()) rec["session_id"] = ex->info_.session_id;
  if (!ex->info_.owner.empty()) rec["owner"] = ex->info_.owner;  // the token's id, never the token
  std::string status;
  if (r) {
    status = ExecStatusName(r->status);
    rec["status"] = status;
    rec["exit_code"] = r->exit_code;
    rec["signal"] = r->signal;
    rec["truncated"] = r->truncated;
    rec["trust"] = r->trust;
    rec["usage"] = {{"duration_ms", r->duration_ms},
                    {"cpu_ms", r->cpu_ms},
                    {"memory_peak_bytes", r->memory_peak_bytes ? json(*r->memory_peak_bytes) : json(nullptr)},
                    {"stdout_bytes", r->stdout_data.size()},
                    {"stderr_bytes", r->stderr_data.size()},
                    {"cpu_limit", ex->cpu_cores_}};
    rec["alerts"] = json::array();
    for (const auto& a : r->alerts) rec["alerts"].push_back(a);
    metrics_.Inc("lsb_executions_total", {{"status", status}, {"policy", policy}});
    metrics_.Inc("lsb_execution_cpu_seconds_total", {{"policy", policy}}, static_cast<double>(r->cpu_ms) / 1000.0);
  } else {
    status = "sandbox_error";
    rec["status"] = status;
    rec["error"] = error;
    metrics_.Inc("lsb_execution_errors_total", {{"policy", policy}});
  }
  metrics_.Observe("lsb_execution_duration_seconds", {{"policy", policy}}, seconds);
  if (!ex->trace_.empty() || ex->trace_dropped_) {
    rec["trace"] = ex->trace_;
    if (ex->trace_dropped_) rec["trace_dropped"] = ex->trace_dropped_;
  }

  // The dashboard's view keeps the output (bounded); the audit log keeps sizes and hashes only.
  json view = rec;
  view.erase("type");
  view.erase("owner");
  if (r) {
    view["stdout"] = Cut(r->stdout_data, opts_.output_keep_bytes);
    view["stderr"] = Cut(r->stderr_data, opts_.output_keep_bytes);
    view["duration_ms"] = r->duration_ms;
    view["cpu_ms"] = r->cpu_ms;
    view["memory_peak_bytes"] = r->memory_peak_bytes ? json(*r->memory_peak_bytes) : json(nullptr);
    if (auto pct = CpuPercentOfLimit(static_cast<double>(r->cpu_ms), static_cast<double>(r->duration_ms), ex->cpu_cores_))
      view["cpu_percent_of_limit"] = *pct;
  }
  view["cpu_limit"] = ex->cpu_cores_;
  view["state"] = "finished";

  if (audit_) {
    std::vector<json> records = std::move(ex->alert_records_);
    records.insert(records.begin(), rec);
    auto st = audit_->AppendAll(records);
    if (st.ok()) {
      metrics_.Inc("lsb_audit_records_total", {}, static_cast<double>(records.size()));
    } else {
      metrics_.Inc("lsb_audit_errors_total");
    }
  }
  json summary = view;
  summary.erase("stdout");
  summary.erase("stderr");
  summary.erase("trace");
  size_t view_bytes = BoundView(view, opts_.recent_entry_bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_.erase(ex->info_.id);
    recent_.push_front({ex->info_.owner, std::move(view), view_bytes});
    recent_bytes_ += view_bytes;
    while (recent_.size() > 1 && (recent_.size() > opts_.recent_limit || recent_bytes_ > opts_.recent_max_bytes)) {
      recent_bytes_ -= recent_.back().bytes;
      recent_.pop_back();
    }
  }
  events_.Publish("execution_finished", std::move(summary), ex->info_.owner);
}

void Monitor::SessionEvent(const std::string& type, json data, const std::string& owner) {
  if (type == "session_created") metrics_.Inc("lsb_sessions_created_total");
  data["time"] = Rfc3339(std::chrono::system_clock::now());
  events_.Publish(type, std::move(data), owner);
}

void Monitor::ImagePullEvent(json data) {
  std::string state = data.value("state", "");
  if (state == "done" || state == "failed") metrics_.Inc("lsb_image_pulls_total", {{"result", state}});
  data["time"] = Rfc3339(std::chrono::system_clock::now());
  events_.PublishToAll("image_pull", std::move(data));
}

void Monitor::HttpRequest(const std::string& route, int status, double seconds) {
  metrics_.Inc("lsb_http_requests_total", {{"route", route}, {"status", std::to_string(status)}});
  metrics_.Observe("lsb_http_request_duration_seconds", {{"route", route}}, seconds);
}

json Monitor::Running(const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mu_);
  json list = json::array();
  for (const auto& [_, ex] : running_)
    if (ex->info_.owner == owner) list.push_back(RunningJson(*ex));
  return list;
}

size_t Monitor::RunningCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_.size();
}

json Monitor::Recent(size_t limit, const std::string& owner, const ExecutionFilter* filter) const {
  std::lock_guard<std::mutex> lock(mu_);
  json list = json::array();
  for (const auto& entry : recent_) {
    if (list.size() >= limit) break;
    if (entry.owner != owner) continue;
    if (filter && !filter->Matches(entry.view)) continue;
    json s = entry.view;
    s.erase("stdout");
    s.erase("stderr");
    s.erase("trace");
    list.push_back(std::move(s));
  }
  return list;
}

Result<HistoryPage> Monitor::History(const HistoryQuery& query, const HistoryLimits& limits) const {
  if (!audit_) return Error{"this daemon keeps no audit log (start it with --audit-log FILE)"};
  HistoryLimits l = limits;
  l.max_files = std::max(0, opts_.audit_keep);  // FILE.1 ... FILE.<keep>: what rotation keeps
  return ReadHistory(audit_->path(), query, l);
}

std::optional<json> Monitor::FindExecution(const std::string& id, const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& entry : recent_)
    if (entry.owner == owner && entry.view.value("execution_id", "") == id) return entry.view;
  auto it = running_.find(id);
  if (it != running_.end() && it->second->info_.owner == owner) return RunningJson(*it->second);
  return std::nullopt;
}

}  // namespace lsb::monitor
