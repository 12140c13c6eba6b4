// The code interpreter's POST /execute (E2b-Sandbox-Port 49999; docs/e2b.md "Code interpreter"):
// a cell in the sandbox's persistent interpreter, as a v1 session execute (monitored and audited
// with the client's code), answered as NDJSON lines as @e2b/code-interpreter reads them, streamed
// while the cell runs: stdout and stderr as the interpreter prints them, then result (the
// session's rich outputs: the last expression's value and the figures), error {name, value,
// traceback}, number_of_executions. `context_id` picks a code context (context_resource.cc);
// `env_vars` are set in os.environ for the cell and put back after it, under the env rules. A cell
// this front door cannot run as asked is an error line (or an E2B error answer) with our message.
#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "base/base64.h"
#include "inbox/inbox_sources.h"
#include "policy/env_rules.h"
#include "server/e2b/chunk_queue.h"
#include "server/e2b/command_cell.h"
#include "server/e2b/front_door.h"
#include "server/e2b/session_run.h"

namespace lsb::server::e2b {
namespace {

using nlohmann::json;

std::string Line(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

json ErrorLine(const std::string& name, const std::string& value) {
  return {{"type", "error"}, {"name", name}, {"value", value}, {"traceback", name + ": " + value}};
}

HttpResponse Answer(int status, const std::string& message) {
  return JsonResponse(status, {{"code", status}, {"message", message}});
}

// A cell refused before it runs: the SDK shows only the status of a 4xx other than 404, so the
// refusal is an error line it reads as execution.error, with our message.
HttpResponse Refuse(const std::string& name, const std::string& why) {
  HttpResponse r;
  r.status = 200;
  r.content_type = "application/x-ndjson";
  r.body = Line(ErrorLine(name, why));
  return r;
}

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A figure the interpreter rendered (rich_outputs: {image/png, text/plain "<Figure ...>"}) is a
// side result; every other entry is the last expression's value, the cell's main result.
bool IsFigure(const json& entry) {
  return entry.contains("image/png") && entry.contains("text/plain") && entry["text/plain"].is_string() &&
         entry["text/plain"].get<std::string>().rfind("<Figure", 0) == 0;
}

// A rich-output entry ({"image/png": base64, "text/plain": ...}) as an E2B result's fields.
json E2bResult(const json& entry) {
  static const std::pair<const char*, const char*> kKeys[] = {
      {"image/png", "png"},       {"image/jpeg", "jpeg"},     {"image/svg+xml", "svg"},
      {"text/html", "html"},      {"text/markdown", "markdown"}, {"text/latex", "latex"},
      {"application/json", "json"}, {"text/plain", "text"}};
  json res = json::object();
  for (const auto& [mime, key] : kKeys)
    if (entry.contains(mime)) res[key] = entry[mime];
  res["type"] = "result";
  res["is_main_result"] = !IsFigure(entry);
  return res;
}

// The cell's exception as E2B's error line: the interpreter keeps it as sys.last_* (as the
// interactive interpreter does) until the next cell that does not fail; read by a helper
// (src/inbox/e2b_cell_error.py).
std::optional<json> CellError(ServerContext& ctx, sched::Session& s) {
  auto x = RunHelper(ctx, s, std::string(inbox::E2bCellErrorSource()));
  if (!x.ok() || x->stdout_data.empty()) return std::nullopt;
  // Written in the box: only the expected shape is taken.
  json j = json::parse(x->stdout_data, nullptr, false);
  if (!j.is_object() || !j.value("name", json()).is_string() || !j.value("value", json()).is_string() ||
      !j.value("traceback", json()).is_string())
    return std::nullopt;
  return json{{"type", "error"}, {"name", j["name"]}, {"value", j["value"]}, {"traceback", j["traceback"]}};
}

// The line that says why a cell ended other than by finishing or raising.
std::optional<json> EndedLine(const sched::Session& s, const ExecResult& r) {
  if (r.status == ExecStatus::kOk || r.status == ExecStatus::kError) return std::nullopt;
  if (r.status == ExecStatus::kTimeout)
    return ErrorLine("TimeoutError", "the cell ran past the policy's timeout of " +
                                         std::to_string(s.policy().timeout_ms / 1000) +
                                         " s; the interpreter was restarted and its variables are lost");
  return ErrorLine("SandboxError", std::string("the cell ended (") + ExecStatusName(r.status) +
                                       (r.truncated ? ", output cut at the policy's cap" : "") +
                                       "); the interpreter was restarted and its variables are lost");
}

Reply Execute(ServerContext& ctx, SandboxTable& table, HttpRequest& req, ResponseStream& out) {
  auto target = DataTarget(table, req);
  if (!target) return Answer(404, "the sandbox is gone");
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object() || !body.contains("code") || !body["code"].is_string())
    return Answer(400, "the body is {\"code\": \"...\"}: give the code to run as a string");
  sched::Session& s = *target->session;
  std::string lang = body.value("language", json()).is_string() ? body["language"].get<std::string>() : "";
  if (!lang.empty() && lang != "python")
    return Refuse("UnsupportedError", "language '" + lang + "': this sandbox's interpreter runs python only");
  if (!s.RunsInInterpreter(""))
    return Refuse("UnsupportedError", "this sandbox's policy '" + s.policy().name + "' starts no python interpreter (its language is " +
                           s.Info().language + ")");
  std::string context = body.value("context_id", json()).is_string() ? body["context_id"].get<std::string>() : "";
  if (context == "default") context.clear();
  const auto& known = target->record.contexts;
  if (!context.empty() && std::find(known.begin(), known.end(), context) == known.end())
    return Answer(404, "context '" + context + "' not found in sandbox " + target->record.id);
  std::map<std::string, std::string> envs;
  if (body.contains("env_vars") && !body["env_vars"].is_null()) {
    if (!body["env_vars"].is_object()) return Refuse("InvalidArgumentError", "env_vars: an object of strings");
    for (const auto& [k, v] : body["env_vars"].items()) {
      if (!v.is_string()) return Refuse("InvalidArgumentError", "env_vars." + k.substr(0, 64) + ": values are strings");
      envs[k] = v.get<std::string>();
    }
    if (Status st = env::CheckRequestEnv(s.policy().env, envs); !st.ok())
      return Refuse("InvalidArgumentError", "env_vars: " + st.error().message);
  }
  std::string code = body["code"];
  ExecRequest er;
  er.code = code;
  er.language = "python";
  er.context = context;

  ChunkQueue queue;
  RunCallbacks cb;
  cb.on_stdout = [&](std::string_view d) {
    queue.Push(Line({{"type", "stdout"}, {"text", std::string(d)}, {"timestamp", NowUs()}}));
  };
  cb.on_stderr = [&](std::string_view d) {
    queue.Push(Line({{"type", "stderr"}, {"text", std::string(d)}, {"timestamp", NowUs()}}));
  };
  std::thread runner([&] {
    std::optional<ApiOr<ExecResult>> saved;
    if (!envs.empty()) {
      // The values before, printed for the restore; then the cell's own.
      saved.emplace(RunHelper(ctx, s, EnvCellSource(envs, true)));
    }
    if (saved && !saved->ok()) {
      queue.Push(Line(ErrorLine("SandboxError", "env_vars could not be set: " + saved->error().message)));
    } else {
      auto r = RunMonitored(ctx, s, std::move(er), code, cb);
      // Read before the restore below: a cell that does not fail clears sys.last_*.
      std::optional<json> err;
      if (r.ok()) err = r->status == ExecStatus::kError ? CellError(ctx, s) : EndedLine(s, *r);
      if (saved) {
        json before = json::parse((*saved)->stdout_data, nullptr, false);
        if (before.is_object())
          (void)RunHelper(ctx, s, EnvCellSource(before, false));
      }
      if (!r.ok()) {
        queue.Push(Line(ErrorLine("SandboxError", r.error().message)));
      } else {
        for (const json& entry : r->outputs) {
          if (!entry.is_object()) continue;
          if (entry.contains("error")) {  // an output the interpreter could not return: say why
            queue.Push(Line({{"type", "stderr"}, {"text", "output not returned: " + entry["error"].dump() + "\n"},
                             {"timestamp", NowUs()}}));
            continue;
          }
          queue.Push(Line(E2bResult(entry)));
        }
        if (err) queue.Push(Line(*err));
      }
    }
    queue.Push(Line({{"type", "number_of_executions"}, {"execution_count", s.Info().executions}}));
    queue.Close();
  });
  bool client_ok = out.Begin(200, "application/x-ndjson");
  while (auto chunk = queue.Pop(std::chrono::seconds(20))) {
    if (!client_ok || chunk->empty()) continue;  // gone: drain, the run is never held up by its client
    client_ok = out.Write(*chunk);
  }
  runner.join();
  return Reply::Streamed();
}

}  // namespace

void AddInterpreterRoutes(Router& r, ServerContext& ctx, SandboxTable& table) {
  r.Add("POST", "/execute",
        [&ctx, &table](HttpRequest& req, ResponseStream& out) { return Execute(ctx, table, req, out); },
        BodyKind::kRaw);
  AddContextRoutes(r, ctx, table);
}

}  // namespace lsb::server::e2b
