// Paused sessions on disk (docs/api.md "Pause and resume"): what POST .../pause wrote so that
// POST .../resume, in this daemon or a later one with the same state directory, can rebuild the
// session in a new box. One directory per session under `dir` (mode 0700): meta.json (owner id,
// policy name, language, setup, limits, the carried names) and one tar per writable path (the
// state file among them, session_fork.h). Written to a temporary name and renamed, so a record is
// whole or absent. The id is checked (ses- + 16 hex digits [+ -node]) before it becomes a path.
//
// Bounded (docs/api.md, docs/security.md issue 32 class 4), so no token can hold the pause of
// others: at most `max_records` paused sessions in all and `max_per_owner` of one owner; a record
// at most `max_record_bytes` and all of them `max_total_bytes` on disk; a record older than `ttl`
// is gone (removed at the next look at the directory, records a restart finds included). What is
// not kept: every process (the
// interpreter too: a resumed session has a fresh one with the carried globals), what does not
// pickle, and the snapshot a reset returned to (a resumed session resets to its setup).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "scheduler/session/session.h"
#include "scheduler/session/session_fork.h"

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

struct PausedLimits {
  size_t max_records = 64;                   // serve --max-paused
  size_t max_per_owner = 16;                 // --max-paused-per-owner (default: a quarter of the above)
  uint64_t ttl_s = 24 * 3600;                // --paused-ttl
  uint64_t max_record_bytes = 128ull << 20;  // --max-paused-bytes: one record's files
  uint64_t max_total_bytes = 2ull << 30;     // --max-paused-total-bytes: all records' files
};

// Why a Save was refused at a bound, and when to try again (0: not by waiting).
struct PausedRefusal {
  uint64_t retry_after_s = 0;
};

class PausedSessions {
 public:
  PausedSessions(std::string dir, PausedLimits limits) : dir_(std::move(dir)), limits_(limits) {}

  const std::string& dir() const { return dir_; }
  const PausedLimits& limits() const { return limits_; }
  // kResourceExhausted at a count or total bound (`refusal` says when the owner's oldest or the
  // daemon's oldest record expires), kInvalidArgument for a record over max_record_bytes or an id
  // that is not a session id.
  Status Save(const PausedRecord& r, PausedRefusal* refusal = nullptr);
  // The record of `id` if it is `owner`'s and not expired (another owner's is absent, like one
  // never paused).
  Result<std::optional<PausedRecord>> Load(const std::string& id, const std::string& owner) const;
  // The bytes on disk of `owner`'s record `id` (0: none), to reserve memory before Load reads it.
  uint64_t RecordBytes(const std::string& id, const std::string& owner) const;
  void Remove(const std::string& id);
  // DELETE by its owner: false when there is no such record of `owner`'s.
  bool Remove(const std::string& id, const std::string& owner);
  // Removes every expired record (at start, and before each Save); returns how many went.
  size_t Sweep() const;
  size_t count() const;

 private:
  struct Entry {
    std::string id, owner;
    int64_t paused_at_unix = 0;
    uint64_t bytes = 0;
  };
  // Every whole record, expired ones removed on the way.
  std::vector<Entry> Scan() const;

  const std::string dir_;
  const PausedLimits limits_;
  mutable std::mutex mu_;  // Save's bound checks and rename together
};

// True for "ses-" + 16 lowercase hex digits, optionally "-<node>" (SessionManager::NewId's form).
bool IsSessionId(const std::string& id);

}  // namespace lsb::sched
