// The byte pump between a program's connection and its upstream, both directions at once, with
// half-close, an idle timeout, the execution's byte budget and the proxy's stop descriptor.
// Memory: one 64 KiB buffer per direction.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "egress/rate_limiter.h"
#include "egress/socket_io.h"
#include "egress/stream_mask.h"

namespace lsb::egress {

struct RelayLimits {
  uint64_t idle_timeout_ms = 60000;
  std::atomic<uint64_t>* bytes_used = nullptr;  // this execution's bytes so far, shared by its connections
  uint64_t max_bytes = 0;                       // 0: no bound
  StreamMask* mask_down = nullptr;              // masks secret values on their way to the program
  RateLimiter* rate = nullptr;                  // the box's bandwidth cap; null: none

  // Counts `n` bytes that went through against the execution's budget (both relays); false, with
  // `why`, once it is passed.
  bool Charge(uint64_t n, std::string* why) const;
};

struct RelayResult {
  uint64_t up = 0;     // client -> upstream
  uint64_t down = 0;   // upstream -> client
  std::string ended;   // "" (both sides closed), or why it was cut: "idle timeout", "byte limit", ...
};

// Relays until both directions are closed or a limit cuts it. Both fds non-blocking.
RelayResult Relay(int client, int upstream, const RelayLimits& limits, const Waits& w);

}  // namespace lsb::egress
