// POST /v1/execute: one program in a fresh box. With ?stream=true (or Accept: text/event-stream)
// the answer is server-sent events: stdout/stderr chunks and alerts as they happen, then one
// "result" (or "error") event last. With "async": true (or Prefer: respond-async, ?async=true) it is queued and
// answered 202 with its id; the result is fetched later from GET /v1/executions/{id}.
#include <memory>
#include <optional>
#include <thread>

#include "server/async_form.h"
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
  // Output events: "data" is text; "data_base64" carries the exact bytes when they are not UTF-8.
  auto output = [](std::string_view d) {
    json j = json::object();
    SetOutputField(j, "data", d);
    return j;
  };
  cb.on_stdout = [&](std::string_view d) { queue.Push(SseEvent("stdout", output(d))); };
  cb.on_stderr = [&](std::string_view d) { queue.Push(SseEvent("stderr", output(d))); };
  cb.on_event = [&](const protocol::Event& e) {
    if (e.rule == protocol::AlertRule::kNone) return;  // trace records are not alerts
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
      queue.Finish(SseEvent("result", ExecResultJson(*r, plan.policy.name, ctx.node)));
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

// The asynchronous form: queued now, answered 202 with the id; the result waits in the store
// (execution_store.h) for GET /v1/executions/{id}. Refused like the synchronous form when the
// executor has no room (429), so no more work is accepted than the daemon would run.
Reply SubmitAsync(ServerContext& ctx, ExecutionPlan plan) {
  if (!ctx.executions) return ErrorResponse(BadRequest("async: this daemon keeps no asynchronous results"));
  const std::string id = plan.execution_id;
  ExecutionStore& store = *ctx.executions;
  if (!store.Add(id, plan.owner, plan.policy.name)) return ErrorResponse(AsyncStoreFull(store));
  auto shared = std::make_shared<const ExecutionPlan>(std::move(plan));
  std::string policy = shared->policy.name;
  auto admission = SubmitPlan(
      ctx, shared, [&store, id] { store.Start(id); },
      [&store, id, policy, node = ctx.node](ApiOr<ExecResult> r) {
        store.Finish(id, r.ok() ? ExecResultJson(*r, policy, node) : ErrorJson(r.error()));
      });
  if (admission != sched::Admission::kAccepted) {
    store.Forget(id);
    return ErrorResponse(FromAdmission(admission));
  }
  return AsyncAccepted(id);
}

}  // namespace

void AddExecuteRoutes(Router& router, ServerContext& ctx) {
  router.Add("POST", "/v1/execute", [&ctx](HttpRequest& req, ResponseStream& out) -> Reply {
    auto j = ParseObject(req.body);
    if (!j.ok()) return ErrorResponse(j.error());
    auto async = TakeAsyncFlag(*j, req);
    if (!async.ok()) return ErrorResponse(async.error());
    auto body = ParseExecuteBody(*j, false);
    if (!body.ok()) return ErrorResponse(body.error());
    auto plan = PlanExecution(ctx, req.owner, std::move(*body));
    if (!plan.ok()) return ErrorResponse(plan.error());
    bool stream = WantsStream(req);
    if (*async) {
      if (stream) return ErrorResponse(BadRequest("async: choose the streaming form or the asynchronous one, not both"));
      return SubmitAsync(ctx, std::move(*plan));
    }
    // The id is named before the run: a client sees it in the headers of either form.
    if (stream) {
      out.AddHeader("X-Execution-Id", plan->execution_id);
      return Stream(ctx, *plan, out);
    }
    auto r = RunPlan(ctx, *plan);
    if (!r.ok()) return ErrorResponse(r.error());
    HttpResponse res = JsonResponse(200, ExecResultJson(*r, plan->policy.name, ctx.node));
    res.headers.emplace_back("X-Execution-Id", plan->execution_id);
    return res;
  });
}

}  // namespace lsb::server
