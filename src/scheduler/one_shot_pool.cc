#include "scheduler/one_shot_pool.h"

#include <chrono>

#include "scheduler/box_registry.h"
#include "scheduler/policy_store.h"

namespace lsb::sched {
namespace {

constexpr size_t kMaxReapQueue = 64;  // past this, a used box is destroyed on the caller's thread
constexpr std::chrono::seconds kRetryAfter{10};  // a policy whose refill failed

// A box opened on the request path runs once: its program follows kSetup without waiting for kReady.
SessionOptions FreshOneShot(SessionOptions o = {}) {
  o.await_ready = false;
  return o;
}

}  // namespace

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

OneShotPool::OneShotPool(Backend& backend, const PolicyStore& store, size_t per_policy)
    : backend_(backend), store_(store), per_policy_(per_policy), per_owner_(backend.BoxesBelongToOwner()) {}

std::string OneShotPool::KeyOf(const std::string& policy, const BoxOwner& owner) const {
  // An owner id never holds a newline (server/owner.h): the key is unambiguous.
  return per_owner_ ? policy + "\n" + owner.value_or("") : policy;
}

OneShotPool::Pool& OneShotPool::AddPoolLocked(const std::string& key, const std::string& policy,
                                               const BoxOwner& owner, std::vector<std::unique_ptr<BoxSession>>& gone) {
  Pool& p = pools_[key];
  p.policy = policy;
  p.owner = per_owner_ ? BoxOwner(owner.value_or("")) : std::nullopt;
  p.last_acquired = std::chrono::steady_clock::now();
  if (!per_owner_) return p;
  std::map<std::string, std::chrono::steady_clock::time_point> owners;  // owner -> served last
  for (const auto& [k, q] : pools_) {
    auto& t = owners[*q.owner];
    t = std::max(t, q.last_acquired);
  }
  if (owners.size() <= kMaxPoolOwners) return p;
  auto oldest = owners.end();
  for (auto o = owners.begin(); o != owners.end(); ++o)
    if (o->first != *p.owner && (oldest == owners.end() || o->second < oldest->second)) oldest = o;
  for (auto q = pools_.begin(); q != pools_.end();) {
    if (*q->second.owner != oldest->first) {
      ++q;
      continue;
    }
    for (auto& w : q->second.ready) gone.push_back(std::move(w.session));
    q = pools_.erase(q);
  }
  return p;
}

OneShotPool::~OneShotPool() { Shutdown(); }

void OneShotPool::Start(const std::vector<std::string>& policies) {
  std::lock_guard<std::mutex> l(mu_);
  if (started_ || stop_) return;
  started_ = true;
  std::vector<std::unique_ptr<BoxSession>> none;  // no pool has boxes yet
  for (const auto& n : policies) AddPoolLocked(KeyOf(n, std::string()), n, std::string(), none);
  refiller_ = std::thread([this] { RefillLoop(); });
  reaper_ = std::thread([this] { ReapLoop(); });
}

Result<OneShotBox> OneShotPool::Acquire(Backend& backend, const Policy& policy, const BoxOwner& owner) {
  bool ours = &backend == &backend_ && per_policy_ > 0;
  // Outside the lock: the request's box shape (a policy the backend cannot describe never fits).
  Result<std::string> shape = ours ? backend.ShapeFor(policy) : Result<std::string>(Error{"not pooled"});
  std::vector<std::unique_ptr<BoxSession>> broken;  // destroyed after the lock is dropped
  std::unique_ptr<BoxSession> got;
  bool counted = false;
  if (ours) {
    std::lock_guard<std::mutex> l(mu_);
    if (started_ && !stop_) {
      counted = true;
      const std::string key = KeyOf(policy.name, owner);
      auto it = pools_.find(key);
      if (it == pools_.end()) {
        AddPoolLocked(key, policy.name, owner, broken);  // pooled from now on
        refill_cv_.notify_all();
      } else {
        it->second.last_acquired = std::chrono::steady_clock::now();
        auto& q = it->second.ready;
        while (!q.empty() && !got) {
          Warm w = std::move(q.front());
          q.pop_front();
          if (!w.session->usable() || w.session->box().Ended()) {
            broken.push_back(std::move(w.session));  // broke while waiting
          } else if (shape.ok() && w.shape == *shape) {
            got = std::move(w.session);
          } else {
            q.push_front(std::move(w));  // another shape: its policy's, or one replaced (below)
            break;
          }
        }
        if (got || !broken.empty()) refill_cv_.notify_all();
      }
      got ? ++hits_ : ++misses_;
    }
  }
  for (auto& s : broken) Retire(std::move(s));
  if (got) {
    got->UseRunPolicy(policy);
    return OneShotBox(std::move(got), this);
  }
  // A miss starts a box anyway: meanwhile, boxes made from a policy since replaced go.
  if (counted)
    if (auto cur = store_.Find(policy.name))
      if (auto cur_shape = backend_.ShapeFor(*cur); cur_shape.ok()) DropStale(KeyOf(policy.name, owner), *cur_shape);
  SessionOptions fresh;
  fresh.owner = owner;
  LSB_ASSIGN_OR_RETURN(auto s, BoxSession::Open(backend, policy, FreshOneShot(fresh)));
  return OneShotBox(std::move(s), &backend == &backend_ ? this : nullptr);
}

void OneShotPool::DropStale(const std::string& key, const std::string& shape) {
  std::vector<std::unique_ptr<BoxSession>> stale;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = pools_.find(key);
    if (it == pools_.end()) return;
    auto& q = it->second.ready;
    for (auto w = q.begin(); w != q.end();) {
      if (w->shape == shape) {
        ++w;
        continue;
      }
      stale.push_back(std::move(w->session));
      w = q.erase(w);
    }
    if (!stale.empty()) refill_cv_.notify_all();
  }
  for (auto& s : stale) Retire(std::move(s));
}

