// Monitoring routes (docs/monitoring.md): GET /metrics (Prometheus text), GET /v1/events (live
// server-sent events), GET /v1/executions[/{id}] (running and recent executions, for the
// dashboard), GET / (the dashboard page itself, embedded in the binary).
#include <chrono>
#include <cstdlib>
#include <set>

#include "monitor/dashboard_page.h"
#include "server/api_error.h"
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
  mx.Set("lsb_events_subscribers", {}, static_cast<double>(m.events().subscribers()));
  mx.Set("lsb_executions_running", {}, static_cast<double>(m.RunningCount()));
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
    size_t limit = 50;
    std::string l = req.Query("limit");
    if (!l.empty()) {
      char* end = nullptr;
      unsigned long v = std::strtoul(l.c_str(), &end, 10);
      if (*end != '\0' || v == 0 || v > 1000) return ErrorResponse(BadRequest("limit: a whole number from 1 to 1000"));
      limit = v;
    }
    return JsonResponse(200, {{"running", ctx.monitor->Running(req.owner)}, {"recent", ctx.monitor->Recent(limit, req.owner)}});
  });
  router.Add("GET", "/v1/executions/{id}", [&ctx](HttpRequest& req, ResponseStream&) -> Reply {
    // An asynchronous execution's state or result first (execution_store.h), monitoring or not.
    if (ctx.executions)
      if (auto a = ctx.executions->Find(req.params.at("id"), req.owner)) return JsonResponse(200, *a);
    if (!ctx.monitor) return ErrorResponse(MonitoringOff());
    auto e = ctx.monitor->FindExecution(req.params.at("id"), req.owner);
    if (!e) return ErrorResponse(NotFound("no execution " + req.params.at("id") +
                                          " among the running and recent ones (older ones are in the audit log)"));
    return JsonResponse(200, *e);
  });
  router.Add("GET", "/", [](HttpRequest&, ResponseStream&) -> Reply {
    HttpResponse res;
    res.status = 200;
    res.content_type = "text/html; charset=utf-8";
    res.headers.emplace_back("Content-Security-Policy",
                             "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'");
    res.headers.emplace_back("Cache-Control", "no-store");
    res.body = monitor::DashboardPage();
    return res;
  });
}

}  // namespace lsb::server
