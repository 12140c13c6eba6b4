// The results of asynchronous executions and batches (POST /v1/execute or /v1/batch with
// "async": true, `Prefer: respond-async` or ?async=true; docs/api.md "Asynchronous executions"):
// the id is answered at once (202), the result is kept here until fetched with
// GET /v1/executions/{id}[?wait=SECONDS], as often as the caller likes.
//
// Bounded (DESIGN §11 "Defaults written down"): at most `max_entries` executions (pending ones
// included; a full store of pending ones refuses new work with 429) and `max_bytes` of kept result
// JSON in all; the oldest finished results go first, and a finished result older than `keep_for`
// goes too. A result over `max_result_bytes` is cut the way a batch entry is (json_budget.h:
// "response_truncated": true). A long-poll waits at most kMaxWait.
// Ownership (owner.h): each entry belongs to the token that submitted it; another owner's Find
// answers nothing, the same as an id that never existed.
// Concurrency: `mu_` guards everything; the executor's workers call Start/Finish, requests Find.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lsb::server {

// An asynchronous execution's "state" in its view (docs/api.md), in the order it passes them.
enum class ExecutionState { kQueued, kRunning, kFinished };
const char* ExecutionStateName(ExecutionState s);  // "queued" | "running" | "finished"
std::optional<ExecutionState> ParseExecutionState(std::string_view name);

struct ExecutionStoreLimits {
  size_t max_entries = 1000;
  uint64_t max_bytes = 64ull << 20;
  uint64_t max_result_bytes = 16ull << 20;
  std::chrono::seconds keep_for{3600};  // a finished result is kept this long (--async-keep-for)
};

// Execute or batch: what the entry's "kind" says, and how its result is bounded when it finishes.
enum class ExecutionKind { kExecute, kBatch };

// The longest GET /v1/executions/{id}?wait= (seconds): a long-poll holds a connection thread.
inline constexpr double kMaxExecutionWaitSeconds = 60;

class ExecutionStore {
 public:
  explicit ExecutionStore(ExecutionStoreLimits limits = {}) : limits_(limits) {}

  // Records a queued execution; false when the store is full of pending ones (nothing to evict).
  bool Add(const std::string& id, const std::string& owner, const std::string& policy,
           ExecutionKind kind = ExecutionKind::kExecute);
  void Start(const std::string& id);
  // `body` is the result (ExecResult JSON) or {"error": {...}}; it replaces the pending entry.
  void Finish(const std::string& id, nlohmann::json body);
  // Drops a pending entry whose work was never admitted.
  void Forget(const std::string& id);
  // The entry's view (docs/api.md), or nullopt: unknown, evicted, or another owner's.
  std::optional<nlohmann::json> Find(const std::string& id, const std::string& owner) const;
  // Find, but while the entry is pending waits up to `wait` for it to finish (or for Close).
  std::optional<nlohmann::json> Wait(const std::string& id, const std::string& owner,
                                     std::chrono::milliseconds wait) const;
  // Wakes every waiter now and makes later waits answer at once (the daemon is stopping).
  void Close();

  size_t size() const;
  uint64_t bytes() const;
  const ExecutionStoreLimits& limits() const { return limits_; }

 private:
  struct Entry {
    std::string owner, policy;
    ExecutionKind kind = ExecutionKind::kExecute;
    ExecutionState state = ExecutionState::kQueued;
    std::string submitted_at, finished_at;
    nlohmann::json body;  // finished only
    size_t bytes = 0;     // of body, as sent
    std::chrono::steady_clock::time_point finished;
  };
  void EvictFinished();  // while over a bound or past keep_for, the oldest finished entry goes (mu_ held)
  void EvictFront();     // the oldest finished entry goes (mu_ held)
  std::optional<nlohmann::json> ViewLocked(const std::string& id, const std::string& owner) const;

  const ExecutionStoreLimits limits_;
  mutable std::mutex mu_;
  mutable std::condition_variable finished_cv_;  // any entry finished, or Close
  bool closed_ = false;
  std::map<std::string, Entry> entries_;
  std::deque<std::string> finished_order_;  // oldest first
  uint64_t bytes_ = 0;
};

}  // namespace lsb::server
