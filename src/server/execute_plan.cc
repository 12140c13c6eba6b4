#include "server/execute_plan.h"

#include "policy/tighten.h"
#include "scheduler/driver/python_driver.h"
#include "scheduler/sandbox_path.h"

namespace lsb::server {
ApiOr<std::shared_ptr<const Policy>> ResolvePolicy(ServerContext& ctx, const std::string& name,
                                                   const std::string& field) {
  std::string n = name.empty() ? ctx.limits.default_policy : name;
  auto p = ctx.policies.Find(n);
  if (p) {
    // Refused before any box: starting it would only fail with a 502 (policy_runnable.h).
    Runnability r = ctx.runnability.Of(ctx.policies, *p);
    if (!r.runnable) return BadRequest(field + ": policy '" + n + "' is not runnable here: " + r.reason);
    return p;
  }
  std::string known;
  for (const auto& [k, _] : *ctx.policies.Snapshot()) known += (known.empty() ? "" : ", ") + k;
  return BadRequest(field + ": no policy named '" + n + "' on this daemon (it has: " +
                    (known.empty() ? "none" : known) + "); GET /v1/policies lists them");
}

ApiOr<std::shared_ptr<const sched::UnpackedArchive>> PlanArchive(ServerContext& ctx, const Policy& policy,
                                                                 const std::string& target, std::string_view bytes,
                                                                 const std::string& field) {
  auto dir = sched::CheckSandboxDir(policy, target);
  if (!dir.ok()) return BadRequest(field + "path: " + dir.error().message);
  if (bytes.size() > ctx.limits.max_file_bytes)
    return ApiError{ApiCode::kPayloadTooLarge, field + "the archive is " + std::to_string(bytes.size()) +
                                                   " bytes; the limit is " + std::to_string(ctx.limits.max_file_bytes)};
  auto a = sched::ReadArchive(bytes, *dir, ctx.limits.archive);
  if (!a.ok())
    return ApiError{a.error().code == ErrorCode::kResourceExhausted ? ApiCode::kPayloadTooLarge : ApiCode::kBadRequest,
                    field + a.error().message};
  return std::shared_ptr<const sched::UnpackedArchive>(std::make_shared<sched::UnpackedArchive>(std::move(*a)));
}

ApiError FromRunSpec(const Error& e, const std::string& where) {
  // A command the policy does not allow is 403; every other refusal of a request, env included
  // (docs/api.md "Environment"), is a bad request naming its field.
  if (e.code == ErrorCode::kPermissionDenied && e.field == "command") return {ApiCode::kForbidden, where + e.message};
  return BadRequest(where + e.message);
}

ApiOr<std::vector<std::string>> PlanCollect(ServerContext& ctx, const Policy& policy, std::vector<std::string> collect,
                                            const std::string& where) {
  if (collect.empty()) return collect;
  auto c = sched::CheckCollectPatterns(policy, collect, ctx.limits.collect);
  if (!c.ok()) return BadRequest(where + c.error().message);
  return collect;
}

ApiOr<ExecutionPlan> PlanExecution(ServerContext& ctx, const std::string& owner, ExecuteBody body,
                                   const std::string& where) {
  auto base = ResolvePolicy(ctx, body.policy, where + "policy");
  if (!base.ok()) return base.error();
  auto tight = TightenPolicy(**base, body.overrides);  // refused before any box is started
  if (!tight.ok()) return FromTightening(tight.error(), where);
  ExecutionPlan plan{std::move(*tight), {}, {}, owner, ctx.NewExecutionId()};
  plan.request.code = std::move(body.code);
  plan.request.language = std::move(body.language);
  plan.request.stdin_data = std::move(body.stdin_data);
  plan.request.env = std::move(body.env);
  plan.request.command = std::move(body.command);
  plan.request.outputs = body.outputs;
  if (body.changes) {
    if (!body.changes->empty()) {
      auto dir = sched::CheckSandboxDir(plan.policy, *body.changes);
      if (!dir.ok()) return BadRequest(where + "changes: " + dir.error().message);
    } else if (sched::WritableDirs(plan.policy).empty()) {
      return BadRequest(where + "changes: policy '" + plan.policy.name + "' has no writable path (container.tmpfs, or an overlay in container.mounts)");
    }
    plan.request.changes = body.changes;
  }
  auto collect = PlanCollect(ctx, plan.policy, std::move(body.collect), where);
  if (!collect.ok()) return collect.error();
  plan.request.collect = std::move(*collect);
  auto spec = BuildRunSpec(plan.policy, plan.request);  // language, sizes: a bad request, before any box
  if (!spec.ok()) return FromRunSpec(spec.error(), where);
  for (size_t i = 0; i < body.files.size(); ++i) {
    std::string field = where + "files[" + std::to_string(i) + "]";
    if (body.files[i].archive) {
      auto a = PlanArchive(ctx, plan.policy, body.files[i].path, body.files[i].data, field + ".");
      if (!a.ok()) return a.error();
      plan.files.push_back({body.files[i].path, "", std::move(*a)});
      continue;
    }
    auto path = sched::CheckSandboxPath(plan.policy, body.files[i].path);
    if (!path.ok()) return BadRequest(field + ".path: " + path.error().message);
    if (body.files[i].data.size() > ctx.limits.max_file_bytes)
      return ApiError{ApiCode::kPayloadTooLarge, field + ": " + std::to_string(body.files[i].data.size()) +
                                                     " bytes; the limit per file is " +
                                                     std::to_string(ctx.limits.max_file_bytes)};
    plan.files.push_back({*path, std::move(body.files[i].data), nullptr});
  }
  return plan;
}

std::string CommandText(const std::vector<std::string>& command) {
  std::string s;
  for (const auto& a : command) s += (s.empty() ? "" : " ") + a;
  return s;
}

sched::OutputsLimits OutputsLimitsOf(const ServerContext& ctx, const ExecutionPlan& plan) {
  sched::OutputsLimits l = ctx.limits.outputs;
  if (plan.answer_share) l.max_bytes = std::min(l.max_bytes, plan.answer_share);
  return l;
}

sched::CollectLimits CollectLimitsOf(const ServerContext& ctx, const ExecutionPlan& plan) {
  sched::CollectLimits l = ctx.limits.collect;
  if (plan.answer_share) l.max_bytes = std::min(l.max_bytes, plan.answer_share);
  return l;
}

namespace {

// One plan in a fresh box, on the calling (worker) thread, under the plan's execution id.
Result<ExecResult> RunInBox(ServerContext& ctx, const ExecutionPlan& plan, const RunCallbacks& cb, const char* kind) {
  ExecRequest req = plan.request;
  req.execution_id = plan.execution_id;
  sched::OneShotOptions opts;
  opts.collect = CollectLimitsOf(ctx, plan);
  opts.outputs = OutputsLimitsOf(ctx, plan);
  opts.session.owner = plan.owner;  // a fork server's box comes from this owner's zygote only
  if (!ctx.monitor) return sched::RunOneShot(ctx.backend, ctx.boxes, plan.policy, req, plan.files, cb, opts);
  // Observed: its live events and its result share the id.
  auto ex = ctx.monitor->Begin({req.execution_id, plan.policy.name, kind, "",
                                req.language.empty() ? plan.policy.default_language : req.language,
                                req.command.empty() ? req.code : CommandText(req.command), plan.owner, plan.policy.cpu});
  auto r = sched::RunOneShot(ctx.backend, ctx.boxes, plan.policy, req, plan.files, ctx.monitor->Wrap(ex, cb), opts);
  ctx.monitor->Finish(ex, r.ok() ? &*r : nullptr, r.ok() ? "" : r.error().message, ctx.backend.name());
  return r;
}

}  // namespace

ApiOr<ExecResult> RunPlan(ServerContext& ctx, const ExecutionPlan& plan, const RunCallbacks& cb, bool wait_for_room,
                          const char* kind) {
  sched::Admission admission;
  std::function<Result<ExecResult>()> fn = [&ctx, &plan, &cb, kind] { return RunInBox(ctx, plan, cb, kind); };
  auto r = sched::RunOn<Result<ExecResult>>(ctx.executor, fn, &admission, wait_for_room);
  if (!r) return FromAdmission(admission);
  if (!r->ok()) return SandboxError(r->error().message);
  return std::move(**r);
}

sched::Admission SubmitPlan(ServerContext& ctx, std::shared_ptr<const ExecutionPlan> plan,
                            std::function<void()> started, std::function<void(ApiOr<ExecResult>)> done) {
  // As RunOn: the value is handed on in the continuation, once the worker's slot is free again.
  auto value = std::make_shared<std::optional<Result<ExecResult>>>();
  sched::Executor::Task task = [&ctx, plan, value, started = std::move(started)](bool cancelled) {
    if (cancelled) return;
    if (started) started();
    value->emplace(RunInBox(ctx, *plan, {}, "execute"));
  };
  sched::Executor::Then then = [value, done = std::move(done)] {
    if (!*value) return done(FromAdmission(sched::Admission::kShuttingDown));
    if (!(*value)->ok()) return done(SandboxError((*value)->error().message));
    done(std::move(***value));
  };
  return ctx.executor.Submit(std::move(task), std::move(then));
}

}  // namespace lsb::server
