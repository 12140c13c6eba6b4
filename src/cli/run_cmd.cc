// llm-sandbox run: one program, one fresh box. Streams the program's output live, prints alerts in
// words, and exits with the program's exit code (or 124 timeout, 137 oom, 126 denied, 128+signal
// killed, 70 when the sandbox itself failed, 2 for bad usage).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "egress/egress_options.h"
#include "base/io.h"
#include "base/unique_fd.h"
#include "cli/commands.h"
#include "cli/output_relay.h"
#include "cli/registry_flags.h"
#include "policy/languages.h"
#include "policy/policy_loader.h"
#include "policy/suggest.h"
#include "runtime/backend_select.h"
#include "runtime/mount_roots.h"
#include "runtime/runner.h"
#include "scheduler/box_registry.h"
#include "scheduler/one_shot.h"

namespace lsb::cli {
namespace {

constexpr int kExitUsage = 2;
constexpr int kExitSandbox = 70;

// The write end of a pipe the runner polls: a signal becomes a cancellation, so the box is
// killed and its cgroups removed instead of being left behind by a dying CLI.
int g_cancel_w = -1;
volatile sig_atomic_t g_signal = 0;

void OnSignal(int sig) {
  g_signal = sig;
  if (g_cancel_w >= 0) {
    char c = 1;
    (void)!::write(g_cancel_w, &c, 1);
  }
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "llm-sandbox: error: %s\n", message.c_str());
  return kExitSandbox;
}

Result<std::string> ReadInput(const std::string& path, const char* what) {
  if (path == "-") {
    std::string data;
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(0, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Error::FromErrno(std::string("read the ") + what + " from stdin");
      if (n == 0) break;
      data.append(buf, static_cast<size_t>(n));
    }
    return data;
  }
  auto r = ReadFile(path);
  if (!r.ok()) return r.error().Wrap(std::string("read the ") + what);
  return r;
}

void WriteOut(FILE* f, std::string_view data) {
  std::fwrite(data.data(), 1, data.size(), f);
  std::fflush(f);
}

std::string AlertLine(const protocol::Event& e) {
  std::string msg = e.message;
  if (msg.empty()) {
    msg = e.kind;
    if (!e.path.empty()) msg += " " + e.path;
    if (!e.address.empty()) msg += " " + e.address;
    if (!e.decision.empty()) msg += " (" + e.decision + ")";
  }
  return "llm-sandbox: alert [" + std::string(protocol::Name(e.rule)) + "] " + msg + "\n";
}

void PrintAlert(const protocol::Event& e) {
  std::fputs(AlertLine(e).c_str(), stderr);
  std::fflush(stderr);
}

// Without --lang, a program file's extension names its language (t.py is python, not the policy's
// default bash); stdin keeps the policy's default. A language the policy cannot run is a usage
// error (exit 2) naming the ones it can, before any box is started.
int ChooseLanguage(const Policy& policy, const std::string& program, std::string& lang) {
  std::string why;
  if (lang.empty()) {
    lang = InferLanguage(policy, program);
    if (!lang.empty()) why = program + " is " + lang + " by its extension (no --lang given); ";
  }
  auto language = ResolveLanguage(policy, lang);
  if (language.ok()) return 0;
  std::vector<std::string> runnable = RunnableLanguages(policy);
  std::fprintf(stderr, "llm-sandbox run: %s%s\n  policy '%s' runs: %s; pass --lang with one of them, or a --policy "
               "that runs %s\n",
               why.c_str(), language.error().message.c_str(), policy.name.c_str(),
               runnable.empty() ? "no language" : JoinList(runnable).c_str(),
               (lang.empty() ? policy.default_language : lang).c_str());
  return kExitUsage;
}

struct RunArgs {
  std::string policy = "code-sandbox";
  std::string lang;
  std::string images;
  std::string backend;
  std::string stdin_file;
  std::string program = "-";
  double timeout_s = 0;
  bool json = false;
  std::vector<std::string> command;  // after "--": a command run as it is, instead of a program
  std::string store;         // the image store (--store; registry_flags.h)
  image::PullOptions pull;   // how container.pull reaches registries
  egress::EgressOptions egress;
  std::vector<std::string> mount_roots;  // --mount-root
  std::string workspace;                 // --workspace DIR: DIR at kWorkspaceTarget, overlay
  std::vector<std::string> collect;      // --collect PATTERN
  std::string changes;                   // --changes [DIR]
  bool want_changes = false;
};

// Where --workspace mounts its directory (docs/api.md "Host workspaces"), and the run's cwd.
constexpr const char* kWorkspaceTarget = "/workspace";

// nullopt: go on; else the exit code (--help, a usage error).
std::optional<int> ParseRunArgs(const Args& args, RunArgs& a) {
  CLI::App app{"Run a program in a sandbox under a policy.", "llm-sandbox run"};
  app.add_option("--policy", a.policy, "policy file, or a name looked up in the policy path")->capture_default_str();
  app.add_option("--lang", a.lang,
                 "language of the program (python, bash, sh, node, ...); default: by the program file's extension "
                 "(.py .sh .js ...), else the policy's");
  app.add_option("--images", a.images, "image map file (default: $LLM_SANDBOX_IMAGES, /etc/llm-sandbox/images.yaml)");
  app.add_option("--backend", a.backend, "backend: auto | native | ... (default: the policy's backend)");
  app.add_option("--stdin", a.stdin_file, "file whose bytes become the program's stdin ('-' for ours)");
  app.add_option("--timeout", a.timeout_s, "seconds; may only lower the policy's timeout")->check(CLI::PositiveNumber);
  app.add_flag("--json", a.json, "print the whole result as JSON on stdout instead of streaming");
  app.add_option("--store", a.store, "image store (default: $LLM_SANDBOX_IMAGE_STORE, else <state dir>/images)");
  app.add_option("--insecure-registry", a.pull.insecure_registries, "allow plain HTTP to HOST[:PORT] (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--ca-file", a.pull.ca_file, "an extra CA bundle trusted for registries");
  app.add_option("--certs-dir", a.pull.certs_dir, "instead of /etc/docker/certs.d");
  app.add_option("--registry-mirror", a.pull.docker_hub_mirrors, "a Docker Hub mirror tried first (repeatable)")
      ->allow_extra_args(false);
  std::vector<std::string> resolve;
  std::string max_conn, max_bytes, max_bandwidth, idle, secrets_file, upstream_ca;
  app.add_option("--egress-resolve", resolve,
                 "NAME:ADDR: the egress proxy resolves NAME to ADDR, not through DNS (repeatable; tests and "
                 "air-gapped operators; the address is still checked)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--egress-max-connections", max_conn, "open proxied connections of the box (default 32)");
  app.add_option("--egress-max-bytes", max_bytes, "proxied bytes of the run, both ways (default 1G)");
  app.add_option("--egress-max-bandwidth", max_bandwidth,
                 "proxied bytes per second of the box, both ways (default 1G; 0: no cap)");
  app.add_option("--egress-idle-timeout", idle, "seconds a proxied connection may be idle (default 60)");
  app.add_option("--secrets-file", secrets_file, "NAME=value lines (mode 600) for network.secrets' ${NAME}");
  app.add_option("--egress-upstream-ca", upstream_ca, "CA certificates (PEM) trusted for secret hosts' TLS");
  app.add_option("--mount-root", a.mount_roots, "a host directory the policy's container.mounts may bind from (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--workspace", a.workspace,
                 "mount DIR at /workspace as a writable copy-on-write view (writes never reach DIR) and run there");
  app.add_option("--collect", a.collect, "return files matching PATTERN (e.g. /workspace/report.xml) in --json's result (repeatable)")
      ->allow_extra_args(false);
  auto* changes = app.add_option("--changes", a.changes,
                                 "list what the run changed (under DIR, default the writable paths) with a patch, in --json's result");
  changes->expected(0, 1);
  app.add_option("program", a.program, "program file, or '-' for stdin")->capture_default_str();
  app.footer("llm-sandbox run [options] -- COMMAND [ARG...] runs a command (allowed by the policy's "
             "commands.allow) instead of a program: llm-sandbox run -- python3 -m unittest");
  // Everything after the first "--" is the command, untouched by the option parser.
  auto dashes = std::find(args.begin(), args.end(), std::string("--"));
  if (dashes != args.end()) {
    a.command.assign(dashes + 1, args.end());
    if (a.command.empty()) {
      std::fputs("llm-sandbox run: nothing after '--'; give a command such as: llm-sandbox run -- python3 -m unittest\n", stderr);
      return kExitUsage;
    }
  }
  std::vector<std::string> argv(std::make_reverse_iterator(dashes), args.rend());
  try {
    app.parse(argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kExitUsage;
  }
  a.want_changes = changes->count() > 0;
  if ((a.want_changes || !a.collect.empty()) && !a.json) {
    std::fputs("llm-sandbox run: --changes and --collect return their results in --json's output; add --json\n", stderr);
    return kExitUsage;
  }
  std::vector<std::pair<const char*, std::string>> egress_flags;
  for (const auto& r : resolve) egress_flags.emplace_back("--egress-resolve", r);
  if (!max_conn.empty()) egress_flags.emplace_back("--egress-max-connections", max_conn);
  if (!max_bytes.empty()) egress_flags.emplace_back("--egress-max-bytes", max_bytes);
  if (!max_bandwidth.empty()) egress_flags.emplace_back("--egress-max-bandwidth", max_bandwidth);
  if (!idle.empty()) egress_flags.emplace_back("--egress-idle-timeout", idle);
  if (!secrets_file.empty()) egress_flags.emplace_back("--secrets-file", secrets_file);
  if (!upstream_ca.empty()) egress_flags.emplace_back("--egress-upstream-ca", upstream_ca);
  for (const auto& [flag, value] : egress_flags) {
    auto took = egress::ApplyEgressFlag(flag, value, a.egress);
    if (!took.ok()) {
      std::fprintf(stderr, "llm-sandbox run: %s\n", took.error().message.c_str());
      return kExitUsage;
    }
  }
  if (!a.command.empty() && (a.program != "-" || !a.lang.empty())) {
    std::fputs("llm-sandbox run: give a program file (with --lang) or a command after '--', not both\n", stderr);
    return kExitUsage;
  }
  if (a.program == "-" && a.stdin_file == "-" && a.command.empty()) {
    std::fputs("llm-sandbox run: the program and --stdin cannot both come from stdin\n", stderr);
    return kExitUsage;
  }
  return std::nullopt;
}

// --workspace DIR: the user named DIR on their own command line, so it is its own mount root; it
// is mounted as an overlay at kWorkspaceTarget, which becomes the run's working directory.
Status AddWorkspace(RunArgs& a, Policy& policy) {
  if (a.workspace.empty()) return OkStatus();
  LSB_ASSIGN_OR_RETURN(std::string real, RealDirectory(a.workspace, "--workspace"));
  for (const auto& m : policy.mounts)
    if (m.target == kWorkspaceTarget)
      return Error{"--workspace: policy '" + policy.name + "' already mounts " + m.target + " (container.mounts)"};
  HostMount m;
  m.source = real;
  m.target = kWorkspaceTarget;
  m.mode = "overlay";
  policy.mounts.push_back(m);
  policy.workdir = kWorkspaceTarget;
  a.mount_roots.push_back(real);
  return OkStatus();
}

Result<ExecRequest> ReadRequest(const RunArgs& a) {
  ExecRequest req;
  if (a.command.empty()) {
    LSB_ASSIGN_OR_RETURN(req.code, ReadInput(a.program, "program"));
  } else {
    req.command = a.command;
  }
  req.language = a.lang;
  if (!a.stdin_file.empty()) {
    LSB_ASSIGN_OR_RETURN(std::string in, ReadInput(a.stdin_file, "--stdin input"));
    req.stdin_data = std::move(in);
  }
  req.collect = a.collect;
  if (a.want_changes) req.changes = a.changes;
  if (a.timeout_s > 0) req.timeout_ms = static_cast<uint64_t>(std::llround(a.timeout_s * 1000));
  return req;
}

// SIGINT/SIGTERM/SIGHUP become a cancellation the runner polls (read_fd), for as long as it lives.
class CancelOnSignal {
 public:
  static Result<std::unique_ptr<CancelOnSignal>> Install() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return Error::FromErrno("pipe");
    std::unique_ptr<CancelOnSignal> c(new CancelOnSignal(UniqueFd(fds[0]), UniqueFd(fds[1])));
    g_cancel_w = c->w_.get();
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
    return c;
  }
  ~CancelOnSignal() { g_cancel_w = -1; }
  int read_fd() const { return r_.get(); }

 private:
  CancelOnSignal(UniqueFd r, UniqueFd w) : r_(std::move(r)), w_(std::move(w)) {}
  UniqueFd r_, w_;
};

// Live output through the relay; init's alerts as lines on stderr, counted (the rest come after).
RunCallbacks StreamTo(OutputRelay& relay, size_t& streamed_alerts) {
  RunCallbacks cb;
  cb.on_stdout = [&relay](std::string_view d) { relay.Write(1, d); };
  cb.on_stderr = [&relay](std::string_view d) { relay.Write(2, d); };
  cb.on_event = [&streamed_alerts, &relay](const protocol::Event& e) {
    if (e.rule == protocol::AlertRule::kNone) return;
    relay.Write(2, AlertLine(e));
    ++streamed_alerts;
  };
  return cb;
}

// The result as JSON, or (streamed) what was not said live; the exit code.
int Report(const ExecResult& r, const Policy& policy, bool json, size_t streamed_alerts) {
  if (json) {
    WriteOut(stdout, r.ToJsonText(2) + "\n");
    return CliExitCode(r);
  }
  // The host's own alerts (oom_kill, pids_limit, a host timeout) follow init's in the result and
  // were not streamed.
  for (size_t i = streamed_alerts; i < r.alerts.size(); ++i) PrintAlert(r.alerts[i]);
  if (r.truncated)
    std::fprintf(stderr, "llm-sandbox: output truncated at the policy's cap of %llu bytes\n",
                 static_cast<unsigned long long>(policy.output_bytes));
  if (r.status == ExecStatus::kTimeout)
    std::fprintf(stderr, "llm-sandbox: timed out after %llu ms\n", static_cast<unsigned long long>(r.duration_ms));
  else if (r.status == ExecStatus::kOom)
    std::fputs("llm-sandbox: killed: out of memory (the policy's memory limit)\n", stderr);
  return CliExitCode(r);
}

}  // namespace

