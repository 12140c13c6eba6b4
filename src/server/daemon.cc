#include "server/daemon.h"

#include <arpa/inet.h>
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>

#include <strings.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "base/state_dir.h"
#include "base/time_format.h"
#include "runtime/backend_select.h"
#include "scheduler/one_shot_pool.h"
#include "scheduler/driver/rich_outputs.h"
#include "scheduler/session/session_pool.h"
#include "server/api_error.h"
#include "server/http_server.h"
#include "server/owner.h"
#include "server/routes.h"
#include "server/session_sizing.h"
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
  std::string tok;
  if (h.size() > scheme.size() && strncasecmp(h.c_str(), scheme.c_str(), scheme.size()) == 0) {
    tok = h.substr(scheme.size());
  } else {
    tok = req.Header("x-api-key");  // the E2B SDKs' header for the same token (docs/e2b.md)
    if (tok.empty()) return false;
  }
  bool ok = false;
  for (const auto& t : ctx.tokens) ok |= SameToken(tok, t);
  if (ok) req.owner = OwnerOfToken(tok);
  return ok;
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

// Refuses a daemon anyone could reach without a token.
Status CheckExposure(const DaemonConfig& config) {
  if (!config.tokens.empty() || IsLoopback(config.http.host)) return OkStatus();
  return Error{"refusing to listen on " + config.http.host +
               " without tokens: anyone who reaches it could run code. Give --token-file FILE or set "
               "LLM_SANDBOX_TOKENS, or listen on 127.0.0.1"};
}

std::vector<Policy> PolicyList(const sched::PolicyStore& policies) {
  std::vector<Policy> out;
  for (const auto& [name, p] : *policies.Snapshot()) out.push_back(p);
  return out;
}

Result<std::unique_ptr<sched::PolicyStore>> LoadPolicies(DaemonConfig& config) {
  if (config.policies_dir.empty()) config.policies_dir = sched::DefaultPolicyDir();
  if (config.policies_dir.empty())
    return Error{"no policy directory found (./policies, /etc/llm-sandbox/policies); pass --policies DIR"};
  auto policies = std::make_unique<sched::PolicyStore>(config.policies_dir);
  auto loaded = policies->Reload();
  if (!loaded.ok()) return Error{"cannot load policies:\n" + loaded.error().message};
  if (!policies->Find(config.limits.default_policy))
    Log("warning: the default policy '" + config.limits.default_policy + "' is not in " + config.policies_dir +
        "; requests must name a policy");
  return policies;
}

// --prebuild: each policy's container.build now, so no request waits for one (native and Docker).
Status Prebuild(Backend& backend, const sched::PolicyStore& policies) {
  for (const Policy& p : PolicyList(policies)) {
    if (p.build.empty()) continue;
    Log("prebuild: policy " + p.name);
    auto built = backend.BuildEnvironment(p, [](const std::string& line) { Log("build " + line); });
    if (!built.ok()) return built.error().Wrap("--prebuild: policy '" + p.name + "'");
    Log("prebuild: policy " + p.name + " is " + built->reference + " (" + std::to_string(built->steps_built) + " of " +
        std::to_string(built->steps) + " steps run)");
  }
  return OkStatus();
}

// The monitor container.build's events go to (image_build): the backend is made before the daemon's
// core and monitor, so its sink finds the monitor here once AttachImages sets it (a --prebuild
// before that is logged only).
std::atomic<monitor::Monitor*> g_build_monitor{nullptr};

// An image_build event (docs/api.md), to every subscriber (the images are shared, like image_pull);
// a final one ("done"/"failed") counted in lsb_image_builds_total{result}.
void ImageBuildEvent(monitor::Monitor& m, nlohmann::json e) {
  std::string state = e.value("state", "");
  if (state == "done" || state == "failed") m.metrics().Inc("lsb_image_builds_total", {{"result", state}});
  e["time"] = Rfc3339(std::chrono::system_clock::now());
  m.events().PublishToAll("image_build", std::move(e));
}

