#include "monitor/event_bus.h"

#include <algorithm>

namespace lsb::monitor {

std::optional<LiveEvent> Subscription::Next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return closed_ || !queue_.empty(); });
  if (queue_.empty()) return std::nullopt;
  LiveEvent e = std::move(queue_.front());
  queue_.pop_front();
  bytes_ -= e.bytes;
  return e;
}

uint64_t Subscription::TakeDropped() {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t d = dropped_;
  dropped_ = 0;
  return d;
}

void Subscription::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

bool Subscription::Push(const LiveEvent& e) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return true;
  bool kept = true;
  while (!queue_.empty() && (queue_.size() >= limit_ || bytes_ + e.bytes > max_bytes_)) {
    bytes_ -= queue_.front().bytes;
    queue_.pop_front();
    ++dropped_;
    kept = false;
  }
  if (e.bytes > max_bytes_) {  // larger than the whole queue: dropped itself
    ++dropped_;
    return false;
  }
  queue_.push_back(e);
  bytes_ += e.bytes;
  cv_.notify_one();
  return kept;
}

std::shared_ptr<Subscription> EventBus::Subscribe(std::set<std::string> types, const std::string& owner) {
  auto s = std::make_shared<Subscription>(std::move(types), owner, limit_, max_bytes_);
  std::lock_guard<std::mutex> lock(mu_);
  subs_.push_back(s);
  return s;
}

void EventBus::Unsubscribe(const std::shared_ptr<Subscription>& s) {
  std::lock_guard<std::mutex> lock(mu_);
  subs_.erase(std::remove(subs_.begin(), subs_.end(), s), subs_.end());
}

size_t EventBus::Publish(const std::string& type, nlohmann::json data, const std::string& owner) {
  return PublishTo(type, std::move(data), &owner);
}

size_t EventBus::PublishToAll(const std::string& type, nlohmann::json data) {
  return PublishTo(type, std::move(data), nullptr);
}

size_t EventBus::PublishTo(const std::string& type, nlohmann::json data, const std::string* owner) {
  std::vector<std::shared_ptr<Subscription>> targets;
  LiveEvent e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (subs_.empty()) return 0;
    e.seq = ++seq_;
    for (const auto& s : subs_)
      if (owner ? s->Wants(type, *owner) : s->WantsType(type)) targets.push_back(s);
  }
  e.type = type;
  e.bytes = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size();
  e.data = std::move(data);
  if (owner) e.owner = *owner;
  size_t dropped = 0;
  for (const auto& s : targets)
    if (!s->Push(e)) ++dropped;
  return dropped;
}

size_t EventBus::subscribers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return subs_.size();
}

void EventBus::CloseAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& s : subs_) s->Close();
}

}  // namespace lsb::monitor
