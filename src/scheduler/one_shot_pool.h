// The scheduler's warm pool for one-shot executions (DESIGN §5, §8), for any backend that keeps no
// pool of its own (Backend::OwnPoolStats; the Docker backend keeps its containers itself,
// runtime/docker/container_pool.h): per policy, up to N boxes already
// started and set up (BoxSession opened, kReady received), each handed out once and never reused;
// a background thread refills the pools and another destroys used boxes, so neither the box start
// nor its teardown (namespace teardown after init's SIGKILL) is on the request's path.
//
// Correctness: a pooled box is only handed to a request whose (tightened) policy has the box's
// shape (Backend::BoxShape: init's setup and the launch plan the backend built the box from, the
// rule the Docker pool keys its boxes by too), and the run then takes its limits (timeout, output,
// languages...) from the request's policy. A request whose box would be built otherwise (memory,
// cpu, network...) gets a fresh box. Drain() (SIGHUP: the policies may have changed) and
// Shutdown() (SIGTERM) destroy every pooled box; a box whose shape is no longer its policy's is
// discarded by the next request that misses.
//
// Policies are pooled on demand: the ones named in Start() and each one a one-shot asks for.
//
// Owners (DESIGN §12): when the backend's boxes belong to the owner they were made for
// (Backend::BoxesBelongToOwner: the native fork server forks each owner's boxes from a zygote of
// its own), a pool is kept per (policy, owner) and a box is handed only to its owner; at most
// kMaxPoolOwners owners are pooled at once, a new one pushes out the owner served least recently.
// Otherwise one pool per policy serves every owner (its boxes share nothing).
//
// Concurrency: `mu_` guards the pools, the wanted set, the reap queue and the flags; boxes are
// opened and destroyed outside the lock, on the refill and reaper threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "policy/policy.h"
#include "runtime/backend.h"
#include "runtime/runner.h"

namespace lsb::sched {

class PolicyStore;
class BoxRegistry;
class OneShotPool;

// A box for one one-shot execution; when it goes, the box goes to the pool's reaper (or is
// destroyed in place when there is no pool).
class OneShotBox {
 public:
  OneShotBox() = default;
  OneShotBox(std::unique_ptr<BoxSession> s, OneShotPool* pool) : s_(std::move(s)), pool_(pool) {}
  OneShotBox(OneShotBox&& o) noexcept = default;
  OneShotBox& operator=(OneShotBox&& o) noexcept;
  ~OneShotBox();
  BoxSession* get() const { return s_.get(); }
  BoxSession* operator->() const { return s_.get(); }
  BoxSession& operator*() const { return *s_; }

 private:
  void Release();
  std::unique_ptr<BoxSession> s_;
  OneShotPool* pool_ = nullptr;
};


// Owners pooled at once when boxes belong to their owner: each costs its own boxes (and a zygote).
inline constexpr size_t kMaxPoolOwners = 4;

class OneShotPool {
 public:
  // `per_policy` boxes kept ready for each pooled policy of `store`, started on `backend`.
  OneShotPool(Backend& backend, const PolicyStore& store, size_t per_policy);
  ~OneShotPool();  // Shutdown()
  OneShotPool(const OneShotPool&) = delete;
  OneShotPool& operator=(const OneShotPool&) = delete;

  // Starts the refill and reaper threads; `policies` are pooled from now on.
  void Start(const std::vector<std::string>& policies);
  // A box for one execution of `policy` on `backend` for `owner`: a pooled one when one fits (and,
  // when boxes belong to their owner, was made for `owner`), else one started now. The policy
  // (with the owner) is registered for pooling.
  Result<OneShotBox> Acquire(Backend& backend, const Policy& policy, const BoxOwner& owner = std::string());
  // Hands a used box to the reaper thread (destroys it in place when the reaper is behind or gone).
  void Retire(std::unique_ptr<BoxSession> s);
  // Destroys every pooled box (they refill from the store's current policies).
  void Drain();
  // Stops both threads and destroys every pooled and retired box. Idempotent.
  void Shutdown();
  PoolStats stats() const;
  // Blocks until every wanted policy has its boxes or `timeout` passes (tests, benchmarks).
  bool WaitFull(std::chrono::milliseconds timeout) const;

 private:
  struct Warm {
    std::unique_ptr<BoxSession> session;
    std::string shape;  // the backend's BoxShape of the policy and setup the box was built with
  };
  struct Pool {
    std::string policy;  // the policy's name
    BoxOwner owner;      // whom its boxes are made for (nullopt: anyone; boxes then share nothing)
    std::chrono::steady_clock::time_point last_acquired;
    std::deque<Warm> ready;
    bool failed = false;  // the last refill failed: not retried before retry_at or a Drain()
    std::chrono::steady_clock::time_point retry_at;
  };
  // A box for `policy` and `owner`, opened and set up (kReady received), with its shape.
  Result<Warm> MakeWarm(const Policy& policy, const BoxOwner& owner);
  // Discards the ready boxes of pool `key` whose shape is not `shape` (their policy changed).
  void DropStale(const std::string& key, const std::string& shape);
  // The pool key of `policy` for `owner` (the policy's name alone when boxes do not belong to owners).
  std::string KeyOf(const std::string& policy, const BoxOwner& owner) const;
  // Registers pool `key`; when that makes more than kMaxPoolOwners owners, the pools of the owner
  // served least recently go, their boxes into `gone`. Under mu_.
  Pool& AddPoolLocked(const std::string& key, const std::string& policy, const BoxOwner& owner,
                      std::vector<std::unique_ptr<BoxSession>>& gone);
  void RefillLoop();
  void ReapLoop();
  bool FullLocked() const;

  Backend& backend_;
  const PolicyStore& store_;
  size_t per_policy_;
  mutable std::mutex mu_;
  mutable std::condition_variable refill_cv_;  // refill thread: a box was taken, a drain, stop
  mutable std::condition_variable reap_cv_;    // reaper thread: a box to destroy, stop
  mutable std::condition_variable full_cv_;    // WaitFull
  std::map<std::string, Pool> pools_;          // wanted policies by KeyOf(name, owner)
  const bool per_owner_;                       // backend_.BoxesBelongToOwner()
  std::deque<std::unique_ptr<BoxSession>> reap_;
  uint64_t gen_ = 0;  // bumped by Drain(): boxes being made for an older one are discarded
  bool stop_ = false;
  bool started_ = false;
  uint64_t hits_ = 0, misses_ = 0;
  std::thread refiller_, reaper_;
};

// The hook of RunOneShot: the registry's pool when the daemon set one, else a fresh box opened
// with `fresh` (its await_ready is cleared: a one-shot's program follows kSetup at once).
Result<OneShotBox> AcquireOneShotBox(BoxRegistry& registry, Backend& backend, const Policy& policy,
                                     SessionOptions fresh = {});

// The warm pool's figures, whoever keeps it: the backend (Backend::OwnPoolStats), else the
// registry's one-shot pool; nullopt when neither pools.
std::optional<PoolStats> WarmPoolStats(const Backend& backend, const BoxRegistry& registry);

}  // namespace lsb::sched
