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

bool ExecutionStore::Add(const std::string& id, const std::string& owner, const std::string& policy) {
  std::lock_guard<std::mutex> lock(mu_);
  while (entries_.size() >= limits_.max_entries && !finished_order_.empty()) {
    auto it = entries_.find(finished_order_.front());
    finished_order_.pop_front();
    if (it == entries_.end()) continue;
    bytes_ -= it->second.bytes;
    entries_.erase(it);
  }
  if (entries_.size() >= limits_.max_entries) return false;
  entries_[id] = Entry{owner, policy, ExecutionState::kQueued, Now(), "", nullptr, 0};
  return true;
}

void ExecutionStore::Start(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it != entries_.end() && it->second.state == ExecutionState::kQueued) it->second.state = ExecutionState::kRunning;
}

void ExecutionStore::Finish(const std::string& id, json body) {
  // Cut outside the lock: the result may be megabytes. Never more than the whole store holds.
  size_t cap = static_cast<size_t>(std::min(limits_.max_result_bytes, limits_.max_bytes));
  size_t bytes = body.contains("error") ? JsonBytes(body) : FitResultJson(body, cap);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  it->second.state = ExecutionState::kFinished;
  it->second.finished_at = Now();
  it->second.body = std::move(body);
  it->second.bytes = bytes;
  bytes_ += bytes;
  finished_order_.push_back(id);
  EvictFinished();
}

void ExecutionStore::EvictFinished() {
  while (bytes_ > limits_.max_bytes && !finished_order_.empty()) {
    auto it = entries_.find(finished_order_.front());
    finished_order_.pop_front();
    if (it == entries_.end()) continue;
    bytes_ -= it->second.bytes;
    entries_.erase(it);
  }
}

void ExecutionStore::Forget(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it != entries_.end() && it->second.state != ExecutionState::kFinished) entries_.erase(it);
}

std::optional<json> ExecutionStore::Find(const std::string& id, const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.owner != owner) return std::nullopt;
  const Entry& e = it->second;
  json v = {{"execution_id", id}, {"policy", e.policy}, {"kind", "execute"},
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
