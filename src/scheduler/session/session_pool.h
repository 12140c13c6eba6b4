// The warm pool of python session boxes (docs/api.md "Warm session pool", issues 22 and 35): per
// (policy, setup, owner) key, boxes already opened with their interpreter started and the setup
// run (the zygote a reset returns to), so a session create (with or without `setup`), a fork's
// children and a reset that needs a new box start without paying for them. Each box is handed out
// once and never reused; a background thread refills the keys. With a fork server (the native
// default) a key's boxes come from its owner's zygote, so the owner is part of the key; otherwise
// a key serves anyone.
//
// Keys are pooled on demand: the first session of a key misses (and is opened on the request's
// path), then the key is kept at its target: one more than the boxes taken from it in the last
// kPoolRateWindow, at most N (its depth). A key not taken from for kPoolKeyIdle is dropped with its
// boxes. At most kMaxSessionPoolKeys keys are kept; a new one pushes out the key taken least
// recently. Bound on what the pool costs the host: N * kMaxSessionPoolKeys idle boxes, each one
// interpreter after its setup.
//
// Correctness: a warm box is only handed to a session whose policy has the box's shape
// (Backend::BoxShape, the rule of the one-shot pool) and whose whole setup (the policy's
// session.setup, then the request's) is the key's; the box then takes its run limits from the
// session's policy. Drain() (SIGHUP) and Shutdown() destroy every warm box.
//
// Concurrency: `mu_` guards the keys and counters; boxes are opened and destroyed outside it, on
// the refill thread (or the caller's, for what Drain and Shutdown destroy).
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
#include <string>
#include <thread>
#include <vector>

#include "policy/policy.h"
#include "runtime/backend.h"
#include "runtime/exec_result.h"
#include "runtime/runner.h"
#include "scheduler/driver/python_driver.h"

namespace lsb::sched {

inline constexpr size_t kMaxSessionPoolKeys = 8;
inline constexpr size_t kMaxSessionPoolPerKey = 16;  // serve --session-pool's upper bound
// Long enough to span an RL loop's episodes (a fork of N every few tens of seconds) and a slow refill.
inline constexpr std::chrono::seconds kPoolRateWindow{60};
inline constexpr std::chrono::minutes kPoolKeyIdle{10};

// A key's depth when serve --session-pool is not given: one box per 2 GiB of the host's available
// memory, from 2 to kMaxSessionPoolPerKey (an idle warm box costs a few MiB, but a burst takes
// them all at once); 2 when the memory is unknown (0).
size_t DefaultSessionPoolDepth(uint64_t memory_available_bytes);

// A box with its interpreter after the setup, as a session adopts it.
struct WarmInterpreter {
  std::unique_ptr<BoxSession> box;
  std::unique_ptr<PythonDriver> driver;  // a zygote over the policy's writable paths
  ExecResult setup;                      // the setup's result (kOk: a failed one is not pooled)
};

// Opens a box for `policy` and starts a zygote interpreter over its writable paths after `setup`
// (what Session::Open does for a python session). `setup_failed`: set when the setup code failed
// (the error is then the setup's, not the sandbox's).
Result<WarmInterpreter> OpenWarmInterpreter(Backend& backend, const Policy& policy, const std::string& setup,
                                            const BoxOwner& owner, uint64_t lifetime_ms,
                                            bool* setup_failed = nullptr);

struct SessionPoolStats {
  uint64_t hits = 0, misses = 0;
  size_t ready = 0, keys = 0, per_key = 0;
  bool full = true;  // every key has its boxes (or its last refill failed)
};

class SessionPool {
 public:
  // `per_key` boxes kept per key on `backend`; each warm interpreter's wall limit is
  // `lifetime_ms` (the daemon's longest session lifetime: the session's reaper ends it sooner).
  SessionPool(Backend& backend, size_t per_key, uint64_t lifetime_ms);
  ~SessionPool();  // Shutdown()
  SessionPool(const SessionPool&) = delete;
  SessionPool& operator=(const SessionPool&) = delete;

  void Start();
  // A warm box for `policy` with `setup` already run, for `owner`, or nullopt (a miss: the key is
  // pooled from now on and refilled in the background).
  std::optional<WarmInterpreter> Take(const Policy& policy, const std::string& setup, const BoxOwner& owner);
  // Destroys every warm box and forgets the keys (SIGHUP: the policies may have changed).
  void Drain();
  // Stops the refill thread and destroys every warm box. Idempotent.
  void Shutdown();
  SessionPoolStats stats() const;
  // Blocks until every key has its boxes (or failed) or `timeout` passes (tests, benchmarks).
  bool WaitFull(std::chrono::milliseconds timeout) const;

 private:
  struct Key {
    Policy policy;       // as the last session of the key had it: what the refill opens
    std::string setup;
    BoxOwner owner;      // whose zygote the boxes come from (none: anyone's box)
    std::string shape;   // backend.ShapeFor(policy)
    std::deque<WarmInterpreter> ready;
    bool failed = false;  // the last refill failed: retried after retry_at
    std::chrono::steady_clock::time_point retry_at, last_taken;
    std::deque<std::chrono::steady_clock::time_point> recent;  // takes within kPoolRateWindow
  };
  void RefillLoop();
  bool FullLocked() const;
  size_t TargetLocked(const Key& k, std::chrono::steady_clock::time_point now) const;
  // Drops the keys idle for kPoolKeyIdle; their boxes go to `stale`.
  void ForgetIdleLocked(std::chrono::steady_clock::time_point now, std::vector<WarmInterpreter>& stale);

  Backend& backend_;
  const size_t per_key_;
  const uint64_t lifetime_ms_;
  mutable std::mutex mu_;
  mutable std::condition_variable refill_cv_, full_cv_;
  std::map<std::string, Key> keys_;  // by policy name + "\n" + setup
  uint64_t gen_ = 0;                 // bumped by Drain(): a box made for an older one is discarded
  bool stop_ = false;
  uint64_t hits_ = 0, misses_ = 0;
  std::thread refiller_;
};

}  // namespace lsb::sched
