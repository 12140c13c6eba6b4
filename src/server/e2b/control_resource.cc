// The E2B control plane (docs/e2b.md "Control plane"): sandboxes are sessions. A template ID names
// a policy: "base" and "code-interpreter-v1" (the SDKs' defaults) are the daemon's default policy,
// any other ID must be a policy's name. The sandbox timeout is the session's lifetime (from now,
// idle or not); the per-sandbox access token is made here and answered once per create/connect.
// Errors are E2B's shape, {"code": <status>, "message": "..."}, which the SDKs turn into their
// error classes (404 -> NotFound, 401 -> Authentication, ...).
#include <chrono>
#include <ctime>

#include "base/base64.h"
#include "policy/env_rules.h"
#include "server/e2b/command_cell.h"
#include "server/e2b/front_door.h"
#include "server/execute_plan.h"
#include "server/json_codec.h"
#include "server/session_turn.h"

namespace lsb::server::e2b {
namespace {

using nlohmann::json;

// The SDKs' default sandbox timeout, when create names none.
constexpr uint64_t kDefaultTimeoutS = 300;

HttpResponse E2bError(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = json{{"code", status}, {"message", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}
// An ApiError in E2B's shape: its detail (a queue's place) at the top level, Retry-After on 429 / 503.
HttpResponse E2bError(const ApiError& e) {
  HttpResponse r = E2bError(HttpStatus(e.code), e.message);
  if (e.detail.is_object()) {
    json body = json::parse(r.body);
    for (const auto& [k, v] : e.detail.items()) body[k] = v;
    r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  if (e.code == ApiCode::kTooManyRequests || e.code == ApiCode::kUnavailable)
    r.headers.emplace_back("Retry-After", std::to_string(e.retry_after_s > 0 ? e.retry_after_s : 1));
  return r;
}

std::string Iso(std::chrono::system_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t s = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms % 1000));
  return out;
}

std::string PolicyOfTemplate(const ServerContext& ctx, const std::string& template_id) {
  if (template_id == "base" || template_id == "code-interpreter-v1" || template_id == "code-interpreter")
    return ctx.limits.default_policy;
  return template_id;
}

// What every answer about one sandbox says (GET /sandboxes/{id}, the list, create, connect).
json SandboxJson(const SandboxTable::Found& f, bool with_token) {
  sched::SessionInfo info = f.session->Info();
  const Policy& p = f.session->policy();
  json j = {{"sandboxID", f.record.id},
            {"templateID", f.record.template_id},
            {"alias", f.record.template_id},
            {"clientID", "llm-sandbox"},
            {"envdVersion", kEnvdVersion},
            {"startedAt", Iso(f.record.started_at)},
            {"endAt", Iso(info.expires_at)},
            {"cpuCount", p.cpu > 0 ? static_cast<int>(p.cpu + 0.999) : 1},
            {"memoryMB", p.memory_bytes / (1024 * 1024)},
            {"diskSizeMB", 0},
            {"metadata", f.record.metadata},
            {"state", "running"},
            {"domain", nullptr}};
  // The same secret under both names: the code interpreter's /contexts calls carry only the
  // traffic token (front_door.h).
  if (with_token) j["envdAccessToken"] = j["trafficAccessToken"] = f.record.access_token;
  return j;
}

// A `timeout` in seconds (create, connect, set timeout): positive and within the daemon's bound.
ApiOr<uint64_t> TimeoutMs(const ServerContext& ctx, const json& body, uint64_t fallback_s) {
  uint64_t s = fallback_s;
  if (body.contains("timeout") && !body["timeout"].is_null()) {
    if (!body["timeout"].is_number_integer() || body["timeout"].get<int64_t>() <= 0)
      return BadRequest("timeout: a positive whole number of seconds");
    s = body["timeout"].get<uint64_t>();
  }
  uint64_t max_s = ctx.limits.max_session_lifetime_ms / 1000;
  if (s > max_s)
    return ApiError{ApiCode::kBadRequest, "timeout: at most " + std::to_string(max_s) +
                                              " s on this daemon (serve's session lifetime bound)"};
  return s * 1000;
}

// Options of the hosted service this daemon cannot honour are refused, never ignored.
std::optional<ApiError> Unsupported(const json& body, const Policy& policy) {
  for (const char* k : {"mcp", "network", "volumeMounts", "autoResume", "autoPauseMemory"})
    if (body.contains(k) && !body[k].is_null())
      return BadRequest(std::string(k) + ": not supported by llm-sandbox's E2B front door (docs/e2b.md); the policy decides");
  if (body.contains("autoPause") && body["autoPause"] == true)
    return BadRequest("autoPause: sandboxes are not paused here; they end at their timeout (docs/e2b.md)");
  if (body.contains("allow_internet_access") && body["allow_internet_access"].is_boolean()) {
    bool want = body["allow_internet_access"].get<bool>();
    if (want != policy.network_enabled)
      return ApiError{want ? ApiCode::kForbidden : ApiCode::kBadRequest,
                      std::string("allow_internet_access: policy '") + policy.name + "' has the network " +
                          (policy.network_enabled ? "on" : "off") +
                          "; the policy decides (choose a template whose policy has what you need)"};
  }
  return std::nullopt;
}

// create's envVars: under the same rules as a request's env (policy/env_rules.h), so a refused
// name is refused here, with the rule's words, before the sandbox starts.
ApiOr<std::map<std::string, std::string>> EnvVars(const json& body, const Policy& policy) {
  std::map<std::string, std::string> env;
  if (!body.contains("envVars") || body["envVars"].is_null()) return env;
  if (!body["envVars"].is_object()) return BadRequest("envVars: an object of strings");
  for (const auto& [k, v] : body["envVars"].items()) {
    if (!v.is_string()) return BadRequest("envVars." + k.substr(0, 64) + ": values are strings");
    env[k] = v.get<std::string>();
  }
  if (Status st = env::CheckRequestEnv(policy.env, env); !st.ok())
    return BadRequest("envVars: " + st.error().message);
  return env;
}

// Python that sets `env` in the interpreter's os.environ, leaving no name behind: run as part of
// the session's setup, so a restarted interpreter (and a reset) has it again.
std::string EnvSetup(const std::map<std::string, std::string>& env) { return EnvCellSource(json(env), false); }

ApiOr<json> Metadata(const json& body) {
  if (!body.contains("metadata") || body["metadata"].is_null()) return json::object();
  const json& m = body["metadata"];
  if (!m.is_object()) return BadRequest("metadata: an object of strings");
  if (m.size() > kMaxMetadataEntries)
    return BadRequest("metadata: at most " + std::to_string(kMaxMetadataEntries) + " entries");
  for (const auto& [k, v] : m.items())
    if (!v.is_string() || k.size() > kMaxMetadataBytes || v.get<std::string>().size() > kMaxMetadataBytes)
      return BadRequest("metadata: '" + k.substr(0, 64) + "': values are strings, keys and values at most " +
                        std::to_string(kMaxMetadataBytes) + " bytes");
  return m;
}

Reply Create(ServerContext& ctx, SandboxTable& table, HttpRequest& req) {
  auto j = ParseObject(req.body.empty() ? "{}" : req.body);
  if (!j.ok()) return E2bError(j.error());
  if (!j->contains("templateID") || !(*j)["templateID"].is_string() || (*j)["templateID"].get<std::string>().empty())
    return E2bError(400, "templateID: name a template (\"base\", \"code-interpreter-v1\" or a policy's name; docs/e2b.md)");
  std::string template_id = (*j)["templateID"];
  auto policy = ResolvePolicy(ctx, PolicyOfTemplate(ctx, template_id), "templateID");
  if (!policy.ok())
    return E2bError(400, "templateID '" + template_id + "' names no policy here (" + policy.error().message +
                             "); \"base\" and \"code-interpreter-v1\" are the daemon's default policy '" +
                             ctx.limits.default_policy + "'");
  if (auto bad = Unsupported(*j, **policy)) return E2bError(*bad);
  auto timeout = TimeoutMs(ctx, *j, kDefaultTimeoutS);
  if (!timeout.ok()) return E2bError(timeout.error());
  auto metadata = Metadata(*j);
  if (!metadata.ok()) return E2bError(metadata.error());
  auto envs = EnvVars(*j, **policy);
  if (!envs.ok()) return E2bError(envs.error());
  auto turn = AwaitSessionSlots(ctx, 1);  // at the cap: wait in line (bounded), or 429 with the place
  if (!turn.ok()) return E2bError(turn.error());
  sched::SessionConfig cfg;
  cfg.language = (*policy)->default_language;
  cfg.idle_timeout_ms = *timeout;
  cfg.max_lifetime_ms = *timeout;
  cfg.owner = req.owner;
  cfg.setup = (*policy)->session_setup;
  // Commands get them from the record; the interpreter from its setup.
  if (!envs->empty() && cfg.language == "python") cfg.setup = EnvSetup(*envs) + cfg.setup;
  turn->runs_user_code = !cfg.setup.empty();  // its open runs the setup: it takes no turn
  std::string id = ctx.sessions.NewId();
  sched::Admission admission;
  std::function<Result<std::shared_ptr<sched::Session>>()> open = [&]() -> Result<std::shared_ptr<sched::Session>> {
    auto s = sched::Session::Open(ctx.backend, ctx.boxes, **policy, cfg, id);
    if (!s.ok()) return s.error();
    return std::shared_ptr<sched::Session>(std::move(*s));
  };
  auto r = RunForTurn<Result<std::shared_ptr<sched::Session>>>(ctx, *turn, open, &admission);
  if (!r) return E2bError(FromAdmission(admission));
  if (!r->ok()) return E2bError(502, "the sandbox did not start: " + r->error().message);
  std::shared_ptr<sched::Session> s = **r;
  if (!ctx.sessions.Add(s)) {
    s->Close();
    return E2bError(ctx.shutting_down ? 503 : 429, "too many sessions; retry later");
  }
  turn->slots.Release();  // the manager counts the session now
  SandboxRecord rec{id, req.owner, template_id, SandboxTable::NewAccessToken(), std::move(*metadata),
                    std::chrono::system_clock::now(), std::move(*envs), {}};
  table.Add(rec);
  if (ctx.monitor) {
    json ev = SessionJson(s->Info());
    ev["e2b_template"] = template_id;
    ctx.monitor->SessionEvent("session_created", ev, s->owner());
  }
  json created = SandboxJson({rec, s}, true);
  if (!turn->reason.empty()) created["queued"] = turn->Queued();  // an extra field; the SDKs ignore it
  HttpResponse res = JsonResponse(201, created);
  turn->AddHeader(res);
  return res;
}

ApiOr<SandboxTable::Found> Find(SandboxTable& table, const HttpRequest& req) {
  auto f = table.Get(req.params.at("id"), req.owner);
  if (!f) return NotFound("sandbox " + req.params.at("id") + " not found (it may have timed out or been killed)");
  return std::move(*f);
}

Reply Kill(ServerContext& ctx, SandboxTable& table, HttpRequest& req) {
  auto f = Find(table, req);
  if (!f.ok()) return E2bError(f.error());
  table.Forget(f->record.id);
  ctx.sessions.Remove(f->record.id, req.owner);
  if (ctx.monitor) ctx.monitor->SessionEvent("session_closed", {{"session_id", f->record.id}}, req.owner);
  HttpResponse res;
  res.status = 204;
  return res;
}

Reply SetTimeout(ServerContext& ctx, SandboxTable& table, HttpRequest& req, bool connect) {
  auto f = Find(table, req);
  if (!f.ok()) return E2bError(f.error());
  auto j = ParseObject(req.body.empty() ? "{}" : req.body);
  if (!j.ok()) return E2bError(j.error());
  if (!connect && (!j->contains("timeout") || (*j)["timeout"].is_null()))
    return E2bError(400, "timeout: give the sandbox's new timeout in seconds");
  if (j->contains("timeout") && !(*j)["timeout"].is_null()) {
    auto t = TimeoutMs(ctx, *j, 0);
    if (!t.ok()) return E2bError(t.error());
    f->session->SetDeadline(*t);
  }
  if (connect) return JsonResponse(200, SandboxJson(*f, true));
  HttpResponse res;
  res.status = 204;
  return res;
}

Reply List(SandboxTable& table, HttpRequest& req) {
  std::string state = req.Query("state");
  if (!req.Query("metadata").empty())
    return E2bError(400, "metadata: filtering the list by metadata is not supported here; list all and filter");
  json out = json::array();
  bool running = state.empty() || state.find("running") != std::string::npos;
  if (running)
    for (const auto& f : table.List(req.owner)) out.push_back(SandboxJson(f, false));
  return JsonResponse(200, out);
}

Reply NotHere(const std::string& what) {
  return E2bError(501, what + " is not supported by llm-sandbox's E2B front door (docs/e2b.md lists what is)");
}

}  // namespace

void AddControlRoutes(Router& r, ServerContext& ctx, SandboxTable& table) {
  r.Add("POST", "/v2/sandboxes", [&ctx, &table](HttpRequest& req, ResponseStream&) { return Create(ctx, table, req); });
  r.Add("POST", "/sandboxes", [&ctx, &table](HttpRequest& req, ResponseStream&) { return Create(ctx, table, req); });
  r.Add("GET", "/v2/sandboxes", [&table](HttpRequest& req, ResponseStream&) { return List(table, req); });
  r.Add("GET", "/sandboxes", [&table](HttpRequest& req, ResponseStream&) { return List(table, req); });
  r.Add("GET", "/sandboxes/{id}", [&table](HttpRequest& req, ResponseStream&) -> Reply {
    auto f = Find(table, req);
    if (!f.ok()) return E2bError(f.error());
    return JsonResponse(200, SandboxJson(*f, true));
  });
  r.Add("DELETE", "/sandboxes/{id}", [&ctx, &table](HttpRequest& req, ResponseStream&) { return Kill(ctx, table, req); });
  r.Add("POST", "/sandboxes/{id}/timeout",
        [&ctx, &table](HttpRequest& req, ResponseStream&) { return SetTimeout(ctx, table, req, false); });
  r.Add("POST", "/v2/sandboxes/{id}/connect",
        [&ctx, &table](HttpRequest& req, ResponseStream&) { return SetTimeout(ctx, table, req, true); });
  for (const char* op : {"pause", "resume", "fork", "snapshots", "refreshes"})
    r.Add("POST", std::string("/sandboxes/{id}/") + op,
          [op](HttpRequest&, ResponseStream&) { return NotHere(std::string("POST /sandboxes/{id}/") + op); });
  r.Add("GET", "/sandboxes/{id}/metrics", [](HttpRequest&, ResponseStream&) { return NotHere("sandbox metrics"); });
  r.Add("PUT", "/sandboxes/{id}/network", [](HttpRequest&, ResponseStream&) { return NotHere("updating the network"); });
}

}  // namespace lsb::server::e2b
