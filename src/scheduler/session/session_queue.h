// The bounded FIFO queue in front of the session cap (issue 35, docs/api.md "Session queue"): a
// create that finds every slot held waits here, first come first served, for at most `max_wait`,
// instead of being refused at once; a full queue, a wait that ends without a slot and a shutdown are
// answers (429 / 503 with Retry-After and the position), never a silent wait (DESIGN §12).
//
// A slot is held by a live session (counted by `free_slots`, the manager's side) or by a
// Reservation: a create in flight keeps its slot from the moment it is granted until it drops the
// reservation (after its session was added, or when it failed), so concurrent creates never pass
// the cap together. Notify() wakes the head when a session went away; a wait also re-checks every
// kRecheck in case a slot freed without a Notify.
//
// Concurrency: `mu_` guards everything; `free_slots` is called under it and must not call back.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

namespace lsb::sched {

struct SessionQueueLimits {
  size_t max_waiting = 256;                    // creates waiting at once; 0 = no queue
  std::chrono::milliseconds max_wait{30000};   // per create; 0 = refuse at once when full
};

class SessionQueue {
 public:
  using Clock = std::chrono::steady_clock;
  // Slots free now, not counting reservations (the cap minus the live sessions; 0 when full).
  using FreeSlots = std::function<size_t()>;
  static constexpr std::chrono::milliseconds kRecheck{100};

  enum class Outcome { kGranted, kQueueFull, kTimedOut, kNoWait, kShuttingDown };

  // A granted slot (or several, for a fork): released when dropped.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(SessionQueue* q, size_t n) : q_(q), n_(n) {}
    Reservation(Reservation&& o) noexcept : q_(o.q_), n_(o.n_) { o.q_ = nullptr; }
    Reservation& operator=(Reservation&& o) noexcept;
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    ~Reservation() { Release(); }
    void Release();

   private:
    SessionQueue* q_ = nullptr;
    size_t n_ = 0;
  };

  struct Ticket {
    Outcome outcome = Outcome::kGranted;
    Reservation slots;      // held when granted
    size_t position = 0;    // 1-based place at arrival (or at the end of the wait when refused); 0: did not queue
    size_t waiting = 0;     // the queue's length when answered (for a refusal: others still waiting)
    uint64_t waited_ms = 0;
    bool granted() const { return outcome == Outcome::kGranted; }
  };

  explicit SessionQueue(FreeSlots free_slots, SessionQueueLimits limits = {});
  ~SessionQueue() { Shutdown(); }

  void set_limits(SessionQueueLimits limits);
  SessionQueueLimits limits() const;
  // Takes `n` slots, waiting in line for them when the queue is not empty or none is free.
  Ticket Acquire(size_t n = 1);
  // A session went away: the head may go.
  void Notify();
  // Wakes every waiter with kShuttingDown and refuses later arrivals. Idempotent.
  void Shutdown();

  size_t waiting() const;
  size_t reserved() const;

 private:
  void Release(size_t n);
  bool Fits(size_t n) const { return free_slots_() >= reserved_ + n; }
  size_t PositionOf(uint64_t ticket) const;  // 1-based; 0 when not in line

  const FreeSlots free_slots_;
  SessionQueueLimits limits_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<uint64_t> line_;  // ticket numbers, oldest first
  uint64_t next_ticket_ = 1;
  size_t reserved_ = 0;
  bool stopping_ = false;
};

}  // namespace lsb::sched
