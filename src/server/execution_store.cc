#include "server/execution_store.h"

#include <algorithm>

#include "base/enum_words.h"
#include "base/time_format.h"
#include "server/json_budget.h"

namespace lsb::server {

using nlohmann::json;

namespace {
std::string Now() { return Rfc3339(std::chrono::system_clock::now()); }

constexpr EnumWord<ExecutionState> kStates[] = {
    {ExecutionState::kQueued, "queued"},
    {ExecutionState::kRunning, "running"},
    {ExecutionState::kFinished, "finished"},
};
}  // namespace

const char* ExecutionStateName(ExecutionState s) { return WordOf<ExecutionState>(kStates, s); }
std::optional<ExecutionState> ParseExecutionState(std::string_view name) { return EnumOf<ExecutionState>(kStates, name); }

bool ExecutionStore::Add(const std::string& id, const std::string& owner, const std::string& policy,
                         ExecutionKind kind) {
  std::lock_guard<std::mutex> lock(mu_);
  EvictFinished();
  while (entries_.size() >= limits_.max_entries && !finished_order_.empty()) EvictFront();
  if (entries_.size() >= limits_.max_entries) return false;
  Entry e;
  e.owner = owner;
  e.policy = policy;
  e.kind = kind;
  e.submitted_at = Now();
  entries_[id] = std::move(e);
  return true;
}

void ExecutionStore::Start(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it != entries_.end() && it->second.state == ExecutionState::kQueued) it->second.state = ExecutionState::kRunning;
}

void ExecutionStore::Finish(const std::string& id, json body) {
  // Cut outside the lock: the result may be megabytes. Never more than the whole store holds.
  // A batch's answer was already cut to the batch response budget (each entry to its share).
  size_t cap = static_cast<size_t>(std::min(limits_.max_result_bytes, limits_.max_bytes));
  bool is_batch = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(id);
    is_batch = it != entries_.end() && it->second.kind == ExecutionKind::kBatch;
  }
  size_t bytes = body.contains("error") || is_batch ? JsonBytes(body) : FitResultJson(body, cap);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    it->second.state = ExecutionState::kFinished;
    it->second.finished_at = Now();
    it->second.finished = std::chrono::steady_clock::now();
    it->second.body = std::move(body);
    it->second.bytes = bytes;
    bytes_ += bytes;
    finished_order_.push_back(id);
    EvictFinished();
  }
  finished_cv_.notify_all();
}

void ExecutionStore::EvictFront() {
  auto it = entries_.find(finished_order_.front());
  finished_order_.pop_front();
  if (it == entries_.end()) return;
  bytes_ -= it->second.bytes;
  entries_.erase(it);
}

void ExecutionStore::EvictFinished() {
  const auto oldest_kept = std::chrono::steady_clock::now() - limits_.keep_for;
  while (!finished_order_.empty()) {
    auto it = entries_.find(finished_order_.front());
    bool expired = it != entries_.end() && it->second.finished < oldest_kept;
    if (bytes_ <= limits_.max_bytes && !expired && it != entries_.end()) break;
    EvictFront();
  }
}

void ExecutionStore::Forget(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it != entries_.end() && it->second.state != ExecutionState::kFinished) entries_.erase(it);
}

std::optional<json> ExecutionStore::Find(const std::string& id, const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mu_);
  return ViewLocked(id, owner);
}

std::optional<json> ExecutionStore::Wait(const std::string& id, const std::string& owner,
                                         std::chrono::milliseconds wait) const {
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  finished_cv_.wait_until(lock, deadline, [&] {
    auto it = entries_.find(id);
    return closed_ || it == entries_.end() || it->second.owner != owner ||
           it->second.state == ExecutionState::kFinished;
  });
  return ViewLocked(id, owner);
}

void ExecutionStore::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  finished_cv_.notify_all();
}

std::optional<json> ExecutionStore::ViewLocked(const std::string& id, const std::string& owner) const {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.owner != owner) return std::nullopt;
  const Entry& e = it->second;
  if (e.state == ExecutionState::kFinished && e.finished < std::chrono::steady_clock::now() - limits_.keep_for)
    return std::nullopt;  // past its retention; the next Add or Finish drops it
  json v = {{"execution_id", id}, {"policy", e.policy}, {"kind", e.kind == ExecutionKind::kBatch ? "batch" : "execute"},
            {"async", true},      {"state", ExecutionStateName(e.state)},   {"submitted_at", e.submitted_at}};
  if (e.state == ExecutionState::kFinished) {
    v["finished_at"] = e.finished_at;
    if (e.body.contains("error")) v["error"] = e.body["error"];
    else v["result"] = e.body;
  }
  return v;
}

size_t ExecutionStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

uint64_t ExecutionStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace lsb::server
