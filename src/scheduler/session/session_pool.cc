#include "scheduler/session/session_pool.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace lsb::sched {

using Clock = std::chrono::steady_clock;

namespace {
constexpr auto kRetryAfterFailure = std::chrono::seconds(30);
}  // namespace

size_t DefaultSessionPoolDepth(uint64_t memory_available_bytes) {
  const uint64_t per_box = uint64_t{2} << 30;
  return std::clamp<size_t>(static_cast<size_t>(memory_available_bytes / per_box), 2, kMaxSessionPoolPerKey);
}

Result<WarmInterpreter> OpenWarmInterpreter(Backend& backend, const Policy& policy, const std::string& setup,
                                            const BoxOwner& owner, uint64_t lifetime_ms, bool* setup_failed) {
  WarmInterpreter w;
  SessionOptions opts;
  opts.owner = owner;  // a fork server's box comes from this owner's zygote only
  LSB_ASSIGN_OR_RETURN(w.box, BoxSession::Open(backend, policy, opts));
  ZygoteSpec zygote;
  zygote.setup = setup;
  for (const auto& t : policy.tmpfs) zygote.roots.push_back(t.path);
  LSB_ASSIGN_OR_RETURN(w.driver, PythonDriver::Start(*w.box, lifetime_ms, &zygote, &w.setup));
  if (w.setup.status != ExecStatus::kOk && !setup.empty()) {
    if (setup_failed) *setup_failed = true;
    return Error{"setup: the setup code failed (" + std::string(protocol::Name(w.setup.status)) + ", exit " +
                 std::to_string(w.setup.exit_code) + "): " + w.setup.stderr_data.substr(0, 2000)};
  }
  if (w.setup.status != ExecStatus::kOk) return Error{"the session's interpreter did not start: " + w.setup.stderr_data};
  return w;
}

SessionPool::SessionPool(Backend& backend, size_t per_key, uint64_t lifetime_ms)
    : backend_(backend), per_key_(per_key), lifetime_ms_(lifetime_ms) {}

SessionPool::~SessionPool() { Shutdown(); }

void SessionPool::Start() {
  std::lock_guard<std::mutex> l(mu_);
  if (refiller_.joinable() || stop_ || per_key_ == 0) return;
  refiller_ = std::thread([this] { RefillLoop(); });
}

std::optional<WarmInterpreter> SessionPool::Take(const Policy& policy, const std::string& setup,
                                                 const BoxOwner& owner) {
  if (per_key_ == 0) return std::nullopt;
  auto shape = backend_.ShapeFor(policy);
  if (!shape.ok()) return std::nullopt;  // the fresh open reports why
  // A fork server's boxes are one owner's (runtime/backend.h BoxesBelongToOwner): so are its keys.
  const BoxOwner key_owner = backend_.BoxesBelongToOwner() ? owner : BoxOwner();
  std::string name = policy.name + "\n" + setup + "\n" + (key_owner ? "owner:" + *key_owner : "anyone");
  std::vector<WarmInterpreter> stale;
  std::optional<WarmInterpreter> got;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return std::nullopt;
    auto it = keys_.find(name);
    if (it == keys_.end()) {
      if (keys_.size() >= kMaxSessionPoolKeys) {  // the key taken least recently goes
        auto oldest = keys_.begin();
        for (auto k = keys_.begin(); k != keys_.end(); ++k)
          if (k->second.last_taken < oldest->second.last_taken) oldest = k;
        for (auto& w : oldest->second.ready) stale.push_back(std::move(w));
        keys_.erase(oldest);
      }
      it = keys_.emplace(name, Key{policy, setup, key_owner, *shape}).first;
    }
    Key& k = it->second;
    k.last_taken = Clock::now();
    k.recent.push_back(k.last_taken);
    while (k.recent.size() > per_key_ || k.last_taken - k.recent.front() > kPoolRateWindow) k.recent.pop_front();
    if (k.shape != *shape) {  // the policy changed since these boxes were made
      for (auto& w : k.ready) stale.push_back(std::move(w));
      k.ready.clear();
      k.failed = false;
    }
    k.policy = policy;
    k.shape = *shape;
    while (!k.ready.empty() && !got) {
      WarmInterpreter w = std::move(k.ready.front());
      k.ready.pop_front();
      if (w.box->usable() && w.driver->resettable()) got = std::move(w);
      else stale.push_back(std::move(w));  // died while waiting (killed, its wall limit)
    }
    if (got) ++hits_;
    else ++misses_;
    refill_cv_.notify_all();
  }
  stale.clear();  // destroyed outside the lock
  if (got) got->box->UseRunPolicy(policy);
  return got;
}

