#include "scheduler/driver/python_driver.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "base/random_id.h"
#include "protocol/alert_coalescer.h"
#include "scheduler/changes/change_set.h"
#include "scheduler/driver/rich_outputs.h"

namespace lsb::sched {
namespace {

using Clock = std::chrono::steady_clock;
using Kind = InteractiveRun::Piece::Kind;

std::string RandomMarker() { return RandomHex("LSB-END-", 12); }

protocol::Event SessionAlert(const std::string& message, uint64_t time_ms) {
  protocol::Event e = protocol::MakeAlert(protocol::AlertRule::kInterpreterRestarted, "session", message);
  e.time_ms = time_ms;
  return e;
}

protocol::Event TimeoutAlert(uint64_t timeout_ms, uint64_t time_ms) {
  protocol::Event e = protocol::MakeAlert(protocol::AlertRule::kTimeout, "timeout",
                                          "killed at the timeout of " + std::to_string(timeout_ms) + " ms");
  e.time_ms = time_ms;
  return e;
}

}  // namespace

Status CheckDriverSupported(const Policy& policy) {
  const Language* py = policy.FindLanguage("python");
  if (!py || py->command.empty())
    return Error{"policy '" + policy.name + "' has no python language; the python session interpreter needs one"};
  if (!policy.Allows(py->command[0]) || policy.Denies(py->command[0]))
    return Error{"policy '" + policy.name + "' does not allow " + py->command[0] +
                 ", which the python session interpreter runs; allow it or use another policy"};
  return OkStatus();
}

Result<std::unique_ptr<PythonDriver>> PythonDriver::Start(BoxSession& session, uint64_t lifetime_ms,
                                                          const ZygoteSpec* zygote, ExecResult* setup) {
  const Policy& policy = session.policy();
  LSB_TRY(CheckDriverSupported(policy));
  ExecRequest req;
  req.language = "python";
  req.code = "";
  req.stdin_data = "";
  LSB_ASSIGN_OR_RETURN(protocol::RunSpec spec, BuildRunSpec(policy, req));
  spec.file_name = "lsb_driver.py";
  spec.timeout_ms = lifetime_ms;
  // The host enforces each op's own cap; the driver's whole-life output has none of its own.
  spec.output_limit_bytes = uint64_t{1} << 50;
  std::unique_ptr<PythonDriver> d(new PythonDriver(session));
  LSB_ASSIGN_OR_RETURN(d->run_, InteractiveRun::Start(session, spec, RichOutputSource() + PythonDriverSource()));
  d->marker_ = RandomMarker();
  d->run_->SendStdin(d->marker_ + "\n");
  if (zygote) {
    std::string roots;
    for (const auto& r : zygote->roots) roots += r + "\n";
    std::string header = "S " + std::to_string(zygote->setup.size()) + " " + std::to_string(roots.size()) + "\n";
    LSB_ASSIGN_OR_RETURN(ExecResult r, d->RunCode(header, zygote->setup, roots, policy.timeout_ms, policy.output_bytes));
    d->zygote_ = r.status == ExecStatus::kOk && d->alive();
    if (setup) *setup = std::move(r);
  }
  return d;
}

Result<FileOpResult> PythonDriver::StateOp(const char* op, uint64_t timeout_ms) {
  if (!zygote_) return Error{"the session's interpreter is not a zygote (its setup failed)"};
  LSB_ASSIGN_OR_RETURN(Reply rep, Send(std::string(op) + " 0 0\n", "", "", timeout_ms, 64 << 10));
  if (rep.deadline || rep.over_cap || rep.run_ended)
    return Error{"the session's interpreter ended or did not answer within " + std::to_string(timeout_ms) + " ms"};
  FileOpResult f;
  f.status = rep.status == 0 ? FileOpStatus::kOk : FileOpStatus::kFailed;
  f.message = rep.err;
  return f;
}

PythonDriver::~PythonDriver() { Stop(); }

void PythonDriver::WaitExit(std::chrono::milliseconds within) {
  auto deadline = Clock::now() + within;
  while (run_ && !run_->exited()) {
    auto p = run_->Next(deadline);
    if (!p.ok()) return;  // the session is marked unusable by InteractiveRun
    if (p->kind == Kind::kDeadline) {
      // init did not end the run in time: the box cannot be trusted for another run.
      session_.box().Kill();
      session_.MarkUnusable();
      return;
    }
  }
}

void PythonDriver::Stop() {
  if (!alive()) return;
  run_->CloseStdin();
  auto deadline = Clock::now() + std::chrono::milliseconds(500);
  while (!run_->exited()) {
    auto p = run_->Next(deadline);
    if (!p.ok()) return;
    if (p->kind == Kind::kDeadline) break;
  }
  if (!run_->exited()) {
    run_->Kill();
    WaitExit(std::chrono::milliseconds(5000));
  }
}

Result<PythonDriver::Reply> PythonDriver::Send(const std::string& header, const std::string& a,
                                               const std::string& b, uint64_t timeout_ms,
                                               uint64_t output_cap, const RunCallbacks* live,
                                               const std::atomic<bool>* preempt) {
  if (!alive()) return Error{"the session's python driver is not running"};
  run_->SendStdin(header);
  run_->SendStdin(a);
  run_->SendStdin(b);
  const std::string out_mark = "\x1e" + marker_ + ":";
  const std::string err_mark = "\x1e" + marker_ + "\n";
  // After a preempt the op's answer is the successor episode's reset mark, on both streams: what
  // came before it (even a racing normal answer) is the op's output.
  const std::string reset_mark = "\x1e" + marker_ + ":reset\n";
  const std::string err_prefix = "\x1e" + marker_;
  bool preempted = false;
  Reply rep;
  // This execution's alerts, bounded here (init's bound refills over the interpreter's life).
  protocol::AlertCoalescer alerts;
  auto with_summaries = [&]() -> Reply& {
    for (auto& s : alerts.TakeSummaries())
      if (s.rule != protocol::AlertRule::kNone) rep.events.push_back(std::move(s));
    return rep;
  };
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  size_t out_at = std::string::npos, err_at = std::string::npos;
  // Live output: what is certainly before the reply's marker (a tail that may be the start of the
  // marker is held back until the next piece tells), within the cap.
  size_t out_sent = 0, err_sent = 0;
  auto stream = [&](const std::string& buf, size_t at, const std::string& mark, size_t& sent,
                    const std::function<void(std::string_view)>& to) {
    if (!live || !to) return;
    size_t end = at;
    if (end == std::string::npos) {
      end = buf.size();
      size_t k = buf.rfind('\x1e');
      if (k != std::string::npos && k >= sent && buf.size() - k < mark.size() &&
          mark.compare(0, buf.size() - k, buf, k, std::string::npos) == 0)
        end = k;
    }
    uint64_t room = output_cap > out_sent + err_sent ? output_cap - out_sent - err_sent : 0;
    if (end > sent + room) end = sent + room;
    if (end <= sent) return;
    to(std::string_view(buf).substr(sent, end - sent));
    sent = end;
  };
  for (;;) {
    if (out_at == std::string::npos) {
      out_at = rep.out.find(out_mark);
    }
    if (err_at == std::string::npos) err_at = rep.err.find(err_mark);
    if (live) {
      stream(rep.out, out_at, out_mark, out_sent, live->on_stdout);
      // Held back at the marker both answers start with (a normal one and the reset mark).
      stream(rep.err, rep.err.find(err_prefix), err_prefix, err_sent, live->on_stderr);
    }
    // The reset mark also ends an op the host did not preempt: the episode's own code signalled
    // its zygote (a session is one trust domain), and what answers now is a fresh episode.
    size_t ro = rep.out.find(reset_mark), re = rep.err.find(reset_mark);
    if (ro != std::string::npos && re != std::string::npos) {
      rep.reset = true;
      rep.status = 255;  // not an answer to the op: a file op fails, an execute says "reset"
      rep.out.resize(std::min(out_at, ro));
      rep.err.resize(std::min(err_at, re));
      return with_summaries();
    }
    if (preempted) {
      // Only the reset mark answers now (a normal answer racing the preempt is output).
    } else if (out_at != std::string::npos && rep.out.find('\n', out_at) != std::string::npos &&
               err_at != std::string::npos) {
      break;
    } else if (preempt && preempt->load()) {
      run_->Preempt();
      preempted = true;
    }
    uint64_t kept_out = out_at == std::string::npos ? rep.out.size() : out_at;
    uint64_t kept_err = err_at == std::string::npos ? rep.err.size() : err_at;
    if (kept_out + kept_err > output_cap + out_mark.size() + err_mark.size() + 16) {
      rep.over_cap = true;
      run_->Kill();
      WaitExit(std::chrono::milliseconds(5000));
      return with_summaries();
    }
    // A preemptible op wakes now and then to see whether a reset asked for it.
    auto until = preempt && !preempted ? std::min(deadline, Clock::now() + std::chrono::milliseconds(50)) : deadline;
    LSB_ASSIGN_OR_RETURN(auto piece, run_->Next(until));
    if (piece.kind == Kind::kDeadline && until < deadline) continue;
    switch (piece.kind) {
      case Kind::kStdout: rep.out += piece.data; break;
      case Kind::kStderr: rep.err += piece.data; break;
      case Kind::kEvent:
        if (piece.event.rule != protocol::AlertRule::kNone && alerts.Admit(piece.event)) rep.events.push_back(std::move(piece.event));
        break;
      case Kind::kExit:
        rep.run_ended = true;
        rep.exit = piece.exit;
        return with_summaries();
      case Kind::kDeadline:
        rep.deadline = true;
        run_->Kill();
        WaitExit(std::chrono::milliseconds(5000));
        return with_summaries();
    }
  }
  size_t nl = rep.out.find('\n', out_at);
  // The reply comes from a process the session's code shares (a session is one trust domain,
  // docs/security.md Class 9): parse it as hostile, a status outside 0..255 is 255.
  const char* first = rep.out.data() + out_at + out_mark.size();
  const char* last = rep.out.data() + nl;
  auto [end, ec] = std::from_chars(first, last, rep.status);
  if (ec != std::errc() || end != last || rep.status < 0 || rep.status > 255) rep.status = 255;
  rep.out.resize(out_at);
  rep.err.resize(err_at);
  return with_summaries();
}

Result<ExecResult> PythonDriver::Execute(const std::string& code, const std::string& stdin_data,
                                         uint64_t timeout_ms, uint64_t output_cap, const RunCallbacks* live,
                                         const std::atomic<bool>* preempt) {
  std::string header = "X " + std::to_string(code.size()) + " " + std::to_string(stdin_data.size()) + "\n";
  return RunCode(header, code, stdin_data, timeout_ms, output_cap, live, zygote_ ? preempt : nullptr);
}

Result<FileOpResult> PythonDriver::Namespace(const std::string& name, NamespaceOp op) {
  std::string header = "N " + std::to_string(name.size()) + " " + std::to_string(static_cast<int>(op)) + "\n";
  LSB_ASSIGN_OR_RETURN(Reply rep, Send(header, name, "", 10000, 64 << 10));
  if (rep.deadline || rep.over_cap || rep.run_ended)
    return Error{"the session's interpreter ended or did not answer while switching its namespace"};
  FileOpResult f;
  f.status = static_cast<FileOpStatus>(rep.status);
  f.message = rep.err;
  return f;
}

Result<ExecResult> PythonDriver::RunCode(const std::string& header, const std::string& code,
                                         const std::string& stdin_data, uint64_t timeout_ms,
                                         uint64_t output_cap, const RunCallbacks* live,
                                         const std::atomic<bool>* preempt) {
  ExecResult r;
  r.execution_id = NewExecutionId();
  r.backend = session_.backend().name();
  BoxVerdict before = session_.box().Verdict();
  auto start = Clock::now();
  LSB_ASSIGN_OR_RETURN(Reply rep, Send(header, code, stdin_data, timeout_ms, output_cap, live, preempt));
  r.duration_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
  OutputBudget budget(output_cap);
  budget.Append(r.stdout_data, rep.out, &r.truncated);
  budget.Append(r.stderr_data, rep.err, &r.truncated);
  r.alerts = std::move(rep.events);
  if (rep.reset) {
    r.status = ExecStatus::kReset;
    r.exit_code = 137;
    r.signal = 9;
  } else if (rep.deadline) {
    r.status = ExecStatus::kTimeout;
    r.exit_code = protocol::kTimeoutExitCode;
    r.signal = 9;
    r.alerts.push_back(TimeoutAlert(timeout_ms, r.duration_ms));
    r.alerts.push_back(SessionAlert("the interpreter was killed at the timeout; the next execution starts a fresh one (variables are lost, files are kept)", r.duration_ms));
  } else if (rep.over_cap) {
    r.status = ExecStatus::kOutputLimit;
    r.exit_code = 137;
    r.signal = 9;
    r.truncated = true;
    r.alerts.push_back(SessionAlert("the interpreter was killed at the output cap; the next execution starts a fresh one", r.duration_ms));
  } else if (rep.run_ended) {
    ApplyExitReport(rep.exit, r);
    r.duration_ms = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
    r.cpu_ms = 0;  // the report covers the driver's whole life: use the box's delta instead
    r.alerts.push_back(SessionAlert("the interpreter ended (" + std::string(protocol::Name(rep.exit.status)) + ", exit " +
                                        std::to_string(rep.exit.exit_code) +
                                        "); the next execution starts a fresh one",
                                    r.duration_ms));
  } else {
    r.exit_code = rep.status;
    r.status = rep.status == 0 ? ExecStatus::kOk : ExecStatus::kError;
  }
  ApplyVerdict(before, session_.box().Verdict(), session_.policy(), r);
  return r;
}

Result<FileOpResult> PythonDriver::RecordOp(char op, const std::string& first, const std::string& second,
                                            uint64_t timeout_ms, uint64_t reply_cap) {
  std::string header = std::string(1, op) + " " + std::to_string(first.size()) + " " + std::to_string(second.size()) + "\n";
  LSB_ASSIGN_OR_RETURN(Reply rep, Send(header, first, second, timeout_ms, reply_cap + (64 << 10)));
  if (rep.deadline || rep.over_cap || rep.run_ended)
    return Error{std::string("the interpreter in the box ended before it answered (") +
                 (rep.deadline ? "out of time" : rep.over_cap ? "it sent more than the bound" : "it exited") + ")"};
  FileOpResult f;
  f.status = static_cast<FileOpStatus>(rep.status);
  f.message = rep.err;
  if (f.status == FileOpStatus::kOk) f.data = std::move(rep.out);
  return f;
}

}  // namespace lsb::sched
