// POST /v1/execute: one program in a fresh box. With ?stream=true (or Accept: text/event-stream)
// the answer is server-sent events: stdout/stderr chunks and alerts as they happen, then one
// "result" (or "error") event last.
#include <optional>
#include <thread>

#include "server/execute_plan.h"
#include "server/routes.h"
#include "server/sse_queue.h"

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
  // The run (on the executor, waited for by `runner`) never waits for this client: its callbacks
  // only queue (sse_queue.h), and this thread writes at the client's pace. A client that stops
  // reading is cut by the socket's write timeout; the box still ends at its own timeout.
  SseQueue queue;
  RunCallbacks cb;
  cb.on_stdout = [&](std::string_view d) { queue.Push(SseEvent("stdout", {{"data", std::string(d)}})); };
  cb.on_stderr = [&](std::string_view d) { queue.Push(SseEvent("stderr", {{"data", std::string(d)}})); };
  cb.on_event = [&](const protocol::Event& e) {
    if (e.rule.empty()) return;  // trace records are not alerts
    queue.Push(SseEvent("alert", json(e)));
  };
  cb.on_usage = [&](const BoxUsage& u) {  // live CPU/RAM of the box, every second
    json j = json::object();
    j["cpu_ms"] = u.cpu_ns ? json(*u.cpu_ns / 1000000) : json(nullptr);
    j["memory_bytes"] = u.memory_bytes ? json(*u.memory_bytes) : json(nullptr);
    queue.Push(SseEvent("usage", j));
  };
  std::optional<ApiOr<ExecResult>> result;
  std::thread runner([&] {
    auto r = RunPlan(ctx, plan, cb);
    if (r.ok()) {
      queue.Finish(SseEvent("result", ExecResultJson(*r, plan.policy.name)));
    } else if (queue.ever_pushed()) {
      queue.Finish(SseEvent("error", ErrorJson(r.error())));
    } else {
      queue.Close();  // nothing sent yet: a plain error answer
    }
    result.emplace(std::move(r));
  });
  bool begun = false, client_ok = true;
  while (auto chunk = queue.Pop()) {
    if (!client_ok) continue;  // the client is gone: drain, so the run is never held up
    if (!begun) {
      client_ok = out.Begin(200, "text/event-stream");
      begun = true;
    }
    if (client_ok) client_ok = out.Write(*chunk);
  }
  runner.join();
  if (!begun && !result->ok()) return ErrorResponse(result->error());
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
