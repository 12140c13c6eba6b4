// The connections the acceptor holds before their first byte arrives (http_server.cc): each has
// its slot in the connection table but no thread yet, so a flood of connections that say nothing
// or leave at once costs the daemon an fd and a slot each, never a thread. A connection leaves
// the room when it becomes readable (handed to its own thread, or closed when it hung up or was
// evicted) or when its request-head deadline passes first.
//
// Not thread-safe: only the acceptor's thread uses it. Time is passed in (unit tests).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace lsb::server {

class WaitingRoom {
 public:
  using Clock = std::chrono::steady_clock;

  struct Guest {
    uint64_t id = 0;  // the connection table's id
    int fd = -1;
    Clock::time_point accepted;
    Clock::time_point deadline;  // the request head's
  };

  void Add(const Guest& g);
  // Removes and returns the guest `id`, if it is here.
  std::optional<Guest> Take(uint64_t id);
  // Removes and returns every guest whose deadline is at or before `now`, oldest first.
  std::vector<Guest> TakeExpired(Clock::time_point now);
  // Removes and returns every guest (the acceptor is stopping).
  std::vector<Guest> TakeAll();
  // Milliseconds until the earliest deadline (rounded up, at least 0), or -1 when empty: the
  // acceptor's epoll_wait timeout.
  int MsUntilNextDeadline(Clock::time_point now) const;
  size_t size() const { return guests_.size(); }

 private:
  std::map<uint64_t, Guest> guests_;
  std::set<std::pair<Clock::time_point, uint64_t>> by_deadline_;
};

}  // namespace lsb::server