// "auto": Docker when an engine answers and can serve every loaded policy (backend_select.h).
Result<std::unique_ptr<Backend>> ChooseBackend(const DaemonConfig& config, const sched::PolicyStore& policies,
                                               const image::StoreAndPuller& images) {
  BackendOptions bopts;
  bopts.images_file = config.images_file;
  bopts.mount_roots = config.mount_roots;
  // $LLM_SANDBOX_FORK_SERVER=on|off: the default when neither flag is given (suites run both ways).
  const char* fork_env = std::getenv("LLM_SANDBOX_FORK_SERVER");
  const bool env_off = fork_env && std::string(fork_env) == "off";
  bopts.fork_server = config.fork_server.value_or(!env_off);
  bopts.fork_server_asked = config.fork_server.value_or(false);
  bopts.fork_server_sources = {sched::OneShotPreludeSource(), sched::PythonDriverProgram()};
  bopts.font_cache = true;
  bopts.image_source = images.store;
  bopts.image_puller = images.puller;
  bopts.init_path = config.init_path;
  bopts.egress = config.egress;
  bopts.build_progress = [](const std::string& line) { Log("build " + line); };
  bopts.build_event = [](nlohmann::json e) {
    if (monitor::Monitor* m = g_build_monitor.load()) ImageBuildEvent(*m, std::move(e));
  };
  bopts.pool_size = config.pool_size;  // a backend that pools itself takes it (OwnPoolStats)
  bopts.auto_docker = true;
  bopts.policies = PolicyList(policies);
  std::string why;
  auto backend = MakeBackend(config.backend, bopts, &why);
  if (!backend.ok()) return backend.error().Wrap("backend");
  if (!why.empty()) Log(why);
  return backend;
}

// The image store. One named by --store is opened now, so a bad one is said at start (not at the
// first execution that needs it); the default one is created on first use, like run's and mcp's
// (a daemon whose images all come from the image map writes nothing there). Without a store
// directory (no --store, no HOME) images come from the image map only.
Result<image::StoreAndPuller> OpenImageStore(const DaemonConfig& config) {
  auto wired = image::MakeStoreAndPuller(config.image_store, config.pull);
  if (!wired.ok()) {
    if (!config.image_store.empty() || !image::DefaultStoreDir().empty()) return wired.error().Wrap("--store");
    Log("no image store (no HOME for its default place; --store DIR gives one): images come from the image map only");
    return image::StoreAndPuller{};
  }
  if (!config.image_store.empty())
    if (auto opened = wired->store->Get(); !opened.ok()) return opened.error().Wrap("--store");
  Log("image store " + wired->store->root() + " (images not in the image map; pulled on first use by container.pull)");
  return wired;
}

// An image_pull event (docs/api.md) from the puller's report of one pull.
nlohmann::json PullEventJson(const image::PullEvent& e) {
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& b : e.blobs) {
    if (!b.layer) continue;
    layers.push_back({{"digest", b.digest}, {"done", b.done}, {"total", b.total}, {"state", b.state}});
  }
  auto ref = image::ParseImageReference(e.reference);
  nlohmann::json j = {{"image", ref.ok() ? ref->Familiar() : e.reference}, {"reference", e.reference},
                      {"state", e.state}, {"layers", std::move(layers)}, {"bytes_done", e.bytes_done},
                      {"bytes_total", e.bytes_total}, {"elapsed_ms", e.elapsed_ms}};
  if (e.state == "done") {
    j["digest"] = e.manifest_digest;
    j["bytes_downloaded"] = e.bytes_downloaded;
  }
  if (e.state == "failed") j["error"] = e.error;
  return j;
}

// By what a box costs, not by cores (worker_sizing.h); an operator's --max-concurrency wins.
size_t WorkerCount(const DaemonConfig& config, const sched::PolicyStore& policies, const HostCapacity& host) {
  if (config.max_concurrency) return config.max_concurrency;
  auto sizing = SizeWorkers(host, LargestBoxCost(PolicyList(policies)));
  Log(std::to_string(sizing.workers) + " workers by box cost (" + sizing.why + "); --max-concurrency N sets them");
  return sizing.workers;
}

