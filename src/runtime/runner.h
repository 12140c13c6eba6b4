// Drives executions over the init protocol (docs/protocol.md) on any Backend:
//   Open:  Check -> Start -> kSetup -> wait kReady | kError
//   Run:   kRun -> kCode -> kStdin... -> kStdinEof -> pump stdout/stderr/events with a deadline
//          -> kExit -> refine with the box's verdict (OOM, pids limit, cgroup peak)
//   Close: kShutdown, destroy the box.
// A BoxSession serves several runs (sessions); RunOnce() is the one-shot lifecycle on top.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "policy/policy.h"
#include "protocol/file_ops.h"
#include "protocol/messages.h"
#include "runtime/backend.h"
#include "runtime/exec_result.h"
#include "runtime/frame_channel.h"

namespace lsb {

struct ExecRequest {
  std::string code;
  std::string language;                      // "" = the policy's default_language
  std::optional<std::string> stdin_data;     // nullopt: the program's stdin is empty
  std::map<std::string, std::string> env;    // added to / overriding the policy's env
  std::optional<uint64_t> timeout_ms;        // may only lower the policy's timeout
  std::string execution_id;                  // "" = a fresh one (the daemon names it in advance)
  // Instead of `code`: a command line run as it is (argv[0] a bare name found on the run's PATH
  // in the box, or an absolute path), under the same commands allowlist as an interpreter.
  std::vector<std::string> command;
  // Glob patterns of files returned after the program ends (scheduler/workspace_io.h).
  std::vector<std::string> collect;
  // A change set after the run (scheduler/changes/change_set.h): nullopt none, "" every writable path,
  // else that directory (checked with CheckSandboxDir).
  std::optional<std::string> changes;
  // Rich outputs (scheduler/driver/rich_outputs.h): false turns them off for this run.
  bool outputs = true;
  // Arguments put before the language's "{file}" (the one-shot rich-outputs prelude: "-c" CODE
  // ...); only for a language whose command ends in "{file}", never with `command`.
  std::vector<std::string> prelude_args;
  // A session's interpreter only: the named globals the code runs in ("" = the session's own;
  // PythonDriver::Namespace). The E2B front door's code contexts.
  std::string context;
};

// Whether `policy` lets `command` start: argv[0] absolute and in commands.allow (not in deny), or
// a bare name some allowed command has as its base name (init resolves it on PATH and checks the
// file it found). The error (kPermissionDenied for the allowlist) names what to change.
Status CheckCommand(const Policy& policy, const std::vector<std::string>& command);

// Live output and events, called on the caller's thread as frames arrive.
struct RunCallbacks {
  std::function<void(std::string_view)> on_stdout;
  std::function<void(std::string_view)> on_stderr;
  std::function<void(const protocol::Event&)> on_event;
  // Live CPU/RAM samples of the box every `usage_interval_ms` while the program runs (monitoring).
  std::function<void(const BoxUsage&)> on_usage;
  uint64_t usage_interval_ms = 1000;
};

struct SessionOptions {
  uint64_t setup_timeout_ms = 15000;  // kSetup -> kReady
  // false: Open() returns once kSetup is queued, and the first Run() sends its program right
  // behind it, taking kReady (or init's refusal) on the way: one host<->init round trip less for
  // a box opened to run once. Init still finishes the whole setup, and refuses on any failure,
  // before it reads kRun, so nothing runs earlier or under less.
  bool await_ready = true;
  // Past the run's timeout, how long init may take to report before the host kills the box.
  uint64_t grace_ms = 5000;
  // Optional: when this fd becomes readable (a signal handler's pipe, a closed client), the
  // current step stops, the box is killed and the call returns Error::Cancelled() (IsCancelled()).
  int cancel_fd = -1;
  // Who the box is for (Backend::Start): a fast path shares nothing of it with another owner's boxes.
  BoxOwner owner;
};

// The bounds of a request's `command` (docs/api.md): arguments, and their bytes with a NUL each.
inline constexpr size_t kMaxCommandArgs = 4096;
inline constexpr size_t kMaxCommandBytes = 256u << 10;

// Pure: the RunSpec for `req` under `policy` (language command, env, workdir, limits).
Result<protocol::RunSpec> BuildRunSpec(const Policy& policy, const ExecRequest& req);

// Pure: `report` (from init) refined with what the outer box saw between `before` and `after`.
// Sets status/exit fields, adds alerts "oom_kill" and "pids_limit", prefers the cgroup's peak.
void ApplyExitReport(const protocol::ExitReport& report, ExecResult& result);
void ApplyVerdict(const BoxVerdict& before, const BoxVerdict& after, const Policy& policy,
                  ExecResult& result);
// Pure: the policy's monitoring.alerts applied to one alert (its severity); false when the policy
// turned the rule off (the alert is then not reported; what the sandbox refused stays refused).
bool ApplyAlertRule(const Policy& policy, protocol::Event& alert);

// Reads init's answer to kSetup from `channel`: its kReady, or its refusal (kError) as "the sandbox
// refused to start (...)". When the stream ends or `timeout` passes first, the error says which,
// with `box`'s diagnostics (init's stderr). A cancelled channel is Error::Cancelled(). Frames before
// the answer (an early event) are not a run's and are skipped. Shared by BoxSession and the Docker
// warm pool, which does the handshake ahead of the request.
Result<protocol::InitReady> AwaitInitReady(FrameChannel& channel, Box& box, std::chrono::milliseconds timeout);
// `what`, then the tail of `box`'s diagnostics (init's stderr) when it said anything.
std::string WithDiagnostics(std::string what, Box& box);

// Appends to stdout/stderr while stdout+stderr stay within `cap` bytes; reports the part kept.
class OutputBudget {
 public:
  explicit OutputBudget(uint64_t cap) : cap_(cap) {}
  // Returns how many bytes of `chunk` fit (and were appended to `dst`); sets *truncated past it.
  size_t Append(std::string& dst, std::string_view chunk, bool* truncated);
  uint64_t used() const { return used_; }

