#include "scheduler/box_registry.h"

namespace lsb::sched {

size_t BoxRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return boxes_.size();
}

void BoxRegistry::KillAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (BoxSession* s : boxes_) s->box().Kill();
}

void BoxRegistry::Add(BoxSession* s) {
  std::lock_guard<std::mutex> lock(mu_);
  boxes_.insert(s);
}

void BoxRegistry::Remove(BoxSession* s) {
  std::lock_guard<std::mutex> lock(mu_);
  boxes_.erase(s);
}

}  // namespace lsb::sched
