// A session: one box kept open for a sequence of executions (DESIGN §5). Files in its tmpfs
// survive between executions because it is the same box; for language python a persistent
// interpreter (python_driver.h) keeps variables too, for bash, sh and node a persistent shell or
// node context (repl_driver.h) keeps variables, functions, the working directory and exports. Idle
// timeout and max lifetime are enforced by the SessionManager's reaper.
//
// Concurrency: one operation at a time. Callers take TryUse(); a session already in use answers
// "busy" (HTTP 409) instead of queueing behind a long run. `info_mu_` guards the bookkeeping read
// by listings while an operation runs.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/result.h"
#include "policy/policy.h"
#include "runtime/backend.h"
#include "runtime/box_files.h"
#include "runtime/runner.h"
#include "scheduler/box_registry.h"
#include "scheduler/changes/change_set.h"
#include "scheduler/driver/python_driver.h"
#include "scheduler/driver/repl_driver.h"
#include "scheduler/driver/rich_outputs.h"
#include "scheduler/workspace_io.h"

namespace lsb::sched {

struct SessionConfig {
  std::string language;             // "" = the policy's default language
  uint64_t idle_timeout_ms = 300000;
  uint64_t max_lifetime_ms = 3600000;
  std::string owner;                // who created it (server/owner.h); "" = the daemon's one user
  // Python run once when the interpreter starts (the policy's session.setup, then the request's):
  // a reset comes back to the state after it without running it again. Python sessions only.
  std::string setup;
  // Change sets for the session (GET /v1/sessions/{id}/changes): a manifest of the writable dirs
  // is taken when the box opens; an upload updates it for the paths it wrote (AbsorbUpload).
  bool changes = false;
};

// The most snapshots one session takes (each keeps one more zygote process in its box).
inline constexpr uint64_t kMaxSessionSnapshots = 16;
// How long a reset waits for a running operation it preempted to end before it kills the box.
inline constexpr std::chrono::milliseconds kPreemptWait{3000};
// How long an operation waits for the session before it answers "busy" (Session::Use).
inline constexpr std::chrono::milliseconds kUseWait{100};

// A file watch's events (GET /v1/sessions/{id}/fs/watch): the box's sink fills it, the stream's
// handler takes from it. Bounded: past kMaxQueued the oldest are dropped and counted.
class WatchFeed {
 public:
  static constexpr size_t kMaxQueued = 4096;
  void Push(protocol::FileEvent e);
  // What arrived since the last call, and how many were dropped meanwhile.
  std::vector<protocol::FileEvent> Take(uint64_t* dropped);
  // The watch is over (replaced by another, or its box replaced): a last "end" event says why.
  void End(const std::string& why);
  bool ended() const;

 private:
  mutable std::mutex mu_;
  std::deque<protocol::FileEvent> events_;
  uint64_t dropped_ = 0;
  bool ended_ = false;
};

// What a reset did (docs/api.md "Reset and snapshot").
struct ResetReport {
  std::string mode;        // "interpreter": the zygote forked a fresh episode; "new_box": a new box
  std::string why;         // for new_box: why the fast path could not be taken
  bool snapshot_lost = false;  // new_box after a snapshot: back to the creation state instead
  bool preempted = false;      // an operation was running: it was ended first (an execute: "reset")
  uint64_t duration_ms = 0;
  double duration_us = 0;
};

struct SessionInfo {
  std::string id;
  std::string policy;
  std::string language;
  std::chrono::system_clock::time_point created_at, last_used_at, expires_at;
  uint64_t executions = 0;
  std::string state;  // "ready" | "busy" | "closed"
  std::optional<uint64_t> setup_ms;  // how long the setup took when the interpreter last started
  uint64_t resets = 0, snapshots = 0;
  bool warm = false;  // the box came set up from the warm session pool (session_pool.h)
};

class Session {
 public:
  static Result<std::unique_ptr<Session>> Open(Backend& backend, BoxRegistry& registry,
                                               const Policy& policy, SessionConfig config, std::string id);
  ~Session();

