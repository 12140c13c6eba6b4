// The copy-in step of a fan-out (a fork's children, a resume) under the daemon's byte budget: each
// step buffers up to `slot` bytes (one message of the archive to the box, scheduler/workspace_io.cc
// UnpackIntoBox). The request reserved one slot with its state, so it always progresses; a step
// runs beside the others only when the budget has a further slot free at that moment, else it
// waits for the request's own one.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>

#include "server/fanout_reserve.h"

namespace lsb::server {

class ImportGate {
 public:
  ImportGate(ServerContext& ctx, uint64_t slot) : ctx_(ctx), slot_(slot) {}

  // Held while one step copies in: an extra reservation or the request's own slot; what the step
  // freed goes back to the system when it ends.
  class Pass {
   public:
    explicit Pass(Reservation r) : extra_(std::move(r)) {}
    explicit Pass(std::mutex& own) : own_(own) {}
    Pass(Pass&&) = default;
    ~Pass() {
      if (!own_.owns_lock() && extra_.bytes() == 0) return;  // moved from
      extra_.Release();
      if (own_.owns_lock()) own_.unlock();
      ReturnFreedMemory();
    }

   private:
    Reservation extra_;
    std::unique_lock<std::mutex> own_;
  };
  Pass Enter() {
    if (auto extra = TryFanout(ctx_, slot_)) return Pass(std::move(*extra));
    return Pass(own_);
  }

  // One step's worst case: the largest message it sends (at least UnpackIntoBox's 4 MiB batch, or
  // the largest single file), as built and as written.
  static uint64_t SlotFor(const std::vector<sched::UnpackedArchive>& trees) {
    uint64_t largest = 4u << 20;
    for (const auto& t : trees)
      for (const auto& it : t.items) largest = std::max<uint64_t>(largest, it.data.size() + it.path.size() + 64);
    return 2 * largest;
  }

 private:
  ServerContext& ctx_;
  const uint64_t slot_;
  std::mutex own_;
};

}  // namespace lsb::server
