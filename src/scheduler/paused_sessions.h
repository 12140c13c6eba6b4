// Paused sessions on disk (docs/api.md "Pause and resume"): what POST .../pause wrote so that
// POST .../resume, in this daemon or a later one with the same state directory, can rebuild the
// session in a new box. One directory per session under `dir` (mode 0700): meta.json (owner id,
// policy name, language, setup, limits, the carried names) and one tar per writable path (the
// state file among them, session_fork.h). Written to a temporary name and renamed, so a record is
// whole or absent. The id is checked (ses- + 16 hex digits [+ -node]) before it becomes a path.
//
// Bounded (docs/api.md): at most `max_records` paused sessions; each record is bounded by the
// tree limits of its writable paths (TreeLimits). What is not kept: every process (the
// interpreter too: a resumed session has a fresh one with the carried globals), what does not
// pickle, and the snapshot a reset returned to (a resumed session resets to its setup).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "scheduler/session.h"
#include "scheduler/session_fork.h"

namespace lsb::sched {

struct PausedRecord {
  std::string id, owner, policy, language, setup;
  uint64_t idle_timeout_ms = 0, max_lifetime_ms = 0;
  std::string state_path;                 // the state file among the trees
  std::vector<std::string> values, modules, skipped;
  std::vector<std::string> tars;          // one per writable path of the policy, in its order
  std::string paused_at;                  // RFC 3339
  uint64_t bytes = 0;                     // on disk
};

class PausedSessions {
 public:
  PausedSessions(std::string dir, size_t max_records) : dir_(std::move(dir)), max_records_(max_records) {}

  const std::string& dir() const { return dir_; }
  size_t max_records() const { return max_records_; }
  // kResourceExhausted at max_records; kInvalidArgument for an id that is not a session id.
  Status Save(const PausedRecord& r);
  // The record of `id` if it is `owner`'s (another owner's is absent, like one never paused).
  Result<std::optional<PausedRecord>> Load(const std::string& id, const std::string& owner) const;
  void Remove(const std::string& id);
  size_t count() const;

 private:
  const std::string dir_;
  const size_t max_records_;
  mutable std::mutex mu_;  // Save's count check and rename together
};

// True for "ses-" + 16 lowercase hex digits, optionally "-<node>" (SessionManager::NewId's form).
bool IsSessionId(const std::string& id);

}  // namespace lsb::sched