// --max-sessions, else sized by the host's memory (session_sizing.h), logged like the workers.
size_t SessionCap(const DaemonConfig& config, const HostCapacity& host) {
  if (config.max_sessions) return config.max_sessions;
  auto sizing = SizeMaxSessions(host);
  Log(std::to_string(sizing.max_sessions) + " sessions at most by memory (" + sizing.why +
      "); --max-sessions N sets them");
  return sizing.max_sessions;
}

// Signals are taken by sigwait() on the calling thread only; every thread started after inherits
// the mask (the native launcher resets it for boxes).
sigset_t BlockDaemonSignals() {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGHUP);
  ::pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  return sigs;
}

// The front door every request passes: browser rules, the token, shutdown, then the routes; one
// log line and the HTTP metrics per request.
HttpHandler FrontDoor(ServerContext& ctx, const Router& router, const e2b::FrontDoor& e2b, const WebGuard& web_guard) {
  return [&ctx, &router, &e2b, &web_guard](HttpRequest& req, ResponseStream& out) -> Reply {
    auto start = Clock::now();
    Reply r;
    // The dashboard page carries the daemon's state only when it has no tokens (every route is
    // open then); with tokens it carries none and asks for one (monitoring_resource.cc).
    bool open_route = req.path == "/healthz" || req.path == "/readyz" || req.path == "/";
    // The E2B data plane carries the sandbox's access token instead, checked by its own router.
    bool e2b_data = e2b::FrontDoor::IsDataPlane(req);
    // Browser rules first, on every route (web_guard.h): a refused page learns nothing else.
    auto cors = web_guard.CorsHeaders(req);
    for (const auto& [k, v] : cors) out.AddHeader(k, v);
    if (auto refused = web_guard.Check(req)) {
      r = ErrorResponse(*refused);
    } else if (auto preflight = web_guard.Preflight(req)) {
      r = std::move(*preflight);
    } else if (!open_route && !e2b_data && !Authorized(ctx, req)) {
      r = ErrorResponse({ApiCode::kUnauthorized, "a valid 'Authorization: Bearer <token>' header is required"});
    } else if (!open_route && ctx.shutting_down) {
      r = ErrorResponse(FromAdmission(sched::Admission::kShuttingDown));
    } else if (e2b_data) {
      r = e2b.Dispatch(req, out);
    } else {
      r = router.Dispatch(req, out);
    }
    if (!r.streamed) r.response.headers.insert(r.response.headers.end(), cors.begin(), cors.end());
    // Which node answered, on every answer (errors too): what a front or a client logs.
    if (!r.streamed && !ctx.node.empty()) r.response.headers.emplace_back("X-LLM-Sandbox-Node", ctx.node);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    if (ctx.monitor)
      ctx.monitor->HttpRequest(RouteLabel(router, e2b, req), r.streamed ? 200 : r.response.status,
                               std::chrono::duration<double>(Clock::now() - start).count());
    std::fprintf(stderr, "serve: %s %s %d %lldms\n", req.method.c_str(), req.path.c_str(),
                 r.streamed ? 200 : r.response.status, static_cast<long long>(ms));
    return r;
  };
}

void LogListening(const DaemonConfig& config, DaemonCore& core, uint16_t port) {
  auto& ctx = core.context();
  Log("listening on http://" + config.http.host + ":" + std::to_string(port) + " (backend " + core.backend().name() +
      ", " + std::to_string(ctx.policies.Snapshot()->size()) + " policies from " + config.policies_dir + ", " +
      std::to_string(ctx.executor.workers()) + " workers, queue " + std::to_string(ctx.executor.queue_limit()) +
      ", " + std::to_string(ctx.sessions.max_sessions()) + " sessions at most" +
      (config.tokens.empty() ? ", no auth" : ", bearer tokens") +
      (!config.monitoring ? ", monitoring off"
       : config.monitor.audit_path.empty() ? ", no audit log"
                                           : ", audit log " + config.monitor.audit_path) +
      ")");
}

