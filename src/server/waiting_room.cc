#include "server/waiting_room.h"

namespace lsb::server {

void WaitingRoom::Add(const Guest& g) {
  guests_[g.id] = g;
  by_deadline_.emplace(g.deadline, g.id);
}

std::optional<WaitingRoom::Guest> WaitingRoom::Take(uint64_t id) {
  auto it = guests_.find(id);
  if (it == guests_.end()) return std::nullopt;
  Guest g = it->second;
  by_deadline_.erase({g.deadline, id});
  guests_.erase(it);
  return g;
}

std::vector<WaitingRoom::Guest> WaitingRoom::TakeExpired(Clock::time_point now) {
  std::vector<Guest> out;
  while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) {
    uint64_t id = by_deadline_.begin()->second;
    by_deadline_.erase(by_deadline_.begin());
    auto it = guests_.find(id);
    out.push_back(it->second);
    guests_.erase(it);
  }
  return out;
}

std::vector<WaitingRoom::Guest> WaitingRoom::TakeAll() {
  std::vector<Guest> out;
  out.reserve(guests_.size());
  for (auto& [_, g] : guests_) out.push_back(g);
  guests_.clear();
  by_deadline_.clear();
  return out;
}

int WaitingRoom::MsUntilNextDeadline(Clock::time_point now) const {
  if (by_deadline_.empty()) return -1;
  auto left = by_deadline_.begin()->first - now;
  if (left <= Clock::duration::zero()) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return ms > (1 << 30) ? (1 << 30) : static_cast<int>(ms);
}

}  // namespace lsb::server
