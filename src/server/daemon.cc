#include "server/daemon.h"

#include <arpa/inet.h>
#include <signal.h>
#include <sys/resource.h>

#include <strings.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <memory>
#include <set>
#include <thread>

#include "runtime/backend_select.h"
#include "runtime/native/native_backend.h"
#include "scheduler/native_pool.h"
#include "server/api_error.h"
#include "server/http_server.h"
#include "server/owner.h"
#include "server/routes.h"
#include "server/web_guard.h"
#include "server/worker_sizing.h"

namespace lsb::server {
namespace {

using Clock = std::chrono::steady_clock;

void Log(const std::string& line) { std::fprintf(stderr, "serve: %s\n", line.c_str()); }

// Constant-time comparison: a token check must not leak how much of a guess was right.
bool SameToken(const std::string& a, const std::string& b) {
  if (a.size() != b.size() || b.empty()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// Sets `req.owner` to the identity of the token presented ("" without tokens: one user).
bool Authorized(const ServerContext& ctx, HttpRequest& req) {
  req.owner.clear();
  if (ctx.tokens.empty()) return true;
  std::string h = req.Header("authorization");
  const std::string scheme = "Bearer ";
  if (h.size() <= scheme.size() || strncasecmp(h.c_str(), scheme.c_str(), scheme.size()) != 0) return false;
  std::string tok = h.substr(scheme.size());
  bool ok = false;
  for (const auto& t : ctx.tokens) ok |= SameToken(tok, t);
  if (ok) req.owner = OwnerOfToken(tok);
  return ok;
}

// Bounded label values for the HTTP metrics: ids become placeholders, unknown paths "other".
std::string RouteLabel(const std::string& path) {
  static const std::set<std::string> fixed = {"/", "/metrics", "/healthz", "/readyz", "/v1/execute", "/v1/batch",
                                               "/v1/sessions", "/v1/policies", "/v1/events", "/v1/executions"};
  if (fixed.count(path)) return path;
  for (const char* prefix : {"/v1/sessions/", "/v1/policies/", "/v1/executions/"}) {
    std::string p = prefix;
    if (path.rfind(p, 0) != 0) continue;
    std::string rest = path.substr(p.size());
    size_t slash = rest.find('/');
    std::string tail = slash == std::string::npos ? "" : rest.substr(slash);
    if (tail.empty() || tail == "/execute" || tail == "/files") return p + "{id}" + tail;
  }
  return "other";
}

// Every connection holds an fd (and evicted ones a moment longer), boxes hold more: the soft fd
// limit goes up to the hard one, and a limit still too small for the connection table is said.
void RaiseFdLimit(size_t max_connections) {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return;
  if (r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
    ::getrlimit(RLIMIT_NOFILE, &r);
  }
  rlim_t want = 2 * max_connections + 256;
  if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur < want)
    Log("warning: the fd limit (" + std::to_string(r.rlim_cur) + ") is below " + std::to_string(want) +
        ", what --max-connections " + std::to_string(max_connections) +
        " may need; past it new connections wait in the kernel's backlog");
}

}  // namespace

bool IsLoopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr a4{};
  if (::inet_pton(AF_INET, host.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  in6_addr a6{};
  if (::inet_pton(AF_INET6, host.c_str(), &a6) == 1) return IN6_IS_ADDR_LOOPBACK(&a6);
  return false;
}

int RunDaemon(DaemonConfig config) {
  if (config.tokens.empty() && !IsLoopback(config.host)) {
    std::fprintf(stderr,
                 "llm-sandbox serve: refusing to listen on %s without tokens: anyone who reaches it could run "
                 "code. Give --token-file FILE or set LLM_SANDBOX_TOKENS, or listen on 127.0.0.1\n",
                 config.host.c_str());
    return 2;
  }
  if (config.policies_dir.empty()) config.policies_dir = sched::DefaultPolicyDir();
  if (config.policies_dir.empty()) {
    std::fprintf(stderr, "llm-sandbox serve: no policy directory found (./policies, /etc/llm-sandbox/policies); pass --policies DIR\n");
    return 2;
  }
  sched::PolicyStore policies(config.policies_dir);
  auto loaded = policies.Reload();
  if (!loaded.ok()) {
    std::fprintf(stderr, "llm-sandbox serve: cannot load policies:\n%s\n", loaded.error().message.c_str());
    return 2;
  }
  if (!policies.Find(config.limits.default_policy))
    Log("warning: the default policy '" + config.limits.default_policy + "' is not in " + config.policies_dir +
        "; requests must name a policy");

  BackendOptions bopts;
  bopts.images_file = config.images_file;
  bopts.init_path = config.init_path;
  bopts.pool_size = config.pool_size;
  bopts.auto_docker = true;  // "auto": Docker when an engine answers and can serve every policy
  for (const auto& [name, p] : *policies.Snapshot()) bopts.policies.push_back(p);
  std::string backend_why;
  auto backend = MakeBackend(config.backend, bopts, &backend_why);
  if (!backend.ok()) {
    std::fprintf(stderr, "llm-sandbox serve: backend: %s\n", backend.error().message.c_str());
    return 2;
  }
  if (!backend_why.empty()) Log(backend_why);
  if (auto* native = dynamic_cast<native::NativeBackend*>(backend->get())) {
    // Box groups of a daemon that was killed (its boxes died with it; their groups did not).
    if (size_t n = native->RemoveStaleGroups()) Log("removed " + std::to_string(n) + " stale box cgroup(s)");
  }

  // Signals are taken by sigwait() on this thread only; every thread started below inherits the
  // mask (the native launcher resets it for boxes).
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGHUP);
  ::pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  // By what a box costs, not by cores (worker_sizing.h); an operator's --max-concurrency wins.
  size_t workers = config.max_concurrency;
  if (!workers) {
    std::vector<Policy> loaded_policies;
    for (const auto& [name, p] : *policies.Snapshot()) loaded_policies.push_back(p);
    auto sizing = SizeWorkers(ReadHostCapacity(), LargestBoxCost(loaded_policies));
    workers = sizing.workers;
    Log(std::to_string(workers) + " workers by box cost (" + sizing.why + "); --max-concurrency N sets them");
  }
  size_t queue = config.queue ? config.queue : 4 * workers;
  ExecutionStore executions(config.async_results);  // outlives the executor, whose tasks finish into it
  sched::Executor executor(workers, queue);
  sched::BoxRegistry boxes;
  sched::SessionManager sessions(config.max_sessions);
  sessions.StartReaper();
  // Native one-shots: boxes started ahead and torn down behind (scheduler/native_pool.h).
  std::unique_ptr<sched::NativePool> pool;
  if ((*backend)->name() == "native" && config.native_pool > 0) {
    pool = std::make_unique<sched::NativePool>(**backend, policies, config.native_pool);
    std::vector<std::string> warm;
    if (policies.Find(config.limits.default_policy)) warm.push_back(config.limits.default_policy);
    pool->Start(warm);
    boxes.set_pool(pool.get());
  }
  ServerContext ctx{**backend, policies, executor, boxes, sessions, config.limits, config.tokens};
  ctx.executions = &executions;
  std::unique_ptr<monitor::Monitor> mon;
  if (config.monitoring) {
    auto m = monitor::Monitor::Create(config.monitor);
    if (!m.ok()) {
      std::fprintf(stderr, "llm-sandbox serve: monitoring: %s\n", m.error().message.c_str());
      return 2;
    }
    mon = std::move(*m);
    ctx.monitor = mon.get();
  }

  Router router;
  AddExecuteRoutes(router, ctx);
  AddSessionRoutes(router, ctx);
  AddBatchRoutes(router, ctx);
  AddPolicyRoutes(router, ctx);
  AddHealthRoutes(router, ctx);
  AddMonitoringRoutes(router, ctx);
  AddMcpRoutes(router, ctx);

  WebGuard web_guard(WebGuardConfig{!config.tokens.empty(), config.allowed_origins});
  HttpHandler handler = [&ctx, &router, &web_guard](HttpRequest& req, ResponseStream& out) -> Reply {
    auto start = Clock::now();
    Reply r;
    // The dashboard page carries no data (it asks for a token when the daemon has them).
    bool open_route = req.path == "/healthz" || req.path == "/readyz" || req.path == "/";
    // Browser rules first, on every route (web_guard.h): a refused page learns nothing else.
    auto cors = web_guard.CorsHeaders(req);
    for (const auto& [k, v] : cors) out.AddHeader(k, v);
    if (auto refused = web_guard.Check(req)) {
      r = ErrorResponse(*refused);
    } else if (auto preflight = web_guard.Preflight(req)) {
      r = std::move(*preflight);
    } else if (!open_route && !Authorized(ctx, req)) {
      r = ErrorResponse({ApiCode::kUnauthorized, "a valid 'Authorization: Bearer <token>' header is required"});
    } else if (!open_route && ctx.shutting_down) {
      r = ErrorResponse(FromAdmission(sched::Admission::kShuttingDown));
    } else {
      r = router.Dispatch(req, out);
    }
    if (!r.streamed) r.response.headers.insert(r.response.headers.end(), cors.begin(), cors.end());
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    if (ctx.monitor)
      ctx.monitor->HttpRequest(RouteLabel(req.path), r.streamed ? 200 : r.response.status,
                               std::chrono::duration<double>(Clock::now() - start).count());
    std::fprintf(stderr, "serve: %s %s %d %lldms\n", req.method.c_str(), req.path.c_str(),
                 r.streamed ? 200 : r.response.status, static_cast<long long>(ms));
    return r;
  };

  HttpServerOptions hopts;
  hopts.host = config.host;
  hopts.port = config.port;
  hopts.max_body = config.max_body;
  hopts.connections = config.connections;
  hopts.header_timeout_ms = config.header_timeout_ms;
  hopts.body_timeout_ms = config.body_timeout_ms;
  hopts.write_timeout_ms = config.write_timeout_ms;
  hopts.keepalive_timeout_ms = config.keepalive_timeout_ms;
  hopts.min_transfer_rate = config.min_transfer_rate;
  RaiseFdLimit(config.connections.max_total);
  auto server = HttpServer::Listen(hopts, handler);
  if (!server.ok()) {
    std::fprintf(stderr, "llm-sandbox serve: %s\n", server.error().message.c_str());
    return 2;
  }
  Log("listening on http://" + config.host + ":" + std::to_string((*server)->port()) + " (backend " +
      (*backend)->name() + ", " + std::to_string(*loaded) + " policies from " + config.policies_dir + ", " +
      std::to_string(workers) + " workers, queue " + std::to_string(queue) +
      (config.tokens.empty() ? ", no auth" : ", bearer tokens") +
      (!config.monitoring ? ", monitoring off"
       : config.monitor.audit_path.empty() ? ", no audit log"
                                           : ", audit log " + config.monitor.audit_path) +
      ")");
  std::thread acceptor([&] { (*server)->Serve(); });

  for (;;) {
    int sig = 0;
    if (sigwait(&sigs, &sig) != 0) continue;
    if (sig == SIGHUP) {
      auto n = policies.Reload();
      if (n.ok()) {
        Log("SIGHUP: reloaded " + std::to_string(*n) + " policies from " + config.policies_dir);
        if (pool) pool->Drain();  // warm boxes of the previous policies go; the pool refills
      } else {
        Log("SIGHUP: policy reload failed; keeping the previous policies:\n" + n.error().message);
      }
      continue;
    }
    break;
  }

  Log("shutting down: no new work; waiting up to " + std::to_string(config.shutdown_grace_ms) + " ms for running executions");
  ctx.shutting_down = true;
  if (mon) mon->events().CloseAll();  // live event streams end now
  (*server)->StopAccepting();
  acceptor.join();
  executor.StopAccepting();
  auto deadline = Clock::now() + std::chrono::milliseconds(config.shutdown_grace_ms);
  while (executor.running() + executor.queued() > 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (executor.running() > 0) {
    Log("grace over: killing " + std::to_string(boxes.size()) + " box(es) still running");
    boxes.KillAll();
  }
  executor.Shutdown();
  if (pool) {
    boxes.set_pool(nullptr);
    pool->Shutdown();  // warm boxes and used ones still waiting for the reaper
  }
  sessions.Shutdown();
  (*server)->Stop(2000);
  if (mon) mon->Stop();  // webhooks still queued are dropped (counted)
  Log("stopped; boxes left: " + std::to_string(boxes.size()));
  return 0;
}

}  // namespace lsb::server
