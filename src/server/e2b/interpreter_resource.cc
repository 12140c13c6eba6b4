// The code interpreter (E2b-Sandbox-Port 49999; docs/e2b.md "Code interpreter"): POST /execute
// runs a cell in the sandbox's persistent interpreter, as a v1 session execute (monitored and
// audited with the client's code), and answers NDJSON lines as @e2b/code-interpreter reads them:
// stdout, stderr, result (text, png, html...), error {name, value, traceback},
// number_of_executions. A sandbox has one context, its interpreter ("default"); a cell this front
// door cannot run as asked is answered as an error line with our message, which the SDK shows as
// execution.error.
#include <algorithm>
#include <chrono>

#include "base/random_id.h"
#include "server/e2b/code_cell.h"
#include "server/e2b/front_door.h"
#include "server/e2b/session_run.h"

namespace lsb::server::e2b {
namespace {

using nlohmann::json;

std::string Line(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

json ErrorLine(const std::string& name, const std::string& value) {
  return {{"type", "error"}, {"name", name}, {"value", value}, {"traceback", name + ": " + value}};
}

HttpResponse Ndjson(const std::string& body) {
  HttpResponse r;
  r.status = 200;
  r.content_type = "application/x-ndjson";
  r.body = body;
  return r;
}

HttpResponse Refuse(const std::string& why) { return Ndjson(Line(ErrorLine("UnsupportedError", why))); }

// A rich-output entry ({"image/png": base64, "text/plain": ...}) as an E2B result's fields.
json E2bResult(const json& entry) {
  static const std::pair<const char*, const char*> kKeys[] = {
      {"image/png", "png"},       {"image/jpeg", "jpeg"},     {"image/svg+xml", "svg"},
      {"text/html", "html"},      {"text/markdown", "markdown"}, {"text/latex", "latex"},
      {"application/json", "json"}, {"text/plain", "text"}};
  json res = json::object();
  for (const auto& [mime, key] : kKeys)
    if (entry.contains(mime)) res[key] = entry[mime];
  return res;
}

Reply Execute(ServerContext& ctx, SandboxTable& table, HttpRequest& req) {
  auto target = DataTarget(table, req);
  if (!target) return Refuse("the sandbox is gone");
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object() || !body.contains("code") || !body["code"].is_string())
    return Refuse("the body is {\"code\": \"...\"}: give the code to run as a string");
  sched::Session& s = *target->session;
  std::string lang = body.value("language", json()).is_string() ? body["language"].get<std::string>() : "";
  if (!lang.empty() && lang != "python")
    return Refuse("language '" + lang + "': this sandbox's interpreter runs python only");
  if (s.Info().language != "python")
    return Refuse("this sandbox's policy '" + s.policy().name + "' starts no python interpreter (its language is " +
                  s.Info().language + ")");
  std::string context = body.value("context_id", json()).is_string() ? body["context_id"].get<std::string>() : "";
  if (!context.empty() && context != "default")
    return Refuse("context '" + context + "': a sandbox here has one context, 'default' (its interpreter)");
  if (body.contains("env_vars") && body["env_vars"].is_object() && !body["env_vars"].empty())
    return Refuse("env_vars: the interpreter keeps the environment it started with; set os.environ in the code instead");
  std::string code = body["code"];
  std::string marker = RandomHex("\x1elsb-cell-", 8) + ":";
  ExecRequest er;
  er.code = CodeCellSource(code, marker);
  er.language = "python";
  auto r = RunMonitored(ctx, s, std::move(er), code);
  if (!r.ok()) return Ndjson(Line(ErrorLine("SandboxError", r.error().message)));
  CellReport cell = ParseCellReport(r->stdout_data, marker);
  std::string out;
  auto now = [] {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  };
  if (!cell.stdout_data.empty()) out += Line({{"type", "stdout"}, {"text", cell.stdout_data}, {"timestamp", now()}});
  if (!r->stderr_data.empty()) out += Line({{"type", "stderr"}, {"text", r->stderr_data}, {"timestamp", now()}});
  for (auto res : cell.results) {
    res["type"] = "result";
    out += Line(res);
  }
  // Figures the session interpreter captured itself (rich outputs, docs/api.md): its entries are
  // {MIME type: data}; E2B names the same formats by short keys. Only when the cell's own report
  // carried no image, so one figure is never sent twice.
  const bool has_image = std::any_of(cell.results.begin(), cell.results.end(),
                                     [](const json& x) { return x.contains("png") || x.contains("jpeg"); });
  for (const json& entry : r->outputs) {
    if (has_image || !entry.is_object() || entry.contains("error")) continue;
    json res = E2bResult(entry);
    if (res.empty()) continue;
    res["type"] = "result";
    res["is_main_result"] = false;
    out += Line(res);
  }
  if (!cell.error.is_null() && cell.error.is_object()) {
    json e = cell.error;
    e["type"] = "error";
    out += Line(e);
  } else if (!cell.reported || r->status != ExecStatus::kOk) {
    std::string why = r->status == ExecStatus::kTimeout
                          ? "the cell ran past the policy's timeout of " + std::to_string(s.policy().timeout_ms / 1000) +
                                " s; the interpreter was restarted and its variables are lost"
                          : std::string("the cell ended without its report (") + ExecStatusName(r->status) +
                                (r->truncated ? ", output cut at the policy's cap" : "") +
                                "); the interpreter may have been restarted";
    out += Line(ErrorLine(r->status == ExecStatus::kTimeout ? "TimeoutError" : "SandboxError", why));
  }
  out += Line({{"type", "number_of_executions"}, {"execution_count", s.Info().executions}});
  return Ndjson(out);
}

json DefaultContext(const sched::Session& s) {
  return {{"id", "default"}, {"language", "python"}, {"cwd", s.policy().workdir}};
}

}  // namespace

void AddInterpreterRoutes(Router& r, ServerContext& ctx, SandboxTable& table) {
  r.Add("POST", "/execute", [&ctx, &table](HttpRequest& req, ResponseStream&) { return Execute(ctx, table, req); },
        BodyKind::kRaw);
  r.Add("GET", "/contexts", [&table](HttpRequest& req, ResponseStream&) -> Reply {
    auto t = DataTarget(table, req);
    if (!t) return JsonResponse(404, {{"code", 404}, {"message", "the sandbox is gone"}});
    return JsonResponse(200, json::array({DefaultContext(*t->session)}));
  });
  r.Add("POST", "/contexts", [](HttpRequest&, ResponseStream&) -> Reply {
    return JsonResponse(501, {{"code", 501},
                              {"message", "a sandbox here has one context, 'default' (its interpreter); create another "
                                          "sandbox for separate state (docs/e2b.md)"}});
  });
}

}  // namespace lsb::server::e2b
