// Session opens in flight (issue 35): a burst of creates opens its boxes a few at a time, in arrival
// order, so the first to arrive are served first instead of all of them sharing the CPUs until the
// end (100 creates at once on 2 cores: p50 850 ms without, 585 ms with one open per CPU).
//
// A turn is a place in a SessionQueue of `width` slots. So that one slow open (an image unpacked on
// first use, a host under memory pressure) cannot hold the line, an open in flight longer than
// `young` stops counting against the width; waiters re-check every SessionQueue::kRecheck. Creates
// that run user code while they open (a `setup`) do not take a turn at all (session_turn.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <set>

#include "scheduler/session/session_queue.h"

namespace lsb::server {

class OpenTurns {
 public:
  using Clock = std::chrono::steady_clock;

  // Held while one open runs: its place in the queue and its start time, both given back when dropped.
  class Turn {
   public:
    Turn(OpenTurns* owner, sched::SessionQueue::Reservation slots);
    Turn(Turn&& o) noexcept;
    Turn& operator=(Turn&& o) noexcept;
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;
    ~Turn();

   private:
    void GiveBack();
    OpenTurns* owner_;
    sched::SessionQueue::Reservation slots_;
    std::multiset<Clock::time_point>::iterator started_;
  };

  struct Outcome {
    bool go = false;           // false: a shutdown (the wait itself never refuses: see Await)
    std::optional<Turn> turn;  // none when it goes without a place (the line's bounds ran out)
    size_t position = 0;       // 1-based place in line at arrival; 0: did not wait
    uint64_t waited_ms = 0;
  };

  OpenTurns(size_t width, std::chrono::milliseconds young, sched::SessionQueueLimits limits);

  // Waits for a turn. A wait that ends without one (the line's own bounds) goes on without a turn
  // rather than refusing: the gate orders a burst, it is not a limit of its own.
  Outcome Await();
  void Shutdown() { queue_.Shutdown(); }

 private:
  size_t FreeSlots() const;  // the width plus the opens in flight for longer than `young_`

  const size_t width_;
  const std::chrono::milliseconds young_;
  mutable std::mutex mu_;                    // guards started_; taken under the queue's lock, never the reverse
  std::multiset<Clock::time_point> started_;
  sched::SessionQueue queue_;                // last: its callback reads the members above
};

}  // namespace lsb::server
