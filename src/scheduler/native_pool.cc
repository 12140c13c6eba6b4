#include "scheduler/native_pool.h"

#include <chrono>

#include "scheduler/box_registry.h"
#include "scheduler/policy_store.h"

namespace lsb::sched {
namespace {

constexpr size_t kMaxReapQueue = 64;  // past this, a used box is destroyed on the caller's thread
constexpr std::chrono::seconds kRetryAfter{10};  // a policy whose refill failed

bool SameTmpfs(const std::vector<TmpfsMount>& a, const std::vector<TmpfsMount>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].path != b[i].path || a[i].size_bytes != b[i].size_bytes || a[i].mode != b[i].mode ||
        a[i].noexec != b[i].noexec || a[i].nosuid != b[i].nosuid || a[i].nodev != b[i].nodev)
      return false;
  return true;
}

bool SameLanguages(const std::map<std::string, Language>& a, const std::map<std::string, Language>& b) {
  if (a.size() != b.size()) return false;
  for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
    if (i->first != j->first || i->second.name != j->second.name || i->second.command != j->second.command ||
        i->second.file_name != j->second.file_name)
      return false;
  return true;
}

// A box opened on the request path runs once: its program follows kSetup without waiting for kReady.
SessionOptions OneShotOptions() {
  SessionOptions o;
  o.await_ready = false;
  return o;
}

}  // namespace

// Every field of Policy except where it came from (source_file, positions) and the description.
// A field added to Policy must be added here, or pooled boxes would ignore it.
bool PooledBoxFits(const Policy& b, const Policy& r) {
  return b.version == r.version && b.name == r.name && b.backend == r.backend && b.runtime == r.runtime &&
         b.gvisor_accept_weaker == r.gvisor_accept_weaker && b.image == r.image && b.read_only == r.read_only &&
         SameTmpfs(b.tmpfs, r.tmpfs) && b.user_namespace == r.user_namespace && b.seccomp == r.seccomp &&
         b.uid == r.uid && b.gid == r.gid && b.workdir == r.workdir && b.env == r.env &&
         b.network_enabled == r.network_enabled && b.allow == r.allow && b.deny == r.deny &&
         SameLanguages(b.languages, r.languages) && b.default_language == r.default_language && b.cpu == r.cpu &&
         b.memory_bytes == r.memory_bytes && r.timeout_ms <= b.timeout_ms &&
         r.timeout_grace_ms <= b.timeout_grace_ms && b.pids == r.pids &&
         b.output_bytes == r.output_bytes && b.open_files == r.open_files &&
         b.file_size_bytes == r.file_size_bytes && b.trace == r.trace && b.alert_severity == r.alert_severity;
}

OneShotBox& OneShotBox::operator=(OneShotBox&& o) noexcept {
  if (this != &o) {
    Release();
    s_ = std::move(o.s_);
    pool_ = o.pool_;
  }
  return *this;
}

OneShotBox::~OneShotBox() { Release(); }

void OneShotBox::Release() {
  if (!s_) return;
  if (pool_) {
    pool_->Retire(std::move(s_));
  } else {
    s_.reset();
  }
}

NativePool::NativePool(Backend& backend, const PolicyStore& store, size_t per_policy)
    : backend_(backend), store_(store), per_policy_(per_policy) {}

NativePool::~NativePool() { Shutdown(); }

void NativePool::Start(const std::vector<std::string>& policies) {
  std::lock_guard<std::mutex> l(mu_);
  if (started_ || stop_) return;
  started_ = true;
  for (const auto& n : policies) pools_[n];
  refiller_ = std::thread([this] { RefillLoop(); });
  reaper_ = std::thread([this] { ReapLoop(); });
}

Result<OneShotBox> NativePool::Acquire(Backend& backend, const Policy& policy) {
  std::vector<std::unique_ptr<BoxSession>> stale;  // destroyed after the lock is dropped
  std::unique_ptr<BoxSession> got;
  if (&backend == &backend_ && per_policy_ > 0) {
    std::lock_guard<std::mutex> l(mu_);
    if (started_ && !stop_) {
      auto it = pools_.find(policy.name);
      if (it == pools_.end()) {
        pools_[policy.name];  // pooled from now on
        refill_cv_.notify_all();
      } else {
        auto& q = it->second.ready;
        while (!q.empty() && !got) {
          auto s = std::move(q.front());
          q.pop_front();
          if (s->usable() && PooledBoxFits(s->policy(), policy)) {
            got = std::move(s);
          } else if (auto cur = store_.Find(policy.name); !s->usable() || !cur || !PooledBoxFits(s->policy(), *cur)) {
            stale.push_back(std::move(s));  // broke while waiting, or made from a replaced policy
          } else {
            q.push_front(std::move(s));  // fits the policy, not this tightened request: keep it
            break;
          }
        }
        if (got) refill_cv_.notify_all();
      }
      got ? ++hits_ : ++misses_;
    }
  }
  for (auto& s : stale) Retire(std::move(s));
  if (got) {
    got->LowerRunTimeout(policy.timeout_ms, policy.timeout_grace_ms);
    return OneShotBox(std::move(got), this);
  }
  LSB_ASSIGN_OR_RETURN(auto s, BoxSession::Open(backend, policy, OneShotOptions()));
  return OneShotBox(std::move(s), &backend == &backend_ ? this : nullptr);
}