  // The exclusive right to operate, held for one operation; `owned()` is false when another
  // operation runs.
  class Use {
   public:
    // Waits kUseWait at most: a file watch's drain (PollWatch) holds the session that long, and
    // must not turn an execute into a conflict.
    explicit Use(Session& s) : s_(s), lock_(s.use_mu_, kUseWait) { if (owned()) s_.SetBusy(true); }
    // Only when free now (a watch's drain: it never waits on an operation).
    struct IfFree {};
    Use(Session& s, IfFree) : s_(s), lock_(s.use_mu_, std::try_to_lock) {}
    // A reset's: always owned. A running operation is preempted (an execute ends as "reset"), and
    // the box is killed when it has not ended within kPreemptWait; `*preempted` says whether one ran.
    struct Preempting {};
    Use(Session& s, Preempting, bool* preempted);
    ~Use() { if (owned()) s_.SetBusy(false); }
    bool owned() const { return lock_.owns_lock(); }

   private:
    Session& s_;
    std::unique_lock<std::timed_mutex> lock_;
  };

  // Whether an execution in `language` ("" = the session's) runs in the persistent interpreter,
  // which keeps the environment it started with (a request's env cannot reach it).
  bool RunsInInterpreter(const std::string& language) const {
    return config_.language == "python" && (language.empty() || language == "python");
  }
  bool RunsInInterpreter(const ExecRequest& req) const { return req.command.empty() && RunsInInterpreter(req.language); }
  // Whether an execution runs in the session's persistent bash, sh or node (repl_driver.h): code in
  // the session's language, or (a shell session) a command without env, run through the shell.
  bool RunsInRepl(const ExecRequest& req) const;

  // These need a Use that owns the session.
  // req.collect: the matching files are returned after the run (workspace_io.h).
  // `cb` gets the output as it comes (a program run by init, or the interpreter's lines).
  Result<ExecResult> Execute(const ExecRequest& req, const CollectLimits& collect = {}, const OutputsLimits& outputs = {},
                             const RunCallbacks& cb = {});
  // A named globals of the interpreter (PythonDriver::Namespace); an interpreter restart empties
  // them all. Python sessions only.
  Result<FileOpResult> Namespace(const std::string& name, NamespaceOp op);
  // Files in the box, by init's file worker (runtime/box_files.h), whatever the language: the
  // interpreter, when one runs, stays alive meanwhile. The reply says how the op went.
  Result<FileCall> PutFile(const std::string& path, const std::string& data);
  Result<FileCall> GetFile(const std::string& path, uint64_t max_bytes);
  // Any other file op (list, stat, mkdir, remove, rename: the v1 file-system API); paths checked
  // by the caller (sandbox_path.h).
  Result<FileCall> Files(const protocol::FileOp& op, std::string_view input = {});
  // A watch of `spec` from now on (protocol/file_ops.h kWatch): one per session, a new one ends the
  // last one's feed. Unwatch stops it if `feed` is still the session's watch.
  Result<std::shared_ptr<WatchFeed>> Watch(const protocol::WatchSpec& spec);
  void Unwatch(const std::shared_ptr<WatchFeed>& feed);
  // While nothing runs: reads the box's stream for up to `within` so the watch's events arrive (a
  // running execute's reader hands them over itself). Needs a Use (IfFree).
  Status PollWatch(std::chrono::milliseconds within);
  // An archive checked on the host (archive_in.h) written under its target.
  Status PutArchive(const UnpackedArchive& archive);
  Result<TreeArchive> GetTree(const std::string& dir, const TreeLimits& limits);
  // What changed under `dir` ("" = every writable dir) since the box opened (uploads are not changes),
  // as an execute's "changes" object (change_set.h). kInvalidArgument without config.changes.
  // Entries with a path component matching one of `ignore` (DefaultChangesIgnore) are left out.
  Result<nlohmann::json> Changes(const std::string& dir, const std::vector<std::string>& ignore = DefaultChangesIgnore());
  // Back to the state after creation (or the last Snapshot): a fresh interpreter forked from the
  // zygote with the files put back and every process of the episode gone; a new box when that
  // cannot be done (a plain-run session, an interpreter that died since, a failed restore).
  // A running execute is ended first by Use(Preempting) (docs/api.md "Reset and snapshot").
  Result<ResetReport> Reset();
  // The interpreter's state and the writable paths' files now become what Reset returns to. An
  // error with code kInvalidArgument when the session cannot take one (not python, at the limit).
  Status Snapshot();
  // The setup's result when the interpreter started (Open's caller reports a failed one).
  const std::optional<ExecResult>& setup_result() const { return setup_result_; }

