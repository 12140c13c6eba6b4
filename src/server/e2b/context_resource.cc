// The code interpreter's contexts (docs/e2b.md "Code contexts"): a context is a separate globals
// dict in the sandbox's one interpreter (PythonDriver::Namespace), so variables of one are not
// seen by another; modules, the working directory, os.environ and the process are shared. At most
// kMaxContexts per sandbox besides "default" (the session's own globals, the one commands and v1
// executes use). Ids are random and looked up in the sandbox's own record: another sandbox's
// context id is not found. An interpreter restart (a timeout, os._exit) empties every context.
#include <algorithm>

#include "policy/policy.h"
#include "server/e2b/front_door.h"
#include "server/session_ops.h"

namespace lsb::server::e2b {
namespace {

using nlohmann::json;

HttpResponse Answer(int status, const std::string& message) {
  return JsonResponse(status, {{"code", status}, {"message", message}});
}
HttpResponse Answer(const ApiError& e) { return Answer(HttpStatus(e.code), e.message); }

json ContextJson(const std::string& id, const sched::Session& s) {
  return {{"id", id}, {"language", "python"}, {"cwd", s.policy().workdir}};
}

// Op on the interpreter, on the executor like every session operation (409 while one runs).
ApiOr<bool> OnNamespace(ServerContext& ctx, sched::Session& s, const std::string& name, sched::NamespaceOp op) {
  return session_ops::OnSession<bool>(ctx, s, [&]() -> ApiOr<bool> {
    auto r = s.Namespace(name, op);
    if (!r.ok()) return ApiError{ApiCode::kInternal, r.error().message};
    if (r->status != sched::FileOpStatus::kOk) return ApiError{ApiCode::kInternal, r->message};
    return true;
  });
}

Reply Create(SandboxTable& table, HttpRequest& req) {
  auto t = DataTarget(table, req);
  if (!t) return Answer(404, "the sandbox is gone");
  sched::Session& s = *t->session;
  json body = json::parse(req.body.empty() ? "{}" : req.body, nullptr, false);
  if (!body.is_object()) return Answer(400, "the body is {\"language\": ..., \"cwd\": ...}");
  std::string lang = body.value("language", json()).is_string() ? body["language"].get<std::string>() : "";
  if (!lang.empty() && lang != "python")
    return Answer(400, "language '" + lang + "': this sandbox's interpreter runs python only");
  if (!s.RunsInInterpreter("")) return Answer(400, "this sandbox's policy '" + s.policy().name + "' starts no python interpreter");
  std::string cwd = body.value("cwd", json()).is_string() ? body["cwd"].get<std::string>() : "";
  if (!cwd.empty() && cwd != s.policy().workdir)
    return Answer(400, "cwd: the contexts of a sandbox share its interpreter's working directory " +
                           s.policy().workdir + "; os.chdir inside the code instead");
  auto id = table.AddContext(t->record.id);
  if (!id)
    return Answer(400, "sandbox " + t->record.id + " holds its maximum of " + std::to_string(kMaxContexts) +
                           " contexts besides 'default'; remove one first");
  return JsonResponse(200, ContextJson(*id, s));
}

Reply List(SandboxTable& table, HttpRequest& req) {
  auto t = DataTarget(table, req);
  if (!t) return Answer(404, "the sandbox is gone");
  json out = json::array({ContextJson("default", *t->session)});
  for (const auto& c : t->record.contexts) out.push_back(ContextJson(c, *t->session));
  return JsonResponse(200, out);
}

// DELETE (remove) and POST .../restart (empty its globals again).
Reply Change(ServerContext& ctx, SandboxTable& table, HttpRequest& req, bool remove) {
  auto t = DataTarget(table, req);
  if (!t) return Answer(404, "the sandbox is gone");
  std::string id = req.params.at("id");
  const auto& known = t->record.contexts;
  bool is_default = id == "default";
  if (is_default && remove) return Answer(400, "the 'default' context is the sandbox's own; it cannot be removed");
  if (!is_default && std::find(known.begin(), known.end(), id) == known.end())
    return Answer(404, "context '" + id + "' not found in sandbox " + t->record.id);
  if (!t->session->RunsInInterpreter("")) return Answer(400, "this sandbox starts no python interpreter");
  auto r = OnNamespace(ctx, *t->session, is_default ? "" : id,
                       remove ? sched::NamespaceOp::kDelete : sched::NamespaceOp::kRestart);
  if (!r.ok()) return Answer(r.error());
  if (remove) table.RemoveContext(t->record.id, id);
  HttpResponse res;
  res.status = 204;
  return res;
}

}  // namespace

void AddContextRoutes(Router& r, ServerContext& ctx, SandboxTable& table) {
  r.Add("POST", "/contexts", [&table](HttpRequest& req, ResponseStream&) { return Create(table, req); },
        BodyKind::kRaw);
  r.Add("GET", "/contexts", [&table](HttpRequest& req, ResponseStream&) { return List(table, req); });
  r.Add("DELETE", "/contexts/{id}",
        [&ctx, &table](HttpRequest& req, ResponseStream&) { return Change(ctx, table, req, true); });
  r.Add("POST", "/contexts/{id}/restart",
        [&ctx, &table](HttpRequest& req, ResponseStream&) { return Change(ctx, table, req, false); }, BodyKind::kRaw);
}

}  // namespace lsb::server::e2b
