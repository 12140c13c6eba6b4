#include "scheduler/driver/driver_wire.h"

#include <algorithm>
#include <charconv>
#include <functional>

#include "base/random_id.h"
#include "protocol/alert_coalescer.h"

namespace lsb::sched {
namespace {

using Clock = std::chrono::steady_clock;
using Kind = InteractiveRun::Piece::Kind;

protocol::Event TimeoutAlert(uint64_t timeout_ms, uint64_t time_ms) {
  protocol::Event e = protocol::MakeAlert(protocol::AlertRule::kTimeout, "timeout",
                                          "killed at the timeout of " + std::to_string(timeout_ms) + " ms");
  e.time_ms = time_ms;
  return e;
}

// The marks of one driver's answers, and where they were found in the reply so far.
struct Marks {
  explicit Marks(const std::string& marker)
      : out("\x1e" + marker + ":"), err("\x1e" + marker + "\n"), reset("\x1e" + marker + ":reset\n"),
        err_prefix("\x1e" + marker) {}
  const std::string out, err;
  // After a preempt the op's answer is the successor episode's reset mark, on both streams: what
  // came before it (even a racing normal answer) is the op's output.
  const std::string reset;
  const std::string err_prefix;  // what a normal answer and the reset mark both start with
  size_t out_at = std::string::npos, err_at = std::string::npos;

  void Find(const DriverReply& rep) {
    if (out_at == std::string::npos) out_at = rep.out.find(out);
    if (err_at == std::string::npos) err_at = rep.err.find(err);
  }
  bool Answered(const DriverReply& rep) const {
    return out_at != std::string::npos && rep.out.find('\n', out_at) != std::string::npos &&
           err_at != std::string::npos;
  }
};

// Live output: what is certainly before the reply's marker (a tail that may be the start of the
// marker is held back until the next piece tells), within the cap shared by both streams.
class LiveOutput {
 public:
  LiveOutput(const RunCallbacks* live, uint64_t cap) : live_(live), cap_(cap) {}
  void Stream(const DriverReply& rep, const Marks& m) {
    if (!live_) return;
    Pass(rep.out, m.out_at, m.out, out_sent_, live_->on_stdout);
    Pass(rep.err, rep.err.find(m.err_prefix), m.err_prefix, err_sent_, live_->on_stderr);
  }

 private:
  void Pass(const std::string& buf, size_t at, const std::string& mark, size_t& sent,
            const std::function<void(std::string_view)>& to) {
    if (!to) return;
    size_t end = at;
    if (end == std::string::npos) {
      end = buf.size();
      size_t k = buf.rfind('\x1e');
      if (k != std::string::npos && k >= sent && buf.size() - k < mark.size() &&
          mark.compare(0, buf.size() - k, buf, k, std::string::npos) == 0)
        end = k;
    }
    uint64_t room = cap_ > out_sent_ + err_sent_ ? cap_ - out_sent_ - err_sent_ : 0;
    if (end > sent + room) end = sent + room;
    if (end <= sent) return;
    to(std::string_view(buf).substr(sent, end - sent));
    sent = end;
  }
  const RunCallbacks* live_;
  uint64_t cap_;
  size_t out_sent_ = 0, err_sent_ = 0;
};

}  // namespace

protocol::Event RestartAlert(const std::string& message, uint64_t time_ms) {
  protocol::Event e = protocol::MakeAlert(protocol::AlertRule::kInterpreterRestarted, "session", message);
  e.time_ms = time_ms;
  return e;
}

int ParseAnswerStatus(std::string_view digits) {
  int status = -1;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), status);
  if (ec != std::errc() || end != digits.data() + digits.size() || status < 0 || status > 255) return 255;
  return status;
}

Result<std::unique_ptr<DriverWire>> DriverWire::Start(BoxSession& session, protocol::RunSpec spec,
                                                      std::string_view program) {
  std::unique_ptr<DriverWire> w(new DriverWire(session));
  LSB_ASSIGN_OR_RETURN(w->run_, InteractiveRun::Start(session, std::move(spec), program));
  w->marker_ = RandomHex("LSB-END-", 12);
  w->run_->SendStdin(w->marker_ + "\n");
  return w;
}

DriverWire::~DriverWire() { Stop(); }