int RunCommand(const Args& args) {
  RunArgs a;
  if (auto rc = ParseRunArgs(args, a)) return *rc;
  auto policy = LoadPolicy(a.policy);
  if (!policy.ok()) return Fail("policy: " + policy.error().message);
  if (auto st = AddWorkspace(a, *policy); !st.ok()) return Fail(st.error().message);
  if (a.command.empty()) {
    if (int rc = ChooseLanguage(*policy, a.program, a.lang); rc != 0) return rc;
  } else if (Status ok = CheckCommand(*policy, a.command); !ok.ok()) {
    // Refused before any box, as a program the policy cannot run is (126: not allowed).
    std::fprintf(stderr, "llm-sandbox run: %s\n", ok.error().message.c_str());
    return ok.error().code == ErrorCode::kPermissionDenied ? 126 : kExitUsage;
  }
  auto req = ReadRequest(a);
  if (!req.ok()) return Fail(req.error().message);
  BackendOptions bo;
  bo.images_file = a.images;
  bo.mount_roots = a.mount_roots;
  if (auto st = WireImageStore(a.store, a.pull, bo); !st.ok()) return Fail(st.error().message);
  bo.egress = a.egress;
  bo.build_progress = [](const std::string& line) { std::fprintf(stderr, "llm-sandbox: build %s\n", line.c_str()); };
  auto backend = MakeBackend(a.backend.empty() ? Spelling(policy->backend) : a.backend, bo);
  if (!backend.ok()) return Fail(backend.error().message);
  auto cancel = CancelOnSignal::Install();
  if (!cancel.ok()) return Fail(cancel.error().message);

  size_t streamed_alerts = 0;
  // Our stdout/stderr are written by a thread of their own: a reader that does not drain them
  // never holds up the run or its timeout (output_relay.h).
  OutputRelay relay(policy->output_bytes + (4u << 20), &g_signal);
  RunCallbacks cb = a.json ? RunCallbacks{} : StreamTo(relay, streamed_alerts);
  // The daemon's one-shot path, with no pool: after a completed run the box's removal is left
  // behind (Box::DetachTeardown), so the CLI exits without waiting for the kernel to take the box's
  // namespaces down. Interrupted runs wait here until the box is gone.
  sched::OneShotOptions opts;
  opts.session.cancel_fd = (*cancel)->read_fd();
  opts.leave_teardown_behind = true;
  req->outputs = a.json;  // rich outputs have a place only in --json's result
  sched::BoxRegistry registry;
  auto result = sched::RunOneShot(**backend, registry, *policy, *req, {}, cb, opts);
  relay.Finish();  // the box is gone: now wait for our readers, as any tool does
  cancel->reset();
  if (!result.ok()) {
    if (g_signal) {
      std::fprintf(stderr, "llm-sandbox: interrupted (signal %d); the sandbox was destroyed\n",
                   static_cast<int>(g_signal));
      return 128 + g_signal;
    }
    return Fail(result.error().message);
  }
  return Report(*result, *policy, a.json, streamed_alerts);
}

}  // namespace lsb::cli