void NativePool::Retire(std::unique_ptr<BoxSession> s) {
  if (!s) return;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (started_ && !stop_ && reap_.size() < kMaxReapQueue) {
      reap_.push_back(std::move(s));
      reap_cv_.notify_one();
      return;
    }
  }
  s.reset();  // no reaper (stopped, or behind): destroyed here
}

void NativePool::Drain() {
  std::vector<std::unique_ptr<BoxSession>> old;
  {
    std::lock_guard<std::mutex> l(mu_);
    ++gen_;
    for (auto& [name, p] : pools_) {
      for (auto& s : p.ready) old.push_back(std::move(s));
      p.ready.clear();
      p.failed = false;
    }
    refill_cv_.notify_all();
  }
  old.clear();  // destroyed now: a reload must not leave boxes of the old policies
}

void NativePool::Shutdown() {
  std::vector<std::unique_ptr<BoxSession>> old;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_ && !refiller_.joinable() && !reaper_.joinable() && pools_.empty() && reap_.empty()) return;
    stop_ = true;
    ++gen_;
    refill_cv_.notify_all();
    reap_cv_.notify_all();
    full_cv_.notify_all();
  }
  if (refiller_.joinable()) refiller_.join();
  if (reaper_.joinable()) reaper_.join();
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [name, p] : pools_)
    for (auto& s : p.ready) old.push_back(std::move(s));
  pools_.clear();
  for (auto& s : reap_) old.push_back(std::move(s));
  reap_.clear();
  old.clear();
}

NativePoolStats NativePool::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  NativePoolStats s;
  s.hits = hits_;
  s.per_policy = per_policy_;
  s.misses = misses_;
  for (const auto& [name, p] : pools_) {
    s.ready += p.ready.size();
    s.ready_by_policy[name] = p.ready.size();
  }
  s.reaping = reap_.size();
  return s;
}

bool NativePool::FullLocked() const {
  for (const auto& [name, p] : pools_)
    if (p.ready.size() < per_policy_ && !p.failed) return false;
  return true;
}

bool NativePool::WaitFull(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> l(mu_);
  return full_cv_.wait_for(l, timeout, [&] { return stop_ || FullLocked(); });
}

void NativePool::RefillLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    // The first wanted policy short of boxes (and whose refill has not failed in this generation).
    std::string name;
    bool retry_later = false;
    auto now = std::chrono::steady_clock::now();
    for (auto& [n, p] : pools_) {
      if (p.failed && now >= p.retry_at) p.failed = false;
      retry_later = retry_later || p.failed;
      if (name.empty() && p.ready.size() < per_policy_ && !p.failed) name = n;
    }
    if (name.empty()) {
      full_cv_.notify_all();
      if (retry_later) {
        refill_cv_.wait_for(l, kRetryAfter);
      } else {
        refill_cv_.wait(l);
      }
      continue;
    }
    uint64_t gen = gen_;
    l.unlock();
    auto policy = store_.Find(name);
    Result<std::unique_ptr<BoxSession>> s = Error{"no policy named '" + name + "'"};
    if (policy) s = BoxSession::Open(backend_, *policy);
    l.lock();
    auto it = pools_.find(name);
    if (!s.ok()) {
      // Not this backend's policy, or the host cannot start boxes now: one-shots start their own
      // (and report the error); retried after kRetryAfter or the next drain.
      if (it != pools_.end()) {
        it->second.failed = true;
        it->second.retry_at = std::chrono::steady_clock::now() + kRetryAfter;
      }
      full_cv_.notify_all();
      continue;
    }
    if (stop_ || gen != gen_ || it == pools_.end()) {
      l.unlock();
      s->reset();  // made for a drained generation
      l.lock();
      continue;
    }
    it->second.ready.push_back(std::move(*s));
  }
}

void NativePool::ReapLoop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    reap_cv_.wait(l, [&] { return stop_ || !reap_.empty(); });
    if (reap_.empty()) return;  // stop_, nothing left
    auto s = std::move(reap_.front());
    reap_.pop_front();
    l.unlock();
    s.reset();  // kShutdown, SIGKILL of init, namespace and cgroup teardown: off the request path
    l.lock();
  }
}

Result<OneShotBox> AcquireOneShotBox(BoxRegistry& registry, Backend& backend, const Policy& policy) {
  if (NativePool* pool = registry.pool()) return pool->Acquire(backend, policy);
  LSB_ASSIGN_OR_RETURN(auto s, BoxSession::Open(backend, policy, OneShotOptions()));
  return OneShotBox(std::move(s), nullptr);
}

}  // namespace lsb::sched