size_t SessionPool::TargetLocked(const Key& k, Clock::time_point now) const {
  size_t recent = 0;
  for (const auto& t : k.recent) recent += now - t <= kPoolRateWindow;
  return std::min(per_key_, recent + 1);
}

void SessionPool::ForgetIdleLocked(Clock::time_point now, std::vector<WarmInterpreter>& stale) {
  for (auto it = keys_.begin(); it != keys_.end();) {
    if (now - it->second.last_taken < kPoolKeyIdle) {
      ++it;
      continue;
    }
    for (auto& w : it->second.ready) stale.push_back(std::move(w));
    it = keys_.erase(it);
  }
}

void SessionPool::RefillLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    const auto now = Clock::now();
    std::vector<WarmInterpreter> stale;
    ForgetIdleLocked(now, stale);
    if (!stale.empty()) {
      l.unlock();
      stale.clear();  // destroyed outside the lock
      l.lock();
      continue;
    }
    std::string want;
    for (auto& [name, k] : keys_) {
      if (k.ready.size() >= TargetLocked(k, now)) continue;
      if (k.failed && now < k.retry_at) continue;
      want = name;
      break;
    }
    if (want.empty()) {
      full_cv_.notify_all();
      refill_cv_.wait_for(l, std::chrono::seconds(5));
      continue;
    }
    Policy policy = keys_[want].policy;
    std::string setup = keys_[want].setup, shape = keys_[want].shape;
    BoxOwner owner = keys_[want].owner;
    uint64_t gen = gen_;
    l.unlock();
    auto w = OpenWarmInterpreter(backend_, policy, setup, owner, lifetime_ms_);
    l.lock();
    auto it = keys_.find(want);
    bool keep = w.ok() && !stop_ && gen == gen_ && it != keys_.end() && it->second.shape == shape &&
                it->second.ready.size() < per_key_;
    if (it != keys_.end() && gen == gen_) {
      it->second.failed = !w.ok();
      if (!w.ok()) it->second.retry_at = Clock::now() + kRetryAfterFailure;
    }
    if (keep) {
      it->second.ready.push_back(std::move(*w));
      full_cv_.notify_all();
    } else if (w.ok()) {
      l.unlock();
      { WarmInterpreter drop = std::move(*w); }  // destroyed outside the lock (driver before box)
      l.lock();
    }
  }
}

void SessionPool::Drain() {
  std::vector<WarmInterpreter> old;
  {
    std::lock_guard<std::mutex> l(mu_);
    ++gen_;
    for (auto& [name, k] : keys_)
      for (auto& w : k.ready) old.push_back(std::move(w));
    keys_.clear();
    refill_cv_.notify_all();
  }
}

void SessionPool::Shutdown() {
  std::vector<WarmInterpreter> old;
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
    ++gen_;
    refill_cv_.notify_all();
    full_cv_.notify_all();
  }
  if (refiller_.joinable()) refiller_.join();
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [name, k] : keys_)
    for (auto& w : k.ready) old.push_back(std::move(w));
  keys_.clear();
}

SessionPoolStats SessionPool::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  SessionPoolStats s;
  s.hits = hits_;
  s.misses = misses_;
  s.keys = keys_.size();
  s.per_key = per_key_;
  for (const auto& [name, k] : keys_) s.ready += k.ready.size();
  s.full = FullLocked();
  return s;
}

bool SessionPool::FullLocked() const {
  const auto now = Clock::now();
  for (const auto& [name, k] : keys_)
    if (k.ready.size() < TargetLocked(k, now) && !k.failed) return false;
  return true;
}

bool SessionPool::WaitFull(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> l(mu_);
  return full_cv_.wait_for(l, timeout, [&] { return stop_ || FullLocked(); });
}

}  // namespace lsb::sched
