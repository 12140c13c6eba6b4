#include "scheduler/session/session_queue.h"

#include <algorithm>

namespace lsb::sched {

SessionQueue::Reservation& SessionQueue::Reservation::operator=(Reservation&& o) noexcept {
  if (this != &o) {
    Release();
    q_ = o.q_;
    n_ = o.n_;
    o.q_ = nullptr;
  }
  return *this;
}

void SessionQueue::Reservation::Release() {
  if (q_) q_->Release(n_);
  q_ = nullptr;
}

SessionQueue::SessionQueue(FreeSlots free_slots, SessionQueueLimits limits)
    : free_slots_(std::move(free_slots)), limits_(limits) {}

void SessionQueue::set_limits(SessionQueueLimits limits) {
  std::lock_guard<std::mutex> lock(mu_);
  limits_ = limits;
}

SessionQueueLimits SessionQueue::limits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return limits_;
}

SessionQueue::Ticket SessionQueue::Acquire(size_t n) {
  const auto start = Clock::now();
  Ticket t;
  std::unique_lock<std::mutex> lock(mu_);
  auto answer = [&](Outcome o) {
    t.outcome = o;
    t.waiting = line_.size();
    t.waited_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    return std::move(t);
  };
  if (stopping_) return answer(Outcome::kShuttingDown);
  // Nobody ahead and room now: no wait. With others in line, room goes to them first (FIFO).
  if (line_.empty() && Fits(n)) {
    reserved_ += n;
    t.slots = Reservation(this, n);
    return answer(Outcome::kGranted);
  }
  if (limits_.max_wait.count() <= 0) return answer(Outcome::kNoWait);
  if (line_.size() >= limits_.max_waiting) return answer(Outcome::kQueueFull);
  const uint64_t me = next_ticket_++;
  line_.push_back(me);
  t.position = line_.size();
  const auto deadline = start + limits_.max_wait;
  Outcome end = Outcome::kTimedOut;
  for (;;) {
    if (stopping_) {
      end = Outcome::kShuttingDown;
      break;
    }
    if (line_.front() == me && Fits(n)) {
      end = Outcome::kGranted;
      break;
    }
    auto now = Clock::now();
    if (now >= deadline) break;
    cv_.wait_until(lock, std::min(deadline, now + kRecheck));
  }
  if (end == Outcome::kGranted) {
    reserved_ += n;
    t.slots = Reservation(this, n);
  } else {
    t.position = PositionOf(me);  // where it stood when it gave up
  }
  line_.erase(std::find(line_.begin(), line_.end(), me));
  cv_.notify_all();  // a new head, or more room than this one needed
  return answer(end);
}

size_t SessionQueue::PositionOf(uint64_t ticket) const {
  auto it = std::find(line_.begin(), line_.end(), ticket);
  return it == line_.end() ? 0 : static_cast<size_t>(it - line_.begin()) + 1;
}

void SessionQueue::Release(size_t n) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    reserved_ -= std::min(n, reserved_);
  }
  cv_.notify_all();
}

void SessionQueue::Notify() {
  { std::lock_guard<std::mutex> lock(mu_); }  // a waiter between its check and its wait sees the change
  cv_.notify_all();
}

void SessionQueue::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

size_t SessionQueue::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return line_.size();
}

size_t SessionQueue::reserved() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reserved_;
}

}  // namespace lsb::sched
