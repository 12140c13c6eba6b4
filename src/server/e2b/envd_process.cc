// envd's process.Process/Start (docs/e2b.md "Commands"): a command on the sandbox's session, like
// a v1 session execute with `command`: under the policy's commands allowlist, its timeout and
// output cap, monitored and audited. The SDK always asks for `/bin/bash -l -c <line>`: when the
// policy allows /bin/bash that runs as asked (and every program the shell starts is still judged
// by the box's exec watch); when it does not, the line is split as a simple command
// (shell_words.h) and its words run. A command the policy refuses is a permission_denied error
// with our message, before anything starts. In a session with a python interpreter the command
// is run by the interpreter (command_cell.h), so runCode's variables survive it. Output is streamed as Connect envelopes as it comes:
// start, data (base64), end (exit code), keepalives while the program is silent.
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "base/base64.h"
#include "server/e2b/chunk_queue.h"
#include "server/e2b/command_cell.h"
#include "server/e2b/connect_codec.h"
#include "server/e2b/front_door.h"
#include "server/e2b/session_run.h"
#include "server/e2b/shell_words.h"
#include "server/execute_plan.h"

namespace lsb::server::e2b {
namespace {

using nlohmann::json;

// How long the stream stays silent before a keepalive event (the SDK asks for 50 s).
constexpr auto kKeepalive = std::chrono::seconds(20);

bool IsShell(const std::string& cmd) { return cmd == "/bin/bash" || cmd == "bash" || cmd == "/bin/sh" || cmd == "sh"; }

// The argv to run for the SDK's {cmd, args} under `policy`, or the refusal.
ApiOr<std::vector<std::string>> Argv(const Policy& policy, const json& process) {
  if (!process.contains("cmd") || !process["cmd"].is_string() || process["cmd"].get<std::string>().empty())
    return BadRequest("process.cmd: the program to run");
  std::vector<std::string> argv{process["cmd"].get<std::string>()};
  if (process.contains("args")) {
    if (!process["args"].is_array()) return BadRequest("process.args: an array of strings");
    for (const auto& a : process["args"]) {
      if (!a.is_string()) return BadRequest("process.args: an array of strings");
      argv.push_back(a.get<std::string>());
    }
  }
  // bash [-l] -c LINE without a shell in the policy: the line's own words.
  bool shell_line = IsShell(argv[0]) && argv.size() >= 3 && argv[argv.size() - 2] == "-c" &&
                    (argv.size() == 3 || (argv.size() == 4 && argv[1] == "-l"));
  if (shell_line && !CheckCommand(policy, {argv[0]}).ok()) {
    auto words = SplitSimpleCommand(argv.back());
    if (!words.ok()) return BadRequest(words.error().message);
    argv = std::move(*words);
  }
  if (Status st = CheckCommand(policy, argv); !st.ok()) return FromRunSpec(st.error(), "");
  return argv;
}

// The run for the SDK's process: the program itself on init (a session without a python
// interpreter), or a command cell in the interpreter (command_cell.h), which keeps its state.
// `shown` gets the command as the audit log records it.
ApiOr<ExecRequest> CommandRequest(const sched::Session& s, const SandboxRecord& rec, const json& body,
                                  std::string& shown) {
  const Policy& policy = s.policy();
  if (!body.contains("process") || !body["process"].is_object()) return BadRequest("process: the process to start");
  const json& p = body["process"];
  if (body.contains("pty") && !body["pty"].is_null())
    return ApiError{ApiCode::kBadRequest, "pty: terminals are not supported here (docs/e2b.md)"};
  if (body.contains("stdin") && body["stdin"] == true)
    return BadRequest("stdin: a command's stdin cannot be kept open here (sendStdin is not supported); pass input "
                      "in the command line or write it to a file first (docs/e2b.md)");
  auto argv = Argv(policy, p);
  if (!argv.ok()) return argv.error();
  ExecRequest er;
  er.command = std::move(*argv);
  shown = CommandText(er.command);
  er.env = rec.envs;  // the sandbox's (create's envVars), then the command's own
  if (p.contains("envs") && !p["envs"].is_null()) {
    if (!p["envs"].is_object()) return BadRequest("process.envs: an object of strings");
    for (const auto& [k, v] : p["envs"].items()) {
      if (!v.is_string()) return BadRequest("process.envs: values are strings");
      er.env[k] = v.get<std::string>();
    }
  }
  std::string cwd = p.contains("cwd") && p["cwd"].is_string() ? p["cwd"].get<std::string>() : "";
  if (!cwd.empty() && cwd.front() != '/') return BadRequest("process.cwd: an absolute path");
  auto spec = BuildRunSpec(policy, er);  // the allowlist and the environment's rules
  if (!spec.ok()) return FromRunSpec(spec.error(), "");
  if (!s.RunsInInterpreter("")) {
    if (!cwd.empty() && cwd != policy.workdir)
      return BadRequest("process.cwd: a session without an interpreter runs commands in the policy's workdir " +
                        policy.workdir + "; cd inside the command (with a shell policy) or use absolute paths");
    return er;
  }
  CommandCell cell;
  cell.argv = spec->argv;
  cell.env = er.env;  // the interpreter has the policy's environment already
  cell.cwd = cwd.empty() ? policy.workdir : cwd;
  // Inside the cell's own time and cap, so the interpreter itself is never killed for it.
  cell.timeout_ms = policy.timeout_ms > 3000 ? policy.timeout_ms - 1500 : policy.timeout_ms / 2;
  cell.output_cap = policy.output_bytes > 8192 ? policy.output_bytes - 4096 : policy.output_bytes / 2;
  ExecRequest run;
  run.code = CommandCellSource(cell);
  run.language = "python";
  run.outputs = false;
  return run;
}

json Event(json e) { return json{{"event", std::move(e)}}; }

Reply Start(ServerContext& ctx, SandboxTable& table, HttpRequest& req, ResponseStream& out) {
  auto body = ParseRequest(req, true);
  auto target = DataTarget(table, req);
  auto fail = [&](const ApiError& e) -> Reply {
    RpcError re = FromApiError(e);
    if (!out.Begin(200, "application/connect+json")) return Reply::Streamed();
    out.Write(EndStream(&re));
    return Reply::Streamed();
  };
  if (!target) return fail(ApiError{ApiCode::kNotFound, "the sandbox is gone"});
  if (!body.ok()) return fail(body.error());
  sched::Session& s = *target->session;
  std::string shown;
  auto er = CommandRequest(s, target->record, *body, shown);
  if (!er.ok()) return fail(er.error());
  static std::atomic<uint32_t> next_pid{1000};
  uint32_t pid = next_pid++;

  ChunkQueue queue;
  RunCallbacks cb;
  cb.on_stdout = [&](std::string_view d) { queue.Push(Envelope(Event({{"data", {{"stdout", Base64Encode(d)}}}}))); };
  cb.on_stderr = [&](std::string_view d) { queue.Push(Envelope(Event({{"data", {{"stderr", Base64Encode(d)}}}}))); };
  std::optional<ApiOr<ExecResult>> result;
  queue.Push(Envelope(Event({{"start", {{"pid", pid}}}})));
  std::thread runner([&] {
    result.emplace(RunMonitored(ctx, s, std::move(*er), shown, cb));
    if (result->ok()) {
      const ExecResult& x = **result;
      bool exited = x.status == ExecStatus::kOk || x.status == ExecStatus::kError;  // on its own
      json end = {{"exitCode", x.exit_code}, {"exited", exited},
                  {"status", exited ? "exit status " + std::to_string(x.exit_code) : std::string(ExecStatusName(x.status))}};
      if (!exited)
        end["error"] = std::string("the sandbox ended the command: ") + ExecStatusName(x.status) +
                       (x.truncated ? " (output cut at the policy's cap)" : "");
      queue.Push(Envelope(Event({{"end", end}})));
      queue.Push(EndStream(nullptr));
    } else {
      RpcError re = FromApiError(result->error());
      queue.Push(EndStream(&re));
    }
    queue.Close();
  });
  bool client_ok = out.Begin(200, "application/connect+json");
  const std::string keepalive = Envelope(Event({{"keepalive", json::object()}}));
  while (auto chunk = queue.Pop(std::chrono::duration_cast<std::chrono::milliseconds>(kKeepalive))) {
    if (!client_ok) continue;  // gone: drain, the run is never held up by its client
    client_ok = out.Write(chunk->empty() ? keepalive : *chunk);
  }
  runner.join();
  return Reply::Streamed();
}

}  // namespace

void AddEnvdRoutes(Router& r, ServerContext& ctx, SandboxTable& table) {
  r.Add("POST", "/process.Process/Start",
        [&ctx, &table](HttpRequest& req, ResponseStream& out) { return Start(ctx, table, req, out); }, BodyKind::kRaw);
  r.Add("GET", "/health", [](HttpRequest&, ResponseStream&) -> Reply {
    HttpResponse res;
    res.status = 204;
    return res;
  });
}

}  // namespace lsb::server::e2b
