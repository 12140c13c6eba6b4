// A session: one box kept open for a sequence of executions (DESIGN §5). Files in its tmpfs
// survive between executions because it is the same box; for language python a persistent
// interpreter (python_driver.h) keeps variables too. Idle timeout and max lifetime are enforced by
// the SessionManager's reaper.
//
// Concurrency: one operation at a time. Callers take TryUse(); a session already in use answers
// "busy" (HTTP 409) instead of queueing behind a long run. `info_mu_` guards the bookkeeping read
// by listings while an operation runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/result.h"
#include "policy/policy.h"
#include "runtime/backend.h"
#include "runtime/runner.h"
#include "scheduler/box_registry.h"
#include "scheduler/python_driver.h"
#include "scheduler/workspace_io.h"

namespace lsb::sched {

struct SessionConfig {
  std::string language;             // "" = the policy's default language
  uint64_t idle_timeout_ms = 300000;
  uint64_t max_lifetime_ms = 3600000;
  std::string owner;                // who created it (server/owner.h); "" = the daemon's one user
};

struct SessionInfo {
  std::string id;
  std::string policy;
  std::string language;
  std::chrono::system_clock::time_point created_at, last_used_at, expires_at;
  uint64_t executions = 0;
  std::string state;  // "ready" | "busy" | "closed"
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
    explicit Use(Session& s) : s_(s), lock_(s.use_mu_, std::try_to_lock) { if (owned()) s_.SetBusy(true); }
    ~Use() { if (owned()) s_.SetBusy(false); }
    bool owned() const { return lock_.owns_lock(); }

   private:
    Session& s_;
    std::unique_lock<std::mutex> lock_;
  };

  // Whether an execution in `language` ("" = the session's) runs in the persistent interpreter,
  // which keeps the environment it started with (a request's env cannot reach it).
  bool RunsInInterpreter(const std::string& language) const {
    return config_.language == "python" && (language.empty() || language == "python");
  }
  bool RunsInInterpreter(const ExecRequest& req) const { return req.command.empty() && RunsInInterpreter(req.language); }

  // These need a Use that owns the session.
  // req.collect: the matching files are returned after the run (workspace_io.h).
  Result<ExecResult> Execute(const ExecRequest& req, const CollectLimits& collect = {});
  Result<FileOpResult> PutFile(const std::string& path, const std::string& data);
  Result<FileOpResult> GetFile(const std::string& path, uint64_t max_bytes);
  // An archive checked on the host (archive_in.h) written under its target.
  Status PutArchive(const UnpackedArchive& archive);
  Result<TreeArchive> GetTree(const std::string& dir, const TreeLimits& limits);

  SessionInfo Info() const;
  const Policy& policy() const { return policy_; }
  const std::string& id() const { return id_; }
  const std::string& owner() const { return config_.owner; }
  // True when idle past the idle timeout or past the max lifetime.
  bool Expired(std::chrono::steady_clock::time_point now) const;
  // Ends the session: a running operation is killed, the box destroyed. Idempotent.
  void Close();

 private:
  Session(const Policy& policy, SessionConfig config, std::string id);
  Result<PythonDriver*> Driver();
  uint64_t RemainingLifetimeMs() const;
  void Touch(bool executed);
  void SetBusy(bool busy);

  const Policy policy_;
  const SessionConfig config_;
  const std::string id_;
  const std::chrono::system_clock::time_point created_wall_;
  const std::chrono::steady_clock::time_point created_;

  std::mutex use_mu_;  // held for the whole of one operation
  std::unique_ptr<BoxSession> box_;
  std::unique_ptr<BoxRegistry::Lease> lease_;
  std::unique_ptr<PythonDriver> driver_;  // language python: the persistent interpreter

  mutable std::mutex info_mu_;
  std::chrono::steady_clock::time_point last_used_;
  std::chrono::system_clock::time_point last_used_wall_;
  uint64_t executions_ = 0;
  bool closed_ = false;
  bool busy_ = false;
};

}  // namespace lsb::sched
