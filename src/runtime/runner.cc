#include "runtime/runner.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "policy/alert_rules.h"
#include "policy/env_rules.h"
#include "policy/languages.h"
#include "protocol/alert_coalescer.h"

namespace lsb {
namespace {

using Clock = std::chrono::steady_clock;
using protocol::FrameType;

uint64_t ElapsedMs(Clock::time_point since) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count());
}

std::string MiB(uint64_t bytes) {
  if (bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

using protocol::AlertRule;

bool HasRule(const ExecResult& r, AlertRule rule) {
  for (const auto& a : r.alerts)
    if (a.rule == rule) return true;
  return false;
}

// An alert the host raises itself, with the rule's default severity.
protocol::Event HostAlert(std::string kind, AlertRule rule, std::string message, uint64_t time_ms) {
  protocol::Event e = protocol::MakeAlert(rule, std::move(kind), std::move(message));
  e.time_ms = time_ms;
  return e;
}

template <typename T>
Result<T> ParseJson(const std::string& payload, const char* what) {
  try {
    return protocol::ParseMessage<T>(payload);
  } catch (const std::exception& e) {
    return Error{std::string("protocol: bad ") + what + " from llm-sandbox-init: " + e.what()};
  }
}

// After init's stream ended: the box's verdict once it knows how the box ended (init's exit code,
// or the OOM kill), waiting briefly because an engine records a container's exit after the attach
// stream closes, and may record the OOM kill after the exit (Docker handles the two events apart):
// a SIGKILL without an OOM kill yet waits out the window. Backends that never report init's exit
// cost this wait only when init dies.
BoxVerdict AwaitBoxEnd(Box& box, const BoxVerdict& before) {
  auto until = Clock::now() + std::chrono::milliseconds(2000);
  std::string backend_error;  // kept: an engine that was down when the stream ended may be back now
  for (;;) {
    BoxVerdict v = box.Verdict();
    if (backend_error.empty()) backend_error = v.backend_error;
    bool oom = v.oom_kill_count > before.oom_kill_count;
    bool settled = oom || (v.init_exit_code && *v.init_exit_code != 128 + 9);
    if (settled || Clock::now() >= until) {
      v.backend_error = backend_error;
      return v;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

Status CheckCommand(const Policy& policy, const std::vector<std::string>& command) {
  if (command.empty()) return Error::InvalidArgument("command", "command: is empty; give a program and its arguments");
  if (command.size() > kMaxCommandArgs)
    return Error::InvalidArgument("command", "command: more than " + std::to_string(kMaxCommandArgs) + " arguments");
  size_t bytes = 0;
  for (const auto& a : command) {
    if (a.find('\0') != std::string::npos) return Error::InvalidArgument("command", "command: an argument has a NUL byte");
    bytes += a.size() + 1;
  }
  if (bytes > kMaxCommandBytes)
    return Error::InvalidArgument("command", "command: " + std::to_string(bytes) + " bytes of arguments; the limit is " +
                                                 std::to_string(kMaxCommandBytes));
  const std::string& prog = command[0];
  if (prog.empty()) return Error::InvalidArgument("command", "command[0]: is empty; name the program to run");
  auto denied = [&](const std::string& why) {
    return Error::PermissionDenied("command", "command[0]: " + prog + " " + why + " of policy '" + policy.name +
                                                  "' (add it to commands.allow, or use a policy that allows it)");
  };
  if (prog[0] == '/') {
    if (policy.Denies(prog)) return denied("is listed in commands.deny");
    if (!policy.Allows(prog)) return denied("is not in commands.allow");
    return OkStatus();
  }
  if (prog.find('/') != std::string::npos)
    return Error::InvalidArgument("command", "command[0]: '" + prog + "' is a relative path; give an absolute path or a bare name found on PATH");
  for (const auto& a : policy.allow)
    if (a.size() > prog.size() && a.compare(a.size() - prog.size() - 1, std::string::npos, "/" + prog) == 0 &&
        !policy.Denies(a))
      return OkStatus();
  return denied("names no command in commands.allow");
}

Result<protocol::RunSpec> BuildRunSpec(const Policy& policy, const ExecRequest& req) {
  LSB_ASSIGN_OR_RETURN(Language lang, ResolveLanguage(policy, req.language));
  if (lang.command.empty()) return Error{"language '" + lang.name + "' has no command in policy '" + policy.name + "'"};
  if (req.code.size() > protocol::kMaxFramePayload)
    return Error{"the program is " + std::to_string(req.code.size()) + " bytes; the limit is " +
                 MiB(protocol::kMaxFramePayload)};
  protocol::RunSpec s;
  s.argv = lang.command;
  s.file_name = lang.file_name.empty() ? "main" : lang.file_name;
  if (!req.command.empty()) {
    if (!req.code.empty()) return Error::InvalidArgument("command", "give exactly one of code and command");
    LSB_TRY(CheckCommand(policy, req.command));
    s.argv = req.command;  // no language's "{file}": init writes an empty program file nobody runs
  }
  if (!req.prelude_args.empty()) {
    if (!req.command.empty() || s.argv.back() != "{file}")
      return Error::InvalidArgument("outputs", "a prelude needs a language whose command ends in {file}");
    s.argv.insert(s.argv.end() - 1, req.prelude_args.begin(), req.prelude_args.end());
  }
  // Every source of a request's environment passes here (docs/security.md, Class 8).
  LSB_TRY(env::CheckRequestEnv(policy.env, req.env));
  s.env = policy.env;
  for (const auto& [k, v] : req.env) s.env[k] = v;
  s.workdir = policy.workdir;
  s.timeout_ms = policy.timeout_ms;
  if (req.timeout_ms) {
    if (*req.timeout_ms == 0) return Error{"a timeout of 0 is not a timeout; give a positive value"};
    if (*req.timeout_ms > policy.timeout_ms)
      return Error{"a request may only lower the timeout: " + std::to_string(*req.timeout_ms) +
                   " ms asked, policy '" + policy.name + "' allows " + std::to_string(policy.timeout_ms) + " ms"};
    s.timeout_ms = *req.timeout_ms;
  }
  s.timeout_grace_ms = std::min(policy.timeout_grace_ms, s.timeout_ms);  // never longer than the timeout
  s.output_limit_bytes = policy.output_bytes;
  s.nofile = policy.open_files;
  s.file_size_bytes = policy.file_size_bytes;
  s.stdin_follows = req.stdin_data.has_value();
  return s;
}

size_t OutputBudget::Append(std::string& dst, std::string_view chunk, bool* truncated) {
  uint64_t room = used_ >= cap_ ? 0 : cap_ - used_;
  size_t take = chunk.size() <= room ? chunk.size() : static_cast<size_t>(room);
  dst.append(chunk.data(), take);
  used_ += take;
  if (take < chunk.size() && truncated) *truncated = true;
  return take;
}

void ApplyExitReport(const protocol::ExitReport& report, ExecResult& r) {
  r.status = report.status;  // a status that is not a word of the table never parsed
  r.exit_code = report.exit_code;
  r.signal = report.signal;
  r.duration_ms = report.duration_ms;
  r.cpu_ms = report.cpu_ms;
  if (report.max_rss_bytes > 0) r.memory_peak_bytes = report.max_rss_bytes;
  r.truncated = r.truncated || report.truncated;
}

void ApplyVerdict(const BoxVerdict& before, const BoxVerdict& after, const Policy& policy, ExecResult& r) {
  if (after.oom_kill_count > before.oom_kill_count) {
    // The kernel killed something at the memory limit: that is why the run ended as it did.
    if (r.status != ExecStatus::kTimeout) r.status = ExecStatus::kOom;
    if (!HasRule(r, AlertRule::kOomKill))
      r.alerts.push_back(HostAlert(
          "oom", AlertRule::kOomKill,
          "killed by the OOM killer at the memory limit" +
              (policy.memory_bytes ? " of " + MiB(policy.memory_bytes) : std::string()) + " (" +
              std::to_string(after.oom_kill_count - before.oom_kill_count) + " process(es))",
          r.duration_ms));
  }
  if (after.pids_limit_events > before.pids_limit_events && !HasRule(r, AlertRule::kPidsLimit))
    r.alerts.push_back(HostAlert(
        "pids_limit", AlertRule::kPidsLimit,
        "process creation failed " + std::to_string(after.pids_limit_events - before.pids_limit_events) +
            " time(s) at the pids limit of " + std::to_string(policy.pids),
        r.duration_ms));
  if (after.memory_peak_bytes) r.memory_peak_bytes = after.memory_peak_bytes;
  if (r.cpu_ms == 0 && after.cpu_ns && before.cpu_ns && *after.cpu_ns >= *before.cpu_ns)
    r.cpu_ms = (*after.cpu_ns - *before.cpu_ns) / 1000000;
}

bool ApplyAlertRule(const Policy& policy, protocol::Event& alert) {
  if (alert.rule == AlertRule::kNone) return true;
  auto severity = EffectiveAlertSeverity(policy, alert.rule, alert.severity);
  if (!severity) return false;
  alert.severity = *severity;
  return true;
}

std::string WithDiagnostics(std::string what, Box& box) {
  std::string diag = box.Diagnostics();
  while (!diag.empty() && (diag.back() == '\n' || diag.back() == ' ')) diag.pop_back();
  if (!diag.empty()) what += "; its stderr said:\n" + diag;
  return what;
}

Result<protocol::InitReady> AwaitInitReady(FrameChannel& channel, Box& box, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    auto f = channel.Next(deadline);
    if (!f.ok() && f.error().IsCancelled()) return f.error();
    if (!f.ok()) return Error{WithDiagnostics("llm-sandbox-init ended before it was ready (" + f.error().message + ")", box)};
    if (!*f)
      return Error{WithDiagnostics("llm-sandbox-init did not report ready within " +
                                       std::to_string(timeout.count()) + " ms of kSetup",
                                   box)};
    protocol::Frame& fr = **f;
    if (fr.type == FrameType::kReady) return ParseJson<protocol::InitReady>(fr.payload, "ready");
    if (fr.type == FrameType::kError) {
      LSB_ASSIGN_OR_RETURN(auto err, ParseJson<protocol::InitError>(fr.payload, "error"));
      return Error{"the sandbox refused to start (llm-sandbox-init, " + std::string(protocol::Name(err.stage)) + "): " + err.message,
                   err.sys_errno};
    }
    // Anything else before ready (an early event) is not a run's: ignore it.
  }
}

Result<std::unique_ptr<BoxSession>> BoxSession::Open(Backend& backend, const Policy& policy,
                                                     SessionOptions opts) {
  // Made before the box starts: Start delivers it as init's first frame.
  LSB_ASSIGN_OR_RETURN(protocol::BoxSetup setup, backend.SetupFor(policy));
  return Open(backend, policy, std::move(setup), opts);
}

Result<std::unique_ptr<BoxSession>> BoxSession::Open(Backend& backend, const Policy& policy,
                                                     protocol::BoxSetup setup, SessionOptions opts) {
  std::unique_ptr<BoxSession> s(new BoxSession(backend, policy, opts));
  LSB_ASSIGN_OR_RETURN(s->box_, backend.Start(policy, setup, opts.owner));  // Start checks the policy first
  s->channel_ = std::make_unique<FrameChannel>(s->box_->stream_fd());
  s->channel_->set_cancel_fd(opts.cancel_fd);
  if (auto ready = s->box_->ReadyAhead()) {  // a warm pool's box: init was set up ahead
    s->ready_ = std::move(*ready);
    s->usable_ = true;
    return s;
  }
  if (!opts.await_ready) {
    // init sets the box up while the caller prepares the run; kReady is read on the way.
    s->ready_pending_ = true;
    s->usable_ = true;
    return s;
  }
  LSB_TRY(s->AwaitReady());
  s->usable_ = true;
  return s;
}

Status BoxSession::AwaitReady() {
  auto ready = AwaitInitReady(*channel_, *box_, std::chrono::milliseconds(opts_.setup_timeout_ms));
  if (!ready.ok()) {
    if (ready.error().IsCancelled()) return Cancelled();
    usable_ = false;
    box_->Kill();
    return ready.error();
  }
  ready_ = std::move(*ready);
  ready_pending_ = false;
  return OkStatus();
}

Status BoxSession::EnsureReady() {
  if (!ready_pending_) return OkStatus();
  return AwaitReady();  // retires the box on failure
}

Error BoxSession::Died(const std::string& what) {
  usable_ = false;
  if (!box_) return Error{what};
  box_->Kill();
  return Error{WithDiagnostics(what, *box_)};
}

Error BoxSession::Cancelled() {
  usable_ = false;
  if (box_) box_->Kill();
  return Error::Cancelled();
}

BoxSession::~BoxSession() { Close(); }

void BoxSession::Close() {
  if (!box_) return;
  if (usable_ && channel_) {
    channel_->Queue(FrameType::kShutdown, "");
    (void)channel_->Flush(Clock::now() + std::chrono::milliseconds(200));
  }
  usable_ = false;
  channel_.reset();
  box_.reset();  // kills init and with it the whole box, removes cgroups
}

// One run's progress, from kRun to the result.
struct BoxSession::RunState {
  explicit RunState(protocol::RunSpec s) : spec(std::move(s)), budget(spec.output_limit_bytes) {}
  protocol::RunSpec spec;
  ExecResult r;
  OutputBudget budget;
  // The host's own bound on what init reports (init bounds it too, but may be subverted).
  protocol::AlertCoalescer alerts;
  BoxVerdict before;               // the box's counters as the run began
  std::optional<BoxVerdict> died;  // the box ended without an exit report, for a reason it knows
  Clock::time_point start, deadline, next_sample;
  bool exited = false;  // kExit read
};

Result<ExecResult> BoxSession::Run(const ExecRequest& req, const RunCallbacks& cb) {
  if (!usable_) return Error{"this sandbox session can no longer run programs (its box was killed or broke)"};
  LSB_ASSIGN_OR_RETURN(protocol::RunSpec spec, BuildRunSpec(policy_, req));
  RunState st(std::move(spec));
  st.r.execution_id = req.execution_id.empty() ? NewExecutionId() : req.execution_id;
  st.r.backend = backend_.name();
  box_->BeginRun();
  st.before = box_->Verdict();

  channel_->Queue(FrameType::kRun, nlohmann::json(st.spec).dump());
  channel_->Queue(FrameType::kCode, req.code);
  if (req.stdin_data) {
    channel_->QueueChunked(FrameType::kStdin, *req.stdin_data);
    channel_->Queue(FrameType::kStdinEof, "");
  }
  LSB_TRY(EnsureReady());  // a lazily opened box: the run's frames wait behind kSetup
  st.start = Clock::now();  // the run's clock starts once the box is ready
  // Init sends SIGTERM at the timeout and SIGKILL after the policy's grace; the host waits for both.
  st.deadline = st.start + std::chrono::milliseconds(st.spec.timeout_ms + st.spec.timeout_grace_ms + opts_.grace_ms);
  st.next_sample = st.start + std::chrono::milliseconds(cb.usage_interval_ms);
  for (;;) {
    LSB_ASSIGN_OR_RETURN(bool more, Step(st, cb));
    if (!more) break;
  }
  return Conclude(st, cb);
}

Result<bool> BoxSession::Step(RunState& st, const RunCallbacks& cb) {
  // With a usage callback, wake up every interval to sample the box (then wait again).
  bool sampling = cb.on_usage && cb.usage_interval_ms > 0 && st.next_sample < st.deadline;
  auto f = channel_->Next(sampling ? st.next_sample : st.deadline);
  if (sampling && f.ok() && !*f) {
    if (auto u = box_->Usage()) cb.on_usage(*u);
    st.next_sample += std::chrono::milliseconds(cb.usage_interval_ms);
    return true;
  }
  if (!f.ok() && f.error().IsCancelled()) return Cancelled();
  if (!f.ok()) {
    LSB_TRY(StreamEnded(st, f.error()));
    return false;
  }
  if (!*f) {
    HostTimeout(st);
    return false;
  }
  LSB_TRY(OnFrame(st, **f, cb));
  TakeHostEvents(st, cb, /*run_ended=*/false);
  return !st.exited;
}

Status BoxSession::StreamEnded(RunState& st, const Error& error) {
  bool eof = error.IsEof();
  BoxVerdict now = eof ? AwaitBoxEnd(*box_, st.before) : box_->Verdict();
  bool oom = now.oom_kill_count > st.before.oom_kill_count;
  bool sigkilled = now.init_exit_code && *now.init_exit_code == 128 + 9;
  if (eof && (oom || sigkilled) && now.backend_error.empty()) {
    // The box died under the program, and the box says how: the OOM killer acted (under gVisor
    // it kills the whole sandbox at the memory limit) or init was SIGKILLed (gVisor lets the
    // program kill its own PID 1). That is the run's outcome, not a sandbox error.
    usable_ = false;
    st.r.status = ExecStatus::kKilled;  // ApplyVerdict makes it oom when the OOM killer acted
    st.r.exit_code = 128 + 9;
    st.r.signal = 9;
    st.r.duration_ms = ElapsedMs(st.start);
    st.died = now;
    return OkStatus();
  }
  std::string why = eof ? "the stream ended" : error.message;
  if (oom) why += "; the OOM killer acted in the box";
  if (now.init_exit_code) why += "; init exited with " + std::to_string(*now.init_exit_code);
  if (!now.backend_error.empty()) why += "; " + now.backend_error;
  return Died("llm-sandbox-init ended during the run (" + why + ")");
}

void BoxSession::HostTimeout(RunState& st) {
  // init did not report within timeout + grace: the host ends it, whatever init is doing.
  box_->Kill();
  usable_ = false;
  st.r.status = ExecStatus::kTimeout;
  st.r.exit_code = protocol::kTimeoutExitCode;
  st.r.signal = 9;
  st.r.duration_ms = ElapsedMs(st.start);
  st.r.alerts.push_back(HostAlert("timeout", AlertRule::kTimeout,
                                  "no exit report within " + std::to_string(st.spec.timeout_ms) + " ms + " +
                                      std::to_string(st.spec.timeout_grace_ms + opts_.grace_ms) +
                                      " ms grace: the box was killed by the host",
                                  st.r.duration_ms));
}

Status BoxSession::OnFrame(RunState& st, const protocol::Frame& fr, const RunCallbacks& cb) {
  switch (fr.type) {
    case FrameType::kStdout:
    case FrameType::kStderr: {
      bool out = fr.type == FrameType::kStdout;
      size_t kept = st.budget.Append(out ? st.r.stdout_data : st.r.stderr_data, fr.payload, &st.r.truncated);
      auto& fn = out ? cb.on_stdout : cb.on_stderr;
      if (fn && kept > 0) fn(std::string_view(fr.payload).substr(0, kept));
      return OkStatus();
    }
    case FrameType::kEvent: {
      LSB_ASSIGN_OR_RETURN(protocol::Event ev, ParseJson<protocol::Event>(fr.payload, "event"));
      // Only the host's egress proxy reports egress events: one claiming to be is init's lie.
      if (ev.kind == "egress" || !ev.egress.host.empty()) return OkStatus();
      AdmitEvent(st, std::move(ev), cb);
      return OkStatus();
    }
    case FrameType::kExit: {
      LSB_ASSIGN_OR_RETURN(auto rep, ParseJson<protocol::ExitReport>(fr.payload, "exit report"));
      ApplyExitReport(rep, st.r);
      st.exited = true;
      return OkStatus();
    }
    case FrameType::kError: {
      LSB_ASSIGN_OR_RETURN(auto err, ParseJson<protocol::InitError>(fr.payload, "error"));
      // The program could not be started as the policy says: fail closed, as an error.
      usable_ = false;
      return Error{"the sandbox could not run the program (llm-sandbox-init, " + std::string(protocol::Name(err.stage)) +
                       "): " + err.message,
                   err.sys_errno};
    }
    case FrameType::kFileEvent:
      DeliverFileEvent(fr);
      return OkStatus();
    default:
      return OkStatus();  // kReady again, or a host->init type echoed: ignore
  }
}

void BoxSession::DeliverFileEvent(const protocol::Frame& frame) {
  if (!file_events_) return;
  try {  // the watcher shares the box with the program: a malformed event is dropped
    file_events_(protocol::ParseMessage<protocol::FileEvent>(frame.payload));
  } catch (const std::exception&) {
  }
}

void BoxSession::AdmitEvent(RunState& st, protocol::Event ev, const RunCallbacks& cb) {
  if (!ApplyAlertRule(policy_, ev)) return;  // the policy turned this rule off
  if (!st.alerts.Admit(ev)) return;          // past the bound: counted into a summary
  if (cb.on_event) cb.on_event(ev);
  if (ev.rule != AlertRule::kNone) st.r.alerts.push_back(std::move(ev));
}

void BoxSession::TakeHostEvents(RunState& st, const RunCallbacks& cb, bool run_ended) {
  for (protocol::Event& ev : box_->TakeHostEvents(run_ended)) AdmitEvent(st, std::move(ev), cb);
}

ExecResult BoxSession::Conclude(RunState& st, const RunCallbacks& cb) {
  TakeHostEvents(st, cb, /*run_ended=*/true);
  ExecResult& r = st.r;
  if (r.duration_ms == 0) r.duration_ms = ElapsedMs(st.start);
  for (protocol::Event& summary : st.alerts.TakeSummaries()) {
    if (!ApplyAlertRule(policy_, summary)) continue;
    if (cb.on_event) cb.on_event(summary);
    if (summary.rule != AlertRule::kNone) r.alerts.push_back(std::move(summary));
  }
  ApplyVerdict(st.before, st.died ? *st.died : box_->Verdict(), policy_, r);
  if (r.status == ExecStatus::kTimeout && !HasRule(r, AlertRule::kTimeout))
    r.alerts.push_back(HostAlert("timeout", AlertRule::kTimeout,
                                 "killed at the timeout of " + std::to_string(st.spec.timeout_ms) + " ms",
                                 r.duration_ms));
  if (r.status == ExecStatus::kOutputLimit && !HasRule(r, AlertRule::kOutputFlood))
    r.alerts.push_back(HostAlert("output_limit", AlertRule::kOutputFlood,
                                 "killed at the output cap of " + MiB(st.spec.output_limit_bytes), r.duration_ms));
  // The host's own alerts (timeout, OOM, pids, output) under the policy's monitoring.alerts too.
  std::erase_if(r.alerts, [&](protocol::Event& a) { return !ApplyAlertRule(policy_, a); });
  return std::move(r);
}

Result<ExecResult> RunOnce(Backend& backend, const Policy& policy, const ExecRequest& req,
                           const RunCallbacks& cb, SessionOptions opts) {
  // Validate the request before paying for a box.
  LSB_TRY(BuildRunSpec(policy, req));
  opts.await_ready = false;  // one run: its frames follow kSetup at once
  LSB_ASSIGN_OR_RETURN(auto session, BoxSession::Open(backend, policy, opts));
  auto r = session->Run(req, cb);
  session->Close();
  return r;
}

}  // namespace lsb
