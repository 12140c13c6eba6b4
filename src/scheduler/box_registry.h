// Every live box the daemon holds (one-shot runs, batch tasks, sessions), so a shutdown can kill
// what still runs after its grace and /readyz can count them. Registration is RAII: a Lease lives
// exactly as long as the BoxSession it names, and is dropped before the box is destroyed.
//
// Concurrency: `mu_` guards `boxes_`. KillAll() calls Box::Kill() under the lock, so a lease cannot
// be dropped (and its box destroyed) while it is being killed.
#pragma once

#include <cstddef>
#include <mutex>
#include <set>

#include "runtime/runner.h"

namespace lsb::sched {

class OneShotPool;
class SessionPool;

class BoxRegistry {
 public:
  class Lease {
   public:
    Lease(BoxRegistry& r, BoxSession* s) : r_(&r), s_(s) { r_->Add(s_); }
    ~Lease() { if (r_) r_->Remove(s_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

   private:
    BoxRegistry* r_;
    BoxSession* s_;
  };

  size_t size() const;
  // Kills every registered box now (their runs end with an error or a timeout).
  void KillAll();
  // The warm pool one-shot executions take their boxes from (scheduler/one_shot_pool.h); null: none.
  void set_pool(OneShotPool* p) { pool_ = p; }
  OneShotPool* pool() const { return pool_; }
  // The warm python session boxes sessions with a setup start from (scheduler/session/session_pool.h).
  void set_session_pool(SessionPool* p) { session_pool_ = p; }
  SessionPool* session_pool() const { return session_pool_; }

 private:
  void Add(BoxSession* s);
  void Remove(BoxSession* s);
  mutable std::mutex mu_;
  std::set<BoxSession*> boxes_;
  OneShotPool* pool_ = nullptr;  // set before the daemon serves, cleared after its executor stopped
  SessionPool* session_pool_ = nullptr;  // the same
};

}  // namespace lsb::sched
