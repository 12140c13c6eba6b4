// The daemon-wide byte budget for fan-out (docs/api.md "Memory budget", docs/security.md Class 8
// of issue 32): every request that buffers a whole state or a whole answer in the daemon's memory
// (a fork's export and its children's copies, a batch's answer and its running tasks' results, a
// pause, a resume) reserves its worst case here before it starts, and gives it back when its
// answer is sent. Per-request caps bound one request; this bounds their sum, so N concurrent
// requests cannot grow the daemon by N x the cap.
//
// A Reservation is RAII: its bytes return to the budget when it is destroyed (or shrunk). A
// request larger than the whole budget is clamped to it: it runs alone, never forever refused.
// Waiters are served in arrival order (a large fork is not starved by a stream of small batches),
// and TryReserve never passes one that waits.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/result.h"

namespace lsb::server {

class ByteBudget;

class Reservation {
 public:
  Reservation() = default;
  Reservation(Reservation&& o) noexcept : budget_(o.budget_), bytes_(o.bytes_) { o.budget_ = nullptr; o.bytes_ = 0; }
  Reservation& operator=(Reservation&& o) noexcept;
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  ~Reservation() { Release(); }

  uint64_t bytes() const { return bytes_; }
  // Gives back what is above `bytes` (a request that learned its real size); never grows.
  void ShrinkTo(uint64_t bytes);
  void Release();

 private:
  friend class ByteBudget;
  Reservation(ByteBudget* b, uint64_t bytes) : budget_(b), bytes_(bytes) {}
  ByteBudget* budget_ = nullptr;
  uint64_t bytes_ = 0;
};

class ByteBudget {
 public:
  // `total` 0: no budget (every reservation succeeds at once and counts nothing).
  ByteBudget(uint64_t total, std::chrono::milliseconds max_wait) : total_(total), max_wait_(max_wait) {}

  uint64_t total() const { return total_; }
  uint64_t used() const;
  std::chrono::milliseconds max_wait() const { return max_wait_; }
  // Waits up to max_wait for `bytes` (clamped to total) to be free and every earlier waiter served.
  // kResourceExhausted when the wait ends, its message naming `what`, the budget and the flag.
  Result<Reservation> Reserve(uint64_t bytes, const std::string& what);
  // At once or not at all (extra parallelism a request may take when the budget has room).
  std::optional<Reservation> TryReserve(uint64_t bytes);

 private:
  friend class Reservation;
  void Give(uint64_t bytes);
  uint64_t Clamp(uint64_t bytes) const { return bytes > total_ ? total_ : bytes; }

  const uint64_t total_;
  const std::chrono::milliseconds max_wait_;
  mutable std::mutex mu_;
  std::condition_variable freed_;
  uint64_t used_ = 0;
  std::list<uint64_t> waiting_;  // tickets of the waiters, oldest first
  uint64_t next_ticket_ = 0;
};

// Gives the allocator's free pages back to the system (malloc_trim): after a reservation of at
// least kTrimAtBytes ends, and after each copy-in step a request ran in its own slot.
inline constexpr uint64_t kTrimAtBytes = 1u << 20;
void ReturnFreedMemory();

// "256 MiB"-style text for messages.
std::string ByteText(uint64_t bytes);

}  // namespace lsb::server
