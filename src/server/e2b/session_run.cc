#include "server/e2b/session_run.h"

#include <memory>

#include "server/execute_plan.h"
#include "server/session_ops.h"

namespace lsb::server::e2b {

ApiOr<ExecResult> RunMonitored(ServerContext& ctx, sched::Session& s, ExecRequest er, const std::string& shown,
                               const RunCallbacks& cb) {
  if (s.Info().state == "busy") return session_ops::Conflict(s.id());
  return session_ops::OnSession<ExecResult>(ctx, s, [&]() -> ApiOr<ExecResult> {
    std::shared_ptr<monitor::Execution> ex;
    RunCallbacks callbacks = cb;
    if (ctx.monitor) {
      er.execution_id = ctx.NewExecutionId();
      std::string lang = er.language.empty() ? s.Info().language : er.language;
      ex = ctx.monitor->Begin({er.execution_id, s.policy().name, "session", s.id(), lang,
                               shown, s.owner(), s.policy().cpu});
      callbacks = ctx.monitor->Wrap(ex, cb);
    }
    auto x = s.Execute(er, ctx.limits.collect, {}, callbacks);
    if (ex && x.ok()) x->execution_id = er.execution_id;
    if (ex) ctx.monitor->Finish(ex, x.ok() ? &*x : nullptr, x.ok() ? "" : x.error().message, ctx.backend.name());
    if (!x.ok()) return SandboxError(x.error().message);
    return std::move(*x);
  });
}

ApiOr<ExecResult> RunHelper(ServerContext& ctx, sched::Session& s, const std::string& python) {
  if (s.Info().state == "busy") return session_ops::Conflict(s.id());
  ExecRequest er;
  er.code = python;
  er.language = "python";
  return session_ops::OnSession<ExecResult>(ctx, s, [&]() -> ApiOr<ExecResult> {
    auto x = s.Execute(er, ctx.limits.collect);
    if (!x.ok()) return SandboxError(x.error().message);
    return std::move(*x);
  });
}

}  // namespace lsb::server::e2b
