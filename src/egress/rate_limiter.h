// A box's bandwidth cap (--egress-max-bandwidth, docs/network.md "Limits"): one token bucket that
// every connection of the box's proxy draws from, both directions together. A read first reserves
// what it may take and gives back what it did not read, so the bucket is never overdrawn: over any
// window of T seconds the box moves at most rate x T + burst bytes, however many connections it has.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace lsb::egress {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  // bytes_per_second 0: no cap (every reservation is granted in full). The bucket starts full; it
  // holds an eighth of a second's bytes, at least 64 KiB, so a quiet box may send one burst.
  explicit RateLimiter(uint64_t bytes_per_second, Clock::time_point now = Clock::now());

  bool capped() const { return rate_ > 0; }

  struct Grant {
    size_t bytes = 0;                    // what the caller may read now (0: wait first)
    std::chrono::milliseconds wait{0};   // with bytes 0: when to ask again
  };
  // Reserves up to `want` bytes.
  Grant Reserve(size_t want, Clock::time_point now = Clock::now());
  // Gives back the part of a reservation that was not read.
  void Return(size_t bytes);

 private:
  void Refill(Clock::time_point now);  // holds mu_

  const double rate_;   // bytes per second
  const double burst_;  // the bucket's size
  std::mutex mu_;
  double tokens_;
  Clock::time_point last_;
};

// Waits until `rate` (may be null: no cap) grants part of `want` bytes, polling `stop_fd` meanwhile.
// Returns the grant, or 0 when `stop_fd` became readable first.
size_t AwaitGrant(RateLimiter* rate, size_t want, int stop_fd);

}  // namespace lsb::egress
