// The egress connections open at once across every box of one daemon or CLI process
// (--egress-max-connections-total, docs/network.md "Limits"): each box's proxy bounds its own
// connections, this bounds their sum, so many boxes together cannot exhaust the host's threads and
// descriptors. Shared by every copy of one EgressOptions (a std::shared_ptr), so the daemon's
// options, copied into each box's proxy, count into one place.
#pragma once

#include <atomic>
#include <cstdint>

namespace lsb::egress {

class ConnectionSlots {
 public:
  // One slot if fewer than `limit` are taken.
  bool TryTake(uint32_t limit) {
    uint32_t n = taken_.load();
    while (n < limit)
      if (taken_.compare_exchange_weak(n, n + 1)) return true;
    return false;
  }
  void Release() { taken_.fetch_sub(1); }
  uint32_t taken() const { return taken_.load(); }

 private:
  std::atomic<uint32_t> taken_{0};
};

}  // namespace lsb::egress
