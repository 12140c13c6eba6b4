#include "egress/rate_limiter.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cmath>

namespace lsb::egress {

RateLimiter::RateLimiter(uint64_t bytes_per_second, Clock::time_point now)
    : rate_(static_cast<double>(bytes_per_second)),
      burst_(std::max(rate_ / 8, 64.0 * 1024)),
      tokens_(burst_),
      last_(now) {}

void RateLimiter::Refill(Clock::time_point now) {
  if (now <= last_) return;
  const double seconds = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(burst_, tokens_ + seconds * rate_);
  last_ = now;
}

RateLimiter::Grant RateLimiter::Reserve(size_t want, Clock::time_point now) {
  if (!capped() || want == 0) return {want, {}};
  std::lock_guard<std::mutex> lock(mu_);
  Refill(now);
  if (tokens_ >= 1) {
    const size_t n = std::min(want, static_cast<size_t>(tokens_));
    tokens_ -= static_cast<double>(n);
    return {n, {}};
  }
  // Until one byte's worth is back; at least 1 ms so a caller never spins.
  const double ms = std::ceil((1 - tokens_) / rate_ * 1000);
  return {0, std::chrono::milliseconds(std::max<int64_t>(1, static_cast<int64_t>(ms)))};
}

void RateLimiter::Return(size_t bytes) {
  if (!capped() || bytes == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  tokens_ = std::min(burst_, tokens_ + static_cast<double>(bytes));
}

size_t AwaitGrant(RateLimiter* rate, size_t want, int stop_fd) {
  if (!rate) return want;
  for (;;) {
    RateLimiter::Grant g = rate->Reserve(want);
    if (g.bytes > 0 || want == 0) return g.bytes;
    pollfd p{stop_fd, POLLIN, 0};
    const int ms = static_cast<int>(std::min<int64_t>(g.wait.count(), 1000));
    int rc = ::poll(&p, 1, ms);
    if (rc > 0) return 0;
    if (rc < 0 && errno != EINTR) return 0;
  }
}

}  // namespace lsb::egress
