// POST /v1/batch: many tasks, each in a fresh box, run concurrently (at most `concurrency` at a
// time, and never more than the executor's workers: the answer's "concurrency" says what was
// granted and why when less than asked), answered in request order. A task that is
// invalid or fails gets {"error": {...}} in its slot; the others still run. With "async": true
// (or ?async=true, Prefer: respond-async) it is answered 202 with an id at once, and its whole
// answer is kept like an asynchronous execution's result (execution_store.h). Memory: before it
// runs, a batch reserves from the daemon's fan-out budget (byte_budget.h) its answer as held and
// as sent plus one running task's worst case; further tasks run beside it only while the budget
// has room for each, and the reservation ends once the answer is written.
#include <algorithm>
#include <mutex>
#include <optional>
#include <semaphore>
#include <thread>

#include "server/async_form.h"
#include "server/execute_plan.h"
#include "server/fanout_reserve.h"
#include "server/json_budget.h"
#include "server/routes.h"
#include "server/unknown_field.h"

namespace lsb::server {
namespace {

using nlohmann::json;

// A batch checked and planned: every task's plan (or its refusal) and the concurrency granted.
struct BatchPlan {
  std::vector<std::optional<ApiOr<ExecutionPlan>>> plans;
  size_t concurrency = 1;
  json granted;
  bool async = false;
  SharedReservation reserved;  // the answer and one task slot (TaskWorstBytes of the largest)
  uint64_t slot = 0;
};

// What one running task may hold in the daemon before its result is cut to its share: its output
// as captured and as JSON (a NUL byte costs six when dumped; invalid UTF-8 is U+FFFD text plus
// base64), its collected files and rich outputs as read and as JSON.
uint64_t TaskWorstBytes(const ServerContext& ctx, const ExecutionPlan& p) {
  uint64_t bytes = 10 * p.policy.output_bytes;  // raw, text (U+FFFD: 3x), base64, and each dumped
  if (!p.request.collect.empty()) bytes += 2 * CollectLimitsOf(ctx, p).max_bytes;
  const std::string& lang = p.request.language.empty() ? p.policy.default_language : p.request.language;
  if (lang == "python") bytes += 2 * OutputsLimitsOf(ctx, p).max_bytes;
  return bytes;
}

// Each result's share of the answer: the response budget less the envelope
// {"concurrency":{...},"results":[...]} and the commas between results, split evenly.
size_t ResultShare(const ServerContext& ctx, size_t n, const json& granted) {
  const size_t envelope = sizeof("{\"concurrency\":,\"results\":[]}") - 1 + granted.dump().size() + n;
  const size_t budget = static_cast<size_t>(ctx.limits.max_batch_response_bytes);
  return (budget > envelope ? budget - envelope : 0) / std::max<size_t>(n, 1);
}

// The answer's worst case: its results while they are JSON and the text that is sent (written
// from a copy), each up to the response budget.
uint64_t AnswerWorstBytes(const ServerContext& ctx, uint64_t tasks_worst) {
  return 2 * std::min<uint64_t>(ctx.limits.max_batch_response_bytes, tasks_worst + (64u << 10));
}

// Reserves the answer and one slot of the largest task before anything runs.
std::optional<ApiError> ReserveBatch(ServerContext& ctx, BatchPlan& b) {
  uint64_t all = 0;
  for (auto& p : b.plans)
    if (p->ok()) {
      const uint64_t t = TaskWorstBytes(ctx, **p);
      b.slot = std::max(b.slot, t);
      all += t;
    }
  auto r = ReserveFanout(ctx, AnswerWorstBytes(ctx, all) + b.slot,
                         "a batch of " + std::to_string(b.plans.size()) + " tasks");
  if (!r.ok()) return r.error();
  b.reserved = std::move(*r);
  return std::nullopt;
}

ApiOr<BatchPlan> PlanBatch(ServerContext& ctx, HttpRequest& req) {
  auto j = ParseObject(req.body);
  if (!j.ok()) return j.error();
  for (const auto& [k, _] : j->items())
    if (k != "tasks" && k != "concurrency" && k != "async")
      return UnknownField("", k, {"tasks", "concurrency", "async"});
  auto async = TakeAsyncFlag(*j, req);
  if (!async.ok()) return async.error();
  if (!j->contains("tasks") || !(*j)["tasks"].is_array())
    return BadRequest("tasks: is required (an array of execute bodies)");
  const json& tasks = (*j)["tasks"];
  if (tasks.size() > ctx.limits.max_batch_tasks)
    return ApiError{ApiCode::kPayloadTooLarge, "tasks: " + std::to_string(tasks.size()) +
                                                   " tasks; a batch may have at most " +
                                                   std::to_string(ctx.limits.max_batch_tasks)};
  BatchPlan b;
  b.async = *async;
  // Never more at once than the executor's workers; a request asking for more is told so.
  const size_t workers = ctx.executor.workers();
  b.concurrency = workers;
  b.granted = {{"requested", nullptr}, {"granted", workers}};
  if (j->contains("concurrency") && !(*j)["concurrency"].is_null()) {
    const json& c = (*j)["concurrency"];
    if (!c.is_number_integer() || c.get<int64_t>() < 1) return BadRequest("concurrency: must be a positive integer");
    size_t requested = static_cast<size_t>(c.get<int64_t>());
    b.concurrency = std::min(workers, requested);
    b.granted = {{"requested", requested}, {"granted", b.concurrency}};
    if (requested > workers)
      b.granted["reason"] = "the daemon runs at most " + std::to_string(workers) +
                            " executions at once (serve --max-concurrency; the default is sized by box cost, "
                            "docs/api.md \"Concurrency and queue\")";
  }
  // Admission for the batch as a whole: refuse it while the executor has no room at all.
  if (ctx.executor.queued() >= ctx.executor.queue_limit()) return FromAdmission(sched::Admission::kQueueFull);

  size_t n = tasks.size();
  b.plans.resize(n);
  for (size_t i = 0; i < n; ++i) {
    std::string where = "tasks[" + std::to_string(i) + "].";
    auto body = ParseExecuteBody(tasks[i], false, where);
    if (!body.ok()) {
      b.plans[i].emplace(body.error());
      continue;
    }
    b.plans[i].emplace(PlanExecution(ctx, req.owner, std::move(*body), where));
  }
  const size_t share = std::max<size_t>(ResultShare(ctx, n, b.granted), 1);
  for (auto& p : b.plans)
    if (p->ok()) (**p).answer_share = share;
  return b;
}

// Runs every planned task (blocking) and answers {"results": [...], "concurrency": {...}}.
json RunBatch(ServerContext& ctx, BatchPlan& b) {
  auto& plans = b.plans;
  const size_t n = plans.size();
  const size_t concurrency = b.concurrency;
  const json& granted = b.granted;
  // One waiter thread per running task, at most `concurrency` at once; each blocks in RunPlan.
  // Each result becomes its JSON at once, cut to its share of the response's byte budget (as
  // encoded: a NUL costs six bytes), so neither the answer nor the daemon's memory while the
  // batch runs grows past the budget, whatever the programs print.
  const size_t share = ResultShare(ctx, n, granted);
  std::vector<json> results(n);
  std::counting_semaphore<1 << 16> slots(static_cast<std::ptrdiff_t>(concurrency));
  std::mutex own_slot;  // the slot the batch reserved: a task without a further one waits for it
  std::vector<std::thread> waiters;
  for (size_t i = 0; i < n; ++i) {
    if (!plans[i]->ok()) {
      results[i] = ErrorJson(plans[i]->error());
      continue;
    }
    slots.acquire();
    waiters.emplace_back([&, i] {
      std::optional<Reservation> extra = TryFanout(ctx, b.slot);
      std::unique_lock<std::mutex> own(own_slot, std::defer_lock);
      if (!extra) own.lock();
      auto r = RunPlan(ctx, **plans[i], {}, /*wait_for_room=*/true, "batch");
      if (r.ok()) {
        results[i] = ExecResultJson(*r, (*plans[i])->policy.name, ctx.node);
        FitResultJson(results[i], share);
      } else {
        results[i] = ErrorJson(r.error());
      }
      r = ApiError{};  // the task's raw result goes before its slot does
      extra.reset();
      if (own.owns_lock()) own.unlock();
      ReturnFreedMemory();
      slots.release();
    });
  }
  for (auto& t : waiters) t.join();

  json out = json::array();
  for (auto& r : results) out.push_back(std::move(r));
  return {{"results", std::move(out)}, {"concurrency", granted}};
}

// The asynchronous form: 202 with the id now; the batch runs on a background job (each task on
// the executor as in the synchronous form) and its whole answer becomes the kept result.
Reply SubmitBatch(ServerContext& ctx, const std::string& owner, BatchPlan b) {
  if (!ctx.executions || !ctx.jobs) return ErrorResponse(BadRequest("async: this daemon keeps no asynchronous results"));
  const std::string id = ctx.NewExecutionId();
  ExecutionStore& store = *ctx.executions;
  if (!store.Add(id, owner, "", ExecutionKind::kBatch)) return ErrorResponse(AsyncStoreFull(store));
  auto plan = std::make_shared<BatchPlan>(std::move(b));
  ctx.jobs->Spawn([&ctx, &store, id, plan] {
    store.Start(id);
    store.Finish(id, RunBatch(ctx, *plan));
    plan->reserved.reset();  // the kept answer is bounded by the store's own limits from here
  });
  return AsyncAccepted(id);
}

Reply Batch(ServerContext& ctx, HttpRequest& req) {
  auto b = PlanBatch(ctx, req);
  if (!b.ok()) return ErrorResponse(b.error());
  if (auto full = ReserveBatch(ctx, *b)) return ErrorResponse(*full);
  if (b->async) return SubmitBatch(ctx, req.owner, std::move(*b));
  HttpResponse res = JsonResponse(200, RunBatch(ctx, *b));
  res.hold = b->reserved;  // released once the answer is written (http_server.cc)
  return res;
}

}  // namespace

void AddBatchRoutes(Router& router, ServerContext& ctx) {
  router.Add("POST", "/v1/batch", [&ctx](HttpRequest& req, ResponseStream&) { return Batch(ctx, req); });
}

}  // namespace lsb::server
