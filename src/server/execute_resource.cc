// POST /v1/execute: one program in a fresh box. With ?stream=true (or Accept: text/event-stream)
// the answer is server-sent events: stdout/stderr chunks and alerts as they happen, then one
// "result" (or "error") event last.
#include <mutex>

#include "server/execute_plan.h"
#include "server/routes.h"

namespace lsb::server {
namespace {

using nlohmann::json;

bool WantsStream(const HttpRequest& req) {
  std::string s = req.Query("stream");
  if (s == "true" || s == "1") return true;
  return req.Header("accept").find("text/event-stream") != std::string::npos;
}

std::string SseEvent(const char* name, const json& data) {
  return std::string("event: ") + name + "\ndata: " +
         data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

Reply Stream(ServerContext& ctx, const ExecutionPlan& plan, ResponseStream& out) {
  // Callbacks run on the worker thread; the connection thread waits in RunPlan meanwhile, so the
  // stream has one writer at a time. `begun` is set by the first callback or by the task itself.
  std::mutex mu;
  bool begun = false;
  auto begin = [&] {
    std::lock_guard<std::mutex> lock(mu);
    if (begun) return;
    out.Begin(200, "text/event-stream");  // a client gone is noticed by Write(); the run goes on
    begun = true;
  };
  RunCallbacks cb;
  cb.on_stdout = [&](std::string_view d) {
    begin();
    out.Write(SseEvent("stdout", {{"data", std::string(d)}}));
  };
  cb.on_stderr = [&](std::string_view d) {
    begin();
    out.Write(SseEvent("stderr", {{"data", std::string(d)}}));
  };
  cb.on_event = [&](const protocol::Event& e) {
    if (e.rule.empty()) return;  // trace records are not alerts
    begin();
    out.Write(SseEvent("alert", json(e)));
  };
  cb.on_usage = [&](const BoxUsage& u) {  // live CPU/RAM of the box, every second
    begin();
    json j = json::object();
    j["cpu_ms"] = u.cpu_ns ? json(*u.cpu_ns / 1000000) : json(nullptr);
    j["memory_bytes"] = u.memory_bytes ? json(*u.memory_bytes) : json(nullptr);
    out.Write(SseEvent("usage", j));
  };
  auto r = RunPlan(ctx, plan, cb);
  if (!r.ok() && !begun) return ErrorResponse(r.error());  // nothing sent yet: a plain error answer
  begin();
  if (r.ok()) {
    out.Write(SseEvent("result", ExecResultJson(*r, plan.policy.name)));
  } else {
    out.Write(SseEvent("error", ErrorJson(r.error())));
  }
  return Reply::Streamed();
}

}  // namespace

void AddExecuteRoutes(Router& router, ServerContext& ctx) {
  router.Add("POST", "/v1/execute", [&ctx](HttpRequest& req, ResponseStream& out) -> Reply {
    auto j = ParseObject(req.body);
    if (!j.ok()) return ErrorResponse(j.error());
    auto body = ParseExecuteBody(*j, false);
    if (!body.ok()) return ErrorResponse(body.error());
    auto plan = PlanExecution(ctx, req.owner, std::move(*body));
    if (!plan.ok()) return ErrorResponse(plan.error());
    if (WantsStream(req)) return Stream(ctx, *plan, out);
    auto r = RunPlan(ctx, *plan);
    if (!r.ok()) return ErrorResponse(r.error());
    return JsonResponse(200, ExecResultJson(*r, plan->policy.name));
  });
}

}  // namespace lsb::server
