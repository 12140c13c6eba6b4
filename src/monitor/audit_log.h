// The audit log: JSON lines, one record per execution and one per alert, appended to one file and
// rotated by size (FILE -> FILE.1 -> ... -> FILE.<keep>, the oldest dropped).
//
// Durability: Append() returns only once its line is written and fdatasync()ed, so a record the
// daemon acknowledged (the HTTP answer is sent after Append) survives a crash of the daemon or of
// the machine. Lines are written whole with one write() of complete lines; after a crash the file
// ends at a line boundary, except that a write cut by power loss may leave one partial last line,
// which readers skip (they only take lines that end in '\n' and parse).
//
// Concurrency: group commit. Callers append their line to `pending_` under `mu_`; one of them (the
// "leader", `flushing_`) writes everything pending and syncs it outside the lock while the others
// wait on `cv_` until `durable_` covers their sequence number. One fdatasync serves many records.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "base/unique_fd.h"

namespace lsb::monitor {

struct AuditLogOptions {
  std::string path;
  uint64_t max_bytes = 64ull << 20;  // rotate when the file would grow past this
  int keep = 5;                      // rotated files kept
  bool sync = true;                  // fdatasync before Append returns
};

// Where the daemon writes its audit log when --audit-log is not given, and where `llm-sandbox logs`
// reads it (docs/monitoring.md "Audit log"): $LLM_SANDBOX_AUDIT_LOG, else audit.jsonl in
// DefaultStateDir() (base/state_dir.h: $LLM_SANDBOX_STATE_DIR; /var/lib/llm-sandbox for root;
// $XDG_STATE_HOME/llm-sandbox; $HOME/.local/state/llm-sandbox). "" when none applies (no HOME).
std::string DefaultAuditLogPath();
// The values of --audit-log that turn the audit log off.
bool IsAuditLogOff(const std::string& value);
// Creates the directories above `path` (mode 0750) when missing.
Status MakeParentDirs(const std::string& path);

class AuditLog {
 public:
  static Result<std::unique_ptr<AuditLog>> Open(AuditLogOptions opts);

  // Appends one record (a line); returns once it is durable (see above).
  Status Append(const nlohmann::json& record) { return AppendAll({record}); }
  // Appends several records together (one write, one sync): an execution and its alerts.
  Status AppendAll(const std::vector<nlohmann::json>& records);
  const std::string& path() const { return opts_.path; }
  uint64_t records() const;
  uint64_t errors() const;

 private:
  explicit AuditLog(AuditLogOptions opts) : opts_(std::move(opts)) {}
  Status WriteAndSync(const std::string& lines);  // leader only
  Status Rotate();                                // leader only

  AuditLogOptions opts_;
  UniqueFd fd_;          // written by the leader only
  uint64_t size_ = 0;    // leader only

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string pending_;
  uint64_t appended_ = 0;  // sequence number of the last line in pending_ or written
  uint64_t durable_ = 0;   // every line up to this one is synced
  bool flushing_ = false;
  Status last_status_ = OkStatus();
  uint64_t errors_ = 0;
};

}  // namespace lsb::monitor