void DriverWire::WaitExit(std::chrono::milliseconds within) {
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

void DriverWire::KillRun() {
  run_->Kill();
  WaitExit(std::chrono::milliseconds(5000));
}

void DriverWire::Stop() {
  if (!alive()) return;
  run_->CloseStdin();
  auto deadline = Clock::now() + std::chrono::milliseconds(500);
  while (!run_->exited()) {
    auto p = run_->Next(deadline);
    if (!p.ok()) return;
    if (p->kind == Kind::kDeadline) break;
  }
  if (!run_->exited()) KillRun();
}

Result<DriverReply> DriverWire::Send(std::string_view header, std::string_view a, std::string_view b,
                                     uint64_t timeout_ms, uint64_t output_cap, const RunCallbacks* live,
                                     const std::atomic<bool>* preempt) {
  if (!alive()) return Error{"the session's driver is not running"};
  run_->SendStdin(header);
  run_->SendStdin(a);
  run_->SendStdin(b);
  Marks m(marker_);
  LiveOutput stream(live, output_cap);
  bool preempted = false;
  DriverReply rep;
  // This execution's alerts, bounded here (init's bound refills over the driver's life).
  protocol::AlertCoalescer alerts;
  auto with_summaries = [&]() -> DriverReply& {
    for (auto& s : alerts.TakeSummaries())
      if (s.rule != protocol::AlertRule::kNone) rep.events.push_back(std::move(s));
    return rep;
  };
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    m.Find(rep);
    stream.Stream(rep, m);
    // The reset mark also ends an op the host did not preempt: the episode's own code signalled
    // its zygote (a session is one trust domain), and what answers now is a fresh episode.
    size_t ro = rep.out.find(m.reset), re = rep.err.find(m.reset);
    if (ro != std::string::npos && re != std::string::npos) {
      rep.reset = true;
      rep.status = 255;  // not an answer to the op: a file op fails, an execute says "reset"
      rep.out.resize(std::min(m.out_at, ro));
      rep.err.resize(std::min(m.err_at, re));
      return with_summaries();
    }
    if (preempted) {
      // Only the reset mark answers now (a normal answer racing the preempt is output).
    } else if (m.Answered(rep)) {
      break;
    } else if (preempt && preempt->load()) {
      run_->Preempt();
      preempted = true;
    }
    uint64_t kept_out = m.out_at == std::string::npos ? rep.out.size() : m.out_at;
    uint64_t kept_err = m.err_at == std::string::npos ? rep.err.size() : m.err_at;
    if (kept_out + kept_err > output_cap + m.out.size() + m.err.size() + 16) {
      rep.over_cap = true;
      KillRun();
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
        if (piece.event.rule != protocol::AlertRule::kNone && alerts.Admit(piece.event))
          rep.events.push_back(std::move(piece.event));
        break;
      case Kind::kExit:
        rep.run_ended = true;
        rep.exit = piece.exit;
        return with_summaries();
      case Kind::kDeadline:
        rep.deadline = true;
        KillRun();
        return with_summaries();
    }
  }
  size_t nl = rep.out.find('\n', m.out_at);
  // The reply comes from a process the session's code shares (a session is one trust domain,
  // docs/security.md Class 9): parse it as hostile.
  size_t digits = m.out_at + m.out.size();
  rep.status = ParseAnswerStatus(std::string_view(rep.out).substr(digits, nl - digits));
  rep.out.resize(m.out_at);
  rep.err.resize(m.err_at);
  return with_summaries();
}

Result<ExecResult> DriverWire::RunCode(std::string_view header, std::string_view code, std::string_view b,
                                       uint64_t timeout_ms, uint64_t output_cap, const RunCallbacks* live,
                                       const std::atomic<bool>* preempt, const std::string& what) {
  ExecResult r;
  r.execution_id = NewExecutionId();
  r.backend = session_.backend().name();
  BoxVerdict before = session_.box().Verdict();
  auto start = Clock::now();
  auto since = [&start] {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
  };
  LSB_ASSIGN_OR_RETURN(DriverReply rep, Send(header, code, b, timeout_ms, output_cap, live, preempt));
  r.duration_ms = since();
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
    r.alerts.push_back(RestartAlert("the " + what + " was killed at the timeout; the next execution starts a fresh one "
                                    "(variables are lost, files are kept)", r.duration_ms));
  } else if (rep.over_cap) {
    r.status = ExecStatus::kOutputLimit;
    r.exit_code = 137;
    r.signal = 9;
    r.truncated = true;
    r.alerts.push_back(RestartAlert("the " + what + " was killed at the output cap; the next execution starts a "
                                    "fresh one", r.duration_ms));
  } else if (rep.run_ended) {
    ApplyExitReport(rep.exit, r);
    r.duration_ms = since();
    r.cpu_ms = 0;  // the report covers the driver's whole life: use the box's delta instead
    r.alerts.push_back(RestartAlert("the " + what + " ended (" + std::string(protocol::Name(rep.exit.status)) +
                                        ", exit " + std::to_string(rep.exit.exit_code) +
                                        "); the next execution starts a fresh one",
                                    r.duration_ms));
  } else {
    r.exit_code = rep.status;
    r.status = rep.status == 0 ? ExecStatus::kOk : ExecStatus::kError;
  }
  ApplyVerdict(before, session_.box().Verdict(), session_.policy(), r);
  return r;
}

}  // namespace lsb::sched