  SessionInfo Info() const;
  const Policy& policy() const { return policy_; }
  const std::string& id() const { return id_; }
  const std::string& owner() const { return config_.owner; }
  const SessionConfig& config() const { return config_; }  // what a fork's children open with
  // A new end: the session expires `from_now_ms` from now, idle or not (the E2B front door's
  // sandbox timeout). The interpreter keeps the wall limit it started with until it restarts.
  void SetDeadline(uint64_t from_now_ms);
  // True when idle past the idle timeout or past the max lifetime.
  bool Expired(std::chrono::steady_clock::time_point now) const;
  // Ends the session: a running operation is killed, the box destroyed. Idempotent.
  void Close();

 private:
  Session(Backend& backend, BoxRegistry& registry, const Policy& policy, SessionConfig config, std::string id);
  Status OpenBox();
  // Starts the interpreter (a zygote over the policy's tmpfs paths, after the setup).
  Status StartDriver();
  // Takes a warm box with its interpreter from the session pool; false on a miss.
  bool AdoptWarm();
  Result<PythonDriver*> Driver();
  // The session's box while it can serve, or the error a caller returns.
  Result<BoxSession*> LiveBox();
  // An execute in the persistent bash, sh or node (RunsInRepl), started when not running.
  Result<ExecResult> ExecuteInRepl(const ExecRequest& req, const RunCallbacks& cb);
  // Ends the persistent bash/sh/node (init runs one program at a time); the next execute in it
  // starts a fresh one and says `why` in an alert.
  void StopRepl(const std::string& why);
  uint64_t RemainingLifetimeMs() const;
  void Touch(bool executed);
  void SetBusy(bool busy);

  Backend& backend_;
  BoxRegistry& registry_;
  const Policy policy_;
  const SessionConfig config_;
  const std::string id_;
  const std::chrono::system_clock::time_point created_wall_;
  const std::chrono::steady_clock::time_point created_;

  // Asks the running operation to end (Use(Preempting)): an interpreter execute's episode is
  // ended by its zygote, a plain run's box is killed. Called without the Use.
  void Preempt();

  std::timed_mutex use_mu_;  // held for the whole of one operation
  std::atomic<bool> preempt_{false};    // a reset waits: the running execute ends as "reset"
  // A program run by init or a persistent bash/sh/node (not the zygote) is running.
  std::atomic<bool> plain_run_{false};
  // An Execute holds the Use: the one operation a reset may kill the box under (it never replaces
  // box_, as a reset's new box or Close do).
  std::atomic<bool> executing_{false};
  std::unique_ptr<BoxSession> box_;
  std::unique_ptr<BoxRegistry::Lease> lease_;
  std::unique_ptr<PythonDriver> driver_;  // language python: the persistent interpreter
  // bash/sh/node: the persistent shell or context, started by the first execute (declared after
  // box_: it runs on it, and goes first). Why the last one was stopped, for the next execute.
  const bool repl_supported_;
  std::unique_ptr<ReplDriver> repl_;
  std::string repl_lost_;
  // The zygote holds what Reset returns to: false once the interpreter was restarted mid-session
  // (its zygote took the files as they were then), true again after a new box or a Snapshot.
  bool baseline_ = false;
  // config.changes: the manifest the session's change sets compare with (or why there is none).
  std::optional<Manifest> changes_base_;
  std::shared_ptr<WatchFeed> watch_;  // the session's file watch, if any
  std::string changes_error_;
  void TakeChangesBase();
  // After an upload of `paths`: their entries (and the directories made for them) in the baseline
  // become what the box holds now; every other entry keeps its baseline, so what programs
  // changed before the upload is still reported.
  void AbsorbUpload(const std::vector<std::string>& paths);
  std::optional<ExecResult> setup_result_;

  mutable std::mutex info_mu_;
  std::chrono::steady_clock::time_point last_used_;
  std::chrono::system_clock::time_point last_used_wall_;
  uint64_t executions_ = 0;
  bool closed_ = false;
  bool busy_ = false;
  uint64_t idle_timeout_ms_, max_lifetime_ms_;  // from config_, until SetDeadline
  uint64_t resets_ = 0, snapshots_ = 0;
  std::optional<uint64_t> setup_ms_;
  bool warm_ = false;
};

}  // namespace lsb::sched