// Serves until SIGTERM or SIGINT; SIGHUP reloads the policies.
void WaitForStop(const sigset_t& sigs, DaemonCore& core) {
  for (;;) {
    int sig = 0;
    if (sigwait(&sigs, &sig) != 0) continue;
    if (sig != SIGHUP) return;
    core.ReloadPolicies();
  }
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

std::string RouteLabel(const Router& router, const e2b::FrontDoor& e2b, const HttpRequest& req) {
  std::string pattern = e2b::FrontDoor::IsDataPlane(req) ? e2b.PatternOf(req) : router.PatternOf(req);
  return pattern.empty() ? "other" : pattern;
}

Result<std::unique_ptr<DaemonCore>> DaemonCore::Create(const DaemonConfig& config, std::unique_ptr<Backend> backend,
                                                       std::unique_ptr<sched::PolicyStore> policies) {
  // Box leftovers of a daemon that was killed (its boxes died with it; their cgroups did not).
  if (size_t n = backend->RemoveLeftovers()) Log("removed " + std::to_string(n) + " leftover(s) of killed boxes");
  std::unique_ptr<DaemonCore> core(new DaemonCore(std::move(backend), std::move(policies), config));
  if (config.monitoring) {
    auto m = monitor::Monitor::Create(config.monitor);
    if (!m.ok()) return m.error().Wrap("monitoring");
    core->monitor_ = std::move(*m);
    core->ctx_->monitor = core->monitor_.get();
    if (config.node_label && !config.node_name.empty()) core->monitor_->metrics().SetConstantLabel("node", config.node_name);
  }
  ServerContext& ctx = *core->ctx_;
  AddExecuteRoutes(core->router_, ctx);
  AddSessionRoutes(core->router_, ctx);
  AddBatchRoutes(core->router_, ctx);
  AddPolicyRoutes(core->router_, ctx);
  AddHealthRoutes(core->router_, ctx);
  AddMonitoringRoutes(core->router_, ctx);
  AddMcpRoutes(core->router_, ctx);
  AddImageRoutes(core->router_, ctx);
  core->e2b_ = std::make_unique<e2b::FrontDoor>(ctx);
  core->e2b_->AddControl(core->router_);
  return core;
}

DaemonCore::DaemonCore(std::unique_ptr<Backend> backend, std::unique_ptr<sched::PolicyStore> policies,
                       const DaemonConfig& c)
    : policies_(std::move(policies)), backend_(std::move(backend)) {
  const HostCapacity host = ReadHostCapacity();  // read once: workers, session cap, pool depth
  size_t workers = WorkerCount(c, *policies_, host);
  executions_ = std::make_unique<ExecutionStore>(c.async_results);
  jobs_ = std::make_unique<BackgroundJobs>();
  executor_ = std::make_unique<sched::Executor>(workers, c.queue ? c.queue : 4 * workers);
  sessions_ = std::make_unique<sched::SessionManager>(SessionCap(c, host));
  sessions_->queue().set_limits({c.session_queue, std::chrono::milliseconds(c.session_queue_wait_ms)});
  sessions_->set_node(c.node_name);
  sessions_->StartReaper();
  StartPool(c.pool_size, c.limits.default_policy);
  // By default each key's depth follows the host's memory (its target, the recent rate).
  const size_t depth = c.session_pool.value_or(sched::DefaultSessionPoolDepth(host.memory_available_bytes));
  if (depth > 0) {
    session_pool_ = std::make_unique<sched::SessionPool>(*backend_, depth, c.limits.max_session_lifetime_ms);
    session_pool_->Start();
    boxes_.set_session_pool(session_pool_.get());
  }
  ctx_.reset(new ServerContext{*backend_, *policies_, *executor_, boxes_, *sessions_, c.limits, c.tokens});
  ctx_->executions = executions_.get();
  ctx_->jobs = jobs_.get();
  // A burst's session opens go one per CPU at a time, in arrival order (open_turns.h); one in flight
  // for over a second stops holding its place.
  const size_t opens = std::max<size_t>(2, std::thread::hardware_concurrency());
  session_opens_ = std::make_unique<OpenTurns>(opens, std::chrono::milliseconds(1000), sessions_->queue().limits());
  ctx_->session_opens = session_opens_.get();
  fanout_ = std::make_unique<ByteBudget>(c.fanout_budget, std::chrono::milliseconds(c.fanout_wait_ms));
  ctx_->fanout = fanout_.get();
  std::string paused_dir = c.paused_dir;
  if (paused_dir.empty() && !DefaultStateDir().empty()) paused_dir = DefaultStateDir() + "/paused-sessions";
  if (!paused_dir.empty() && paused_dir != "none") {
    sched::PausedLimits pl;
    pl.max_records = c.max_paused;
    pl.max_per_owner = c.max_paused_per_owner ? c.max_paused_per_owner : std::max<size_t>(c.max_paused / 4, 1);
    pl.ttl_s = c.paused_ttl_s;
    pl.max_record_bytes = c.max_paused_bytes;
    pl.max_total_bytes = c.max_paused_total_bytes;
    paused_ = std::make_unique<sched::PausedSessions>(paused_dir, pl);
    if (size_t gone = paused_->Sweep()) Log(std::to_string(gone) + " expired paused session(s) removed from " + paused_dir);
    ctx_->paused = paused_.get();
  }
  ctx_->node = c.node_name;
}

DaemonCore::~DaemonCore() {
  if (images_.puller) images_.puller->SetListener(nullptr);  // the monitor it publishes to goes first
  boxes_.set_pool(nullptr);  // the pools go before the registry that names them
  boxes_.set_session_pool(nullptr);
}

// One layer pools for each backend: the backend itself when it keeps warm boxes (Docker's
// containers, sized by the same count), else the one-shot pool here, started ahead and torn down
// behind (scheduler/one_shot_pool.h).
void DaemonCore::StartPool(size_t per_policy, const std::string& default_policy) {
  if (per_policy == 0 || backend_->OwnPoolStats()) return;
  pool_ = std::make_unique<sched::OneShotPool>(*backend_, *policies_, per_policy);
  std::vector<std::string> warm;
  if (policies_->Find(default_policy)) warm.push_back(default_policy);
  pool_->Start(warm);
  boxes_.set_pool(pool_.get());
}

void DaemonCore::ReloadPolicies() {
  auto n = policies_->Reload();
  if (!n.ok()) {
    Log("SIGHUP: policy reload failed; keeping the previous policies:\n" + n.error().message);
    return;
  }
  Log("SIGHUP: reloaded " + std::to_string(*n) + " policies from " + policies_->dir());
  backend_->PoliciesReloaded();  // first: the boxes the pool refills with are the new policies'
  if (pool_) pool_->Drain();  // warm boxes of the previous policies go; the pool refills
  if (session_pool_) session_pool_->Drain();
}

void DaemonCore::BeginShutdown() {
  ctx_->shutting_down = true;
  if (monitor_) monitor_->events().CloseAll();  // live event streams end now
  sessions_->queue().Shutdown();                // creates waiting for a slot answer 503 now
  session_opens_->Shutdown();                   // and those waiting for their turn to open
}

void DaemonCore::FinishWork(int grace_ms) {
  executor_->StopAccepting();
  auto deadline = Clock::now() + std::chrono::milliseconds(grace_ms);
  while (executor_->running() + executor_->queued() > 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (executor_->running() > 0) {
    Log("grace over: killing " + std::to_string(boxes_.size()) + " box(es) still running");
    boxes_.KillAll();
  }
  executor_->Shutdown();
  jobs_->JoinAll();        // async batches: their remaining tasks were just answered 503
  executions_->Close();    // long-polls answer now, whatever the state
  if (pool_) {
    boxes_.set_pool(nullptr);
    pool_->Shutdown();  // warm boxes and used ones still waiting for the reaper
  }
  if (session_pool_) {
    boxes_.set_session_pool(nullptr);
    session_pool_->Shutdown();
  }
  sessions_->Shutdown();
}

void DaemonCore::AttachImages(image::StoreAndPuller images) {
  images_ = std::move(images);
  ctx_->images = images_.store.get();
  if (monitor_)
    monitor_->metrics().Declare("lsb_image_builds_total", monitor::MetricType::kCounter,
                                "container.build runs that built a step (or failed), by result (done|failed).");
  g_build_monitor.store(monitor_.get());
  if (!images_.puller) return;
  monitor::Monitor* m = monitor_.get();
  images_.puller->SetListener([m](const image::PullEvent& e) {
    if (e.state == "started") Log("pulling " + e.reference + " into the image store (container.pull)");
    if (e.state == "done")
      Log("pulled " + e.reference + " " + e.manifest_digest + " in " + std::to_string(e.elapsed_ms) + " ms");
    if (e.state == "failed") Log("pull of " + e.reference + " failed: " + e.error);
    if (m) m->ImagePullEvent(PullEventJson(e));
  });
}

void DaemonCore::StopMonitor() {
  g_build_monitor.store(nullptr);
  if (monitor_) monitor_->Stop();  // webhooks still queued are dropped (counted)
}

int RunDaemon(DaemonConfig config) {
  auto fail = [](const Error& e) {
    std::fprintf(stderr, "llm-sandbox serve: %s\n", e.message.c_str());
    return 2;
  };
  // Two malloc arenas, not one per thread: with glibc's default (8 per core) what a request freed
  // in one worker's arena was neither reused by the others nor trimmed, and the fan-out budget
  // (byte_budget.h) bounded live bytes while the RSS grew 2-3x past them (issue 32, class 8).
  // An operator's MALLOC_ARENA_MAX still wins.
  if (!std::getenv("MALLOC_ARENA_MAX")) ::mallopt(M_ARENA_MAX, 2);
  if (auto st = CheckExposure(config); !st.ok()) return fail(st.error());
  auto policies = LoadPolicies(config);
  if (!policies.ok()) return fail(policies.error());
  auto images = OpenImageStore(config);
  if (!images.ok()) return fail(images.error());
  auto backend = ChooseBackend(config, **policies, *images);
  if (!backend.ok()) return fail(backend.error());
  if (config.prebuild) {
    if (auto st = Prebuild(**backend, **policies); !st.ok()) return fail(st.error());
  }
  sigset_t sigs = BlockDaemonSignals();  // before any thread starts
  auto core = DaemonCore::Create(config, std::move(*backend), std::move(*policies));
  if (!core.ok()) return fail(core.error());
  (*core)->AttachImages(std::move(*images));

  WebGuard web_guard(WebGuardConfig{!config.tokens.empty(), config.allowed_origins});
  RaiseFdLimit(config.http.connections.max_total);
  auto server = HttpServer::Listen(config.http, FrontDoor((*core)->context(), (*core)->router(), (*core)->e2b(), web_guard));
  if (!server.ok()) return fail(server.error());
  LogListening(config, **core, (*server)->port());
  std::thread acceptor([&] { (*server)->Serve(); });
  WaitForStop(sigs, **core);

  Log("shutting down: no new work; waiting up to " + std::to_string(config.shutdown_grace_ms) + " ms for running executions");
  (*core)->BeginShutdown();
  (*server)->StopAccepting();
  acceptor.join();
  (*core)->FinishWork(config.shutdown_grace_ms);
  (*server)->Stop(2000);
  (*core)->StopMonitor();
  Log("stopped; boxes left: " + std::to_string((*core)->boxes()));
  return 0;
}

}  // namespace lsb::server
