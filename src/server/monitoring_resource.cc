// Monitoring routes (docs/monitoring.md): GET /metrics (Prometheus text), GET /v1/events (live
// server-sent events), GET /v1/executions[/{id}] (running and recent executions, for the
// dashboard), GET /v1/history (older executions, from the audit log), GET /v1/overview (the
// daemon's and host's totals), GET / (the dashboard page itself, embedded in the binary).
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <set>

#include "base/time_format.h"
#include "monitor/dashboard_page.h"
#include "scheduler/one_shot_pool.h"
#include "scheduler/session/session_pool.h"
#include "server/api_error.h"
#include "server/json_codec.h"
#include "server/routes.h"

namespace lsb::server {
namespace {

using nlohmann::json;

ApiError MonitoringOff() {
  return NotFound("monitoring is off on this daemon (started with --monitoring off)");
}

void SetLiveGauges(ServerContext& ctx, monitor::Monitor& m) {
  auto& mx = m.metrics();
  mx.Set("lsb_executor_workers", {}, static_cast<double>(ctx.executor.workers()));
  mx.Set("lsb_executor_busy", {}, static_cast<double>(ctx.executor.running()));
  mx.Set("lsb_queue_depth", {}, static_cast<double>(ctx.executor.queued()));
  mx.Set("lsb_queue_limit", {}, static_cast<double>(ctx.executor.queue_limit()));
  mx.Set("lsb_boxes_live", {}, static_cast<double>(ctx.boxes.size()));
  mx.Set("lsb_sessions_active", {}, static_cast<double>(ctx.sessions.count()));
  mx.Set("lsb_sessions_limit", {}, static_cast<double>(ctx.sessions.max_sessions()));
  mx.Set("lsb_sessions_queued", {}, static_cast<double>(ctx.sessions.queue().waiting()));
  mx.Set("lsb_events_subscribers", {}, static_cast<double>(m.events().subscribers()));
  mx.Set("lsb_executions_running", {}, static_cast<double>(m.RunningCount()));
  if (const sched::SessionPool* p = ctx.boxes.session_pool()) {
    auto s = p->stats();
    mx.Set("lsb_session_pool_warm", {}, static_cast<double>(s.ready));
    mx.Set("lsb_session_pool_hits_total", {}, static_cast<double>(s.hits));
    mx.Set("lsb_session_pool_misses_total", {}, static_cast<double>(s.misses));
  }
}

std::set<std::string> Types(const std::string& csv) {
  std::set<std::string> out;
  size_t i = 0;
  while (i < csv.size()) {
    size_t j = csv.find(',', i);
    if (j == std::string::npos) j = csv.size();
    if (j > i) out.insert(csv.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

// One SSE client: its own subscription, written on this connection's thread until the client goes
// away or the daemon shuts down. A comment line every 15 s keeps proxies (and us) aware of it.
Reply Events(ServerContext& ctx, HttpRequest& req, ResponseStream& out) {
  auto& bus = ctx.monitor->events();
  auto sub = bus.Subscribe(Types(req.Query("types")), req.owner);
  struct Unsub {
    monitor::EventBus& bus;
    std::shared_ptr<monitor::Subscription> sub;
    ~Unsub() { bus.Unsubscribe(sub); }
  } unsub{bus, sub};
  if (!out.Begin(200, "text/event-stream")) return Reply::Streamed();
  if (!out.Write("retry: 2000\n: connected\n\n")) return Reply::Streamed();
  auto last_write = std::chrono::steady_clock::now();
  while (!ctx.shutting_down) {
    auto e = sub->Next(std::chrono::milliseconds(500));
    auto now = std::chrono::steady_clock::now();
    std::string chunk;
    if (uint64_t dropped = sub->TakeDropped()) {  // counted in the metrics at publish
      chunk += "event: dropped\ndata: {\"dropped\": " + std::to_string(dropped) + "}\n\n";
    }
    if (e) {
      chunk += "id: " + std::to_string(e->seq) + "\nevent: " + e->type +
               "\ndata: " + e->data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
    } else if (now - last_write > std::chrono::seconds(15)) {
      chunk += ": keepalive\n\n";
    }
    if (chunk.empty()) continue;
    if (!out.Write(chunk)) break;
    last_write = now;
  }
  return Reply::Streamed();
}

// ?name=N: a whole number from 1 to `max`, or `fallback` when absent.
ApiOr<size_t> CountParam(const HttpRequest& req, const char* name, size_t fallback, size_t max) {
  std::string l = req.Query(name);
  if (l.empty()) return fallback;
  char* end = nullptr;
  unsigned long v = std::strtoul(l.c_str(), &end, 10);
  if (l[0] == '-' || *end != '\0' || v == 0 || v > max)
    return BadRequest(std::string(name) + ": a whole number from 1 to " + std::to_string(max) + ", got '" + l + "'");
  return static_cast<size_t>(v);
}

monitor::FilterChoices FilterChoicesNow(ServerContext& ctx) {
  std::vector<std::string> names;
  for (const auto& [name, _] : *ctx.policies.Snapshot()) names.push_back(name);
  return monitor::BuiltinFilterChoices(std::move(names));
}

// ?policy=&status=&rule=, each checked against what this daemon knows (400 lists the valid ones).
ApiOr<monitor::ExecutionFilter> FilterParams(ServerContext& ctx, const HttpRequest& req) {
  auto f = monitor::MakeExecutionFilter(req.Query("policy"), req.Query("status"), req.Query("rule"),
                                        FilterChoicesNow(ctx));
  if (!f.ok()) return BadRequest(f.error().message);
  return *f;
}

Reply Executions(ServerContext& ctx, HttpRequest& req) {
  auto limit = CountParam(req, "limit", 50, 1000);
  if (!limit.ok()) return ErrorResponse(limit.error());
  auto filter = FilterParams(ctx, req);
  if (!filter.ok()) return ErrorResponse(filter.error());
  // A running execution has no status yet and its alerts arrive as events: a status or rule
  // filter selects among finished ones only.
  json running = json::array();
  if (filter->status.empty() && filter->rule.empty())
    for (auto& e : ctx.monitor->Running(req.owner))
      if (filter->policy.empty() || e.value("policy", "") == filter->policy) running.push_back(std::move(e));
  return JsonResponse(200, {{"running", running}, {"recent", ctx.monitor->Recent(*limit, req.owner, &*filter)}});
}

Reply History(ServerContext& ctx, HttpRequest& req) {
  if (!ctx.monitor->has_audit_log())
    return ErrorResponse(NotFound("no history: this daemon keeps no audit log (start it with --audit-log FILE); "
                                  "GET /v1/executions has the recent executions"));
  monitor::HistoryQuery q;
  q.owner = req.owner;
  auto limit = CountParam(req, "limit", 50, 200);
  if (!limit.ok()) return ErrorResponse(limit.error());
  q.limit = *limit;
  auto filter = FilterParams(ctx, req);
  if (!filter.ok()) return ErrorResponse(filter.error());
  q.filter = *filter;
  std::string cursor = req.Query("cursor");
  if (!cursor.empty()) {
    q.cursor = monitor::ParseHistoryCursor(cursor);
    if (!q.cursor) return ErrorResponse(BadRequest("cursor: not one this daemon gave; pass next_cursor of the previous "
                                                   "page as it is, or leave cursor out for the newest"));
  }
  auto page = ctx.monitor->History(q);
  if (!page.ok()) return ErrorResponse({ApiCode::kInternal, "history: " + page.error().message});
  return JsonResponse(200, {{"executions", page->executions},
                            {"next_cursor", page->next ? json(monitor::FormatHistoryCursor(*page->next)) : json(nullptr)},
                            {"scanned_bytes", page->scanned_bytes},
                            {"skipped_lines", page->skipped_lines},
                            {"cursor_expired", page->cursor_expired}});
}

// Daemon-wide counts (as /metrics and /readyz give them) and the caller's own: the sessions and
// running executions "mine" are the caller's, every other number is of the whole daemon.
json OverviewJson(ServerContext& ctx, const std::string& owner) {
  json totals = ctx.monitor->HostTotals();
  totals["daemon"]["started_at"] = Rfc3339(ctx.started_at);
  json pool = nullptr;
  if (auto st = sched::WarmPoolStats(ctx.backend, ctx.boxes)) {
    pool = {{"per_policy", st->per_policy}, {"warm_boxes", st->ready}, {"by_policy", st->ready_by_policy},
            {"reaping", st->reaping}, {"hits", st->hits}, {"misses", st->misses}};
  }
  auto choices = FilterChoicesNow(ctx);
  return {{"owner", owner},
          {"node", ctx.node},
          {"backend", ctx.backend.name()},
          {"daemon", totals["daemon"]},
          {"host", totals["host"]},
          {"executor", {{"workers", ctx.executor.workers()}, {"busy", ctx.executor.running()},
                        {"queued", ctx.executor.queued()}, {"queue_limit", ctx.executor.queue_limit()}}},
          {"pool", pool},
          {"sessions", {{"active", ctx.sessions.count()}, {"limit", ctx.sessions.max_sessions()},
                        {"queued", ctx.sessions.queue().waiting()}, {"mine", ctx.sessions.List(owner).size()}}},
          {"executions", {{"running", ctx.monitor->RunningCount()},
                          {"running_mine", ctx.monitor->Running(owner).size()}}},
          {"audit_log", ctx.monitor->has_audit_log()},
          {"filters", {{"policies", choices.policies}, {"statuses", choices.statuses}, {"rules", choices.rules}}}};
}

Reply Overview(ServerContext& ctx, HttpRequest& req) { return JsonResponse(200, OverviewJson(ctx, req.owner)); }

// What the dashboard draws before its first poll (dashboard_page.h). Only without tokens: the
// page is served to anyone, and then everyone may read these routes anyway.
std::optional<json> DashboardFirst(ServerContext& ctx) {
  if (!ctx.monitor || !ctx.tokens.empty()) return std::nullopt;
  json sessions = json::array();
  for (const auto& s : ctx.sessions.List("")) sessions.push_back(SessionJson(s->Info()));
  return json{{"overview", OverviewJson(ctx, "")},
              {"sessions", {{"sessions", std::move(sessions)}}},
              {"executions", {{"running", ctx.monitor->Running("")}, {"recent", ctx.monitor->Recent(50, "")}}}};
}

// ?wait=SECONDS of GET /v1/executions/{id}: 0 (absent) to kMaxExecutionWaitSeconds, fractions allowed.
ApiOr<std::chrono::milliseconds> ExecutionWait(const HttpRequest& req) {
  std::string w = req.Query("wait");
  if (w.empty()) return std::chrono::milliseconds(0);
  char* end = nullptr;
  errno = 0;
  double secs = std::strtod(w.c_str(), &end);
  if (errno != 0 || end != w.c_str() + w.size() || !(secs >= 0) || secs > kMaxExecutionWaitSeconds)
    return BadRequest("wait: '" + w + "' is not a number of seconds from 0 to " +
                      std::to_string(static_cast<int>(kMaxExecutionWaitSeconds)) +
                      "; ask again after a long-poll that ended unfinished");
  return std::chrono::milliseconds(static_cast<int64_t>(secs * 1000));
}

}  // namespace

void AddMonitoringRoutes(Router& router, ServerContext& ctx) {
  router.Add("GET", "/metrics", [&ctx](HttpRequest&, ResponseStream&) -> Reply {
    if (!ctx.monitor) return ErrorResponse(MonitoringOff());
    SetLiveGauges(ctx, *ctx.monitor);
    HttpResponse res;
    res.status = 200;
    res.content_type = "text/plain; version=0.0.4; charset=utf-8";
    res.body = ctx.monitor->metrics().Render();
    return res;
  });
  router.Add("GET", "/v1/events", [&ctx](HttpRequest& req, ResponseStream& out) -> Reply {
    if (!ctx.monitor) return ErrorResponse(MonitoringOff());
    return Events(ctx, req, out);
  });
  router.Add("GET", "/v1/executions", [&ctx](HttpRequest& req, ResponseStream&) -> Reply {
    if (!ctx.monitor) return ErrorResponse(MonitoringOff());
    return Executions(ctx, req);
  });
  router.Add("GET", "/v1/history", [&ctx](HttpRequest& req, ResponseStream&) -> Reply {
    if (!ctx.monitor) return ErrorResponse(MonitoringOff());
    return History(ctx, req);
  });
  router.Add("GET", "/v1/overview", [&ctx](HttpRequest& req, ResponseStream&) -> Reply {
    if (!ctx.monitor) return ErrorResponse(MonitoringOff());
    return Overview(ctx, req);
  });
  router.Add("GET", "/v1/executions/{id}", [&ctx](HttpRequest& req, ResponseStream&) -> Reply {
    // An asynchronous execution's state or result first (execution_store.h), monitoring or not;
    // ?wait=SECONDS long-polls while it is pending.
    auto wait = ExecutionWait(req);
    if (!wait.ok()) return ErrorResponse(wait.error());
    if (ctx.executions) {
      auto a = *wait > std::chrono::milliseconds(0) ? ctx.executions->Wait(req.params.at("id"), req.owner, *wait)
                                                     : ctx.executions->Find(req.params.at("id"), req.owner);
      if (a) return JsonResponse(200, *a);
    }
    if (auto elsewhere = MissingExecutionHere(ctx, req.params.at("id")); !elsewhere.empty())
      return ErrorResponse(NotFound(elsewhere));
    if (!ctx.monitor) return ErrorResponse(MonitoringOff());
    auto e = ctx.monitor->FindExecution(req.params.at("id"), req.owner);
    if (!e) return ErrorResponse(NotFound("no execution " + req.params.at("id") +
                                          " among the running and recent ones (older ones are in the audit log)"));
    return JsonResponse(200, *e);
  });
  router.Add("GET", "/", [&ctx](HttpRequest&, ResponseStream&) -> Reply {
    HttpResponse res;
    res.status = 200;
    res.content_type = "text/html; charset=utf-8";
    res.headers.emplace_back("Content-Security-Policy",
                             "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'");
    res.headers.emplace_back("Cache-Control", "no-store");
    res.body = monitor::DashboardPage(DashboardFirst(ctx));
    return res;
  });
}

}  // namespace lsb::server