Result<OneShotPool::Warm> OneShotPool::MakeWarm(const Policy& policy, const BoxOwner& owner) {
  // One setup for both: the box is built from exactly what its shape says.
  LSB_ASSIGN_OR_RETURN(protocol::BoxSetup setup, backend_.SetupFor(policy));
  LSB_ASSIGN_OR_RETURN(std::string shape, backend_.BoxShape(policy, setup));
  SessionOptions opts;
  opts.owner = owner;  // nullopt unless boxes belong to owners: then the pool's one
  LSB_ASSIGN_OR_RETURN(auto session, BoxSession::Open(backend_, policy, std::move(setup), opts));
  return Warm{std::move(session), std::move(shape)};
}

void OneShotPool::Retire(std::unique_ptr<BoxSession> s) {
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

void OneShotPool::Drain() {
  std::vector<std::unique_ptr<BoxSession>> old;
  {
    std::lock_guard<std::mutex> l(mu_);
    ++gen_;
    for (auto& [name, p] : pools_) {
      for (auto& w : p.ready) old.push_back(std::move(w.session));
      p.ready.clear();
      p.failed = false;
    }
    refill_cv_.notify_all();
  }
  old.clear();  // destroyed now: a reload must not leave boxes of the old policies
}

void OneShotPool::Shutdown() {
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
    for (auto& w : p.ready) old.push_back(std::move(w.session));
  pools_.clear();
  for (auto& s : reap_) old.push_back(std::move(s));
  reap_.clear();
  old.clear();
}

PoolStats OneShotPool::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  PoolStats s;
  s.hits = hits_;
  s.per_policy = per_policy_;
  s.misses = misses_;
  for (const auto& [key, p] : pools_) {
    s.ready += p.ready.size();
    s.ready_by_policy[p.policy] += p.ready.size();
  }
  s.reaping = reap_.size();
  return s;
}

bool OneShotPool::FullLocked() const {
  for (const auto& [name, p] : pools_)
    if (p.ready.size() < per_policy_ && !p.failed) return false;
  return true;
}

bool OneShotPool::WaitFull(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> l(mu_);
  return full_cv_.wait_for(l, timeout, [&] { return stop_ || FullLocked(); });
}

void OneShotPool::RefillLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    // The first wanted policy short of boxes (and whose refill has not failed in this generation).
    std::string key, name;
    BoxOwner owner;
    bool retry_later = false;
    auto now = std::chrono::steady_clock::now();
    for (auto& [k, p] : pools_) {
      if (p.failed && now >= p.retry_at) p.failed = false;
      retry_later = retry_later || p.failed;
      if (key.empty() && p.ready.size() < per_policy_ && !p.failed) {
        key = k;
        name = p.policy;
        owner = p.owner;
      }
    }
    if (key.empty()) {
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
    Result<Warm> s = Error{"no policy named '" + name + "'"};
    if (policy) s = MakeWarm(*policy, owner);
    l.lock();
    auto it = pools_.find(key);
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
      s->session.reset();  // made for a drained generation
      l.lock();
      continue;
    }
    it->second.ready.push_back(std::move(*s));
  }
}

void OneShotPool::ReapLoop() {
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

Result<OneShotBox> AcquireOneShotBox(BoxRegistry& registry, Backend& backend, const Policy& policy,
                                     SessionOptions fresh) {
  if (OneShotPool* pool = registry.pool()) return pool->Acquire(backend, policy, fresh.owner);
  LSB_ASSIGN_OR_RETURN(auto s, BoxSession::Open(backend, policy, FreshOneShot(fresh)));
  return OneShotBox(std::move(s), nullptr);
}

std::optional<PoolStats> WarmPoolStats(const Backend& backend, const BoxRegistry& registry) {
  if (auto own = backend.OwnPoolStats()) return own;
  if (const OneShotPool* pool = registry.pool()) return pool->stats();
  return std::nullopt;
}

}  // namespace lsb::sched
