// POST /v1/batch: many tasks, each in a fresh box, run concurrently (at most `concurrency` at a
// time, and never more than the executor's workers: the answer's "concurrency" says what was
// granted and why when less than asked), answered in request order. A task that is
// invalid or fails gets {"error": {...}} in its slot; the others still run.
#include <algorithm>
#include <optional>
#include <semaphore>
#include <thread>

#include "server/execute_plan.h"
#include "server/json_budget.h"
#include "server/routes.h"

namespace lsb::server {
namespace {

using nlohmann::json;

Reply Batch(ServerContext& ctx, HttpRequest& req) {
  auto j = ParseObject(req.body);
  if (!j.ok()) return ErrorResponse(j.error());
  for (const auto& [k, _] : j->items())
    if (k != "tasks" && k != "concurrency") return ErrorResponse(BadRequest(k + ": unknown field"));
  if (!j->contains("tasks") || !(*j)["tasks"].is_array())
    return ErrorResponse(BadRequest("tasks: is required (an array of execute bodies)"));
  const json& tasks = (*j)["tasks"];
  if (tasks.size() > ctx.limits.max_batch_tasks)
    return ErrorResponse({ApiCode::kPayloadTooLarge, "tasks: " + std::to_string(tasks.size()) +
                                                         " tasks; a batch may have at most " +
                                                         std::to_string(ctx.limits.max_batch_tasks)});
  // Never more at once than the executor's workers; a request asking for more is told so.
  const size_t workers = ctx.executor.workers();
  size_t concurrency = workers;
  json granted = {{"requested", nullptr}, {"granted", workers}};
  if (j->contains("concurrency") && !(*j)["concurrency"].is_null()) {
    const json& c = (*j)["concurrency"];
    if (!c.is_number_integer() || c.get<int64_t>() < 1)
      return ErrorResponse(BadRequest("concurrency: must be a positive integer"));
    size_t requested = static_cast<size_t>(c.get<int64_t>());
    concurrency = std::min(workers, requested);
    granted = {{"requested", requested}, {"granted", concurrency}};
    if (requested > workers)
      granted["reason"] = "the daemon runs at most " + std::to_string(workers) +
                          " executions at once (serve --max-concurrency; the default is sized by box cost, "
                          "docs/api.md \"Concurrency and queue\")";
  }
  // Admission for the batch as a whole: refuse it while the executor has no room at all.
  if (ctx.executor.queued() >= ctx.executor.queue_limit())
    return ErrorResponse(FromAdmission(sched::Admission::kQueueFull));

  size_t n = tasks.size();
  std::vector<std::optional<ApiOr<ExecutionPlan>>> plans(n);
  for (size_t i = 0; i < n; ++i) {
    std::string where = "tasks[" + std::to_string(i) + "].";
    auto body = ParseExecuteBody(tasks[i], false, where);
    if (!body.ok()) {
      plans[i].emplace(body.error());
      continue;
    }
    plans[i].emplace(PlanExecution(ctx, req.owner, std::move(*body), where));
  }

  // One waiter thread per running task, at most `concurrency` at once; each blocks in RunPlan.
  // Each result becomes its JSON at once, cut to its share of the response's byte budget (as
  // encoded: a NUL costs six bytes), so neither the answer nor the daemon's memory while the
  // batch runs grows past the budget, whatever the programs print.
  // The envelope {"concurrency":{...},"results":[...]} and the commas between results come out of
  // the budget first.
  const size_t envelope = sizeof("{\"concurrency\":,\"results\":[]}") - 1 + granted.dump().size() + n;
  const size_t budget = static_cast<size_t>(ctx.limits.max_batch_response_bytes);
  const size_t share = (budget > envelope ? budget - envelope : 0) / std::max<size_t>(n, 1);
  std::vector<json> results(n);
  std::counting_semaphore<1 << 16> slots(static_cast<std::ptrdiff_t>(concurrency));
  std::vector<std::thread> waiters;
  for (size_t i = 0; i < n; ++i) {
    if (!plans[i]->ok()) {
      results[i] = ErrorJson(plans[i]->error());
      continue;
    }
    slots.acquire();
    waiters.emplace_back([&, i] {
      auto r = RunPlan(ctx, **plans[i], {}, /*wait_for_room=*/true, "batch");
      if (r.ok()) {
        results[i] = ExecResultJson(*r, (*plans[i])->policy.name, ctx.node);
        FitResultJson(results[i], share);
      } else {
        results[i] = ErrorJson(r.error());
      }
      slots.release();
    });
  }
  for (auto& t : waiters) t.join();

  json out = json::array();
  for (auto& r : results) out.push_back(std::move(r));
  return JsonResponse(200, {{"results", std::move(out)}, {"concurrency", std::move(granted)}});
}

}  // namespace

void AddBatchRoutes(Router& router, ServerContext& ctx) {
  router.Add("POST", "/v1/batch", [&ctx](HttpRequest& req, ResponseStream&) { return Batch(ctx, req); });
}

}  // namespace lsb::server
