#include "server/open_turns.h"

#include <iterator>

namespace lsb::server {

OpenTurns::Turn::Turn(OpenTurns* owner, sched::SessionQueue::Reservation slots)
    : owner_(owner), slots_(std::move(slots)) {
  std::lock_guard<std::mutex> lock(owner_->mu_);
  started_ = owner_->started_.insert(Clock::now());
}

OpenTurns::Turn::Turn(Turn&& o) noexcept : owner_(o.owner_), slots_(std::move(o.slots_)), started_(o.started_) {
  o.owner_ = nullptr;
}

OpenTurns::Turn& OpenTurns::Turn::operator=(Turn&& o) noexcept {
  if (this != &o) {
    GiveBack();
    owner_ = o.owner_;
    slots_ = std::move(o.slots_);
    started_ = o.started_;
    o.owner_ = nullptr;
  }
  return *this;
}

OpenTurns::Turn::~Turn() { GiveBack(); }

void OpenTurns::Turn::GiveBack() {
  if (!owner_) return;
  {
    std::lock_guard<std::mutex> lock(owner_->mu_);
    owner_->started_.erase(started_);
  }
  owner_ = nullptr;
  slots_.Release();  // after the start time went: the queue's lock is never taken under ours
}

OpenTurns::OpenTurns(size_t width, std::chrono::milliseconds young, sched::SessionQueueLimits limits)
    : width_(width), young_(young), queue_([this] { return FreeSlots(); }, limits) {}

size_t OpenTurns::FreeSlots() const {
  std::lock_guard<std::mutex> lock(mu_);
  // started_ is ordered: the old ones are a prefix.
  auto old_end = started_.lower_bound(Clock::now() - young_);
  return width_ + static_cast<size_t>(std::distance(started_.begin(), old_end));
}

OpenTurns::Outcome OpenTurns::Await() {
  auto ticket = queue_.Acquire(1);
  Outcome out;
  out.position = ticket.position;
  out.waited_ms = ticket.waited_ms;
  using Q = sched::SessionQueue::Outcome;
  out.go = ticket.outcome != Q::kShuttingDown;  // one that waited its bound goes on, ungated
  if (ticket.granted()) out.turn.emplace(this, std::move(ticket.slots));
  return out;
}

}  // namespace lsb::server