 private:
  uint64_t cap_;
  uint64_t used_ = 0;
};

class BoxSession {
 public:
  static Result<std::unique_ptr<BoxSession>> Open(Backend& backend, const Policy& policy,
                                                  SessionOptions opts = {});
  // With `setup` = backend.SetupFor(policy) already made (a pool keys the box by its BoxShape).
  static Result<std::unique_ptr<BoxSession>> Open(Backend& backend, const Policy& policy,
                                                  protocol::BoxSetup setup, SessionOptions opts);
  ~BoxSession();
  BoxSession(const BoxSession&) = delete;
  BoxSession& operator=(const BoxSession&) = delete;

  // One execution. An Error means the sandbox could not run it (setup, protocol, init died);
  // everything the program did, including timeouts and OOM, is an ExecResult.
  Result<ExecResult> Run(const ExecRequest& req, const RunCallbacks& cb = {});

  // False once the box was killed (timeout) or the stream broke: open a new session.
  bool usable() const { return usable_; }
  Box& box() { return *box_; }
  const protocol::InitReady& ready() const { return ready_; }
  // Asks init to shut down and destroys the box. Idempotent; the destructor calls it.
  void Close();

  // Hooks for streaming runs built on top of a session (runtime/interactive_run.h): the stream to
  // init, the session's policy and backend, and a way to retire the box once that run broke it.
  FrameChannel& channel() { return *channel_; }
  const Policy& policy() const { return policy_; }
  Backend& backend() { return backend_; }
  void MarkUnusable() { usable_ = false; }
  // Where the box's file events go (protocol/file_ops.h kWatch): every reader of the channel (a
  // run, an interactive run, a file op, an idle drain) hands each kFileEvent frame to it. Set by
  // the owner before it asks for a watch; called on the reader's thread.
  void SetFileEventSink(std::function<void(const protocol::FileEvent&)> sink) { file_events_ = std::move(sink); }
  void DeliverFileEvent(const protocol::Frame& frame);
  // For those runs: a box opened without awaiting kReady reads it now (the run's frames may be
  // queued already: they are written meanwhile). An error (init refused the setup) retires it.
  Status EnsureReady();
  // A pooled box (scheduler/one_shot_pool.h) handed to a request: the runs of this session take
  // their limits (timeout, output, languages...) from the request's tightened `policy` from now
  // on. Only for a policy with the box's BoxShape: the pool checks that.
  void UseRunPolicy(const Policy& policy) { policy_ = policy; }

 private:
  BoxSession(Backend& backend, const Policy& policy, SessionOptions opts)
      : backend_(backend), policy_(policy), opts_(opts) {}
  Error Died(const std::string& what);
  Error Cancelled();
  // Reads frames until init's kReady (kept in ready_) or its refusal.
  Status AwaitReady();
  // The steps of Run (runner.cc): read one frame or sample (false: the run is over), the stream's
  // end (the box's verdict or an error), the host's own timeout, one frame, the result.
  struct RunState;
  Result<bool> Step(RunState& st, const RunCallbacks& cb);
  Status StreamEnded(RunState& st, const Error& error);
  void HostTimeout(RunState& st);
  Status OnFrame(RunState& st, const protocol::Frame& frame, const RunCallbacks& cb);
  ExecResult Conclude(RunState& st, const RunCallbacks& cb);
  // The box's host-side events (Box::TakeHostEvents: the egress proxy), as init's events are taken.
  void TakeHostEvents(RunState& st, const RunCallbacks& cb, bool run_ended);
  void AdmitEvent(RunState& st, protocol::Event ev, const RunCallbacks& cb);

  Backend& backend_;
  Policy policy_;
  SessionOptions opts_;
  std::unique_ptr<Box> box_;
  std::unique_ptr<FrameChannel> channel_;
  protocol::InitReady ready_;
  bool ready_pending_ = false;  // kSetup sent, kReady not read yet (await_ready = false)
  std::function<void(const protocol::FileEvent&)> file_events_;
  bool usable_ = false;
};

// The one-shot lifecycle: a fresh box for one execution, destroyed after.
Result<ExecResult> RunOnce(Backend& backend, const Policy& policy, const ExecRequest& req,
                           const RunCallbacks& cb = {}, SessionOptions opts = {});

}  // namespace lsb
