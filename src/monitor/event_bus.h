// Live events for GET /v1/events and the dashboard: publish/subscribe with a bounded queue per
// subscriber. A slow subscriber never slows a publisher (an execution): past its bound the oldest
// events are dropped and counted, and the subscriber is told how many it missed.
//
// Concurrency: `mu_` guards the subscriber list; each Subscription has its own mutex and condition
// variable. Publish() copies the event into every queue and returns.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lsb::monitor {

struct LiveEvent {
  uint64_t seq = 0;
  std::string type;   // "alert", "trace", "usage", "execution_started", "execution_finished", ...
  nlohmann::json data;
  size_t bytes = 0;   // of data, serialized (what a subscriber's queue is charged)
  std::string owner;  // of the execution or session it is about (server/owner.h)
};

class Subscription {
 public:
  Subscription(std::set<std::string> types, std::string owner, size_t limit, size_t max_bytes)
      : types_(std::move(types)), owner_(std::move(owner)), limit_(limit), max_bytes_(max_bytes) {}
  // Waits up to `timeout` for the next event; nullopt on timeout or once closed.
  std::optional<LiveEvent> Next(std::chrono::milliseconds timeout);
  // Events dropped for this subscriber since the last call (it fell behind).
  uint64_t TakeDropped();
  void Close();
  // Only the events of the subscriber's own owner: another token's executions are not its to see.
  bool Wants(const std::string& type, const std::string& owner) const {
    return owner == owner_ && WantsType(type);
  }
  bool WantsType(const std::string& type) const { return types_.empty() || types_.count(type) > 0; }
  // Returns false when the event was dropped (queue full: the oldest went).
  bool Push(const LiveEvent& e);

 private:
  const std::set<std::string> types_;  // empty = all
  const std::string owner_;
  const size_t limit_;
  const size_t max_bytes_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<LiveEvent> queue_;
  size_t bytes_ = 0;
  uint64_t dropped_ = 0;
  bool closed_ = false;
};

class EventBus {
 public:
  // Each subscriber's queue holds at most `per_subscriber_limit` events and `per_subscriber_bytes`
  // of their JSON; past either, its oldest events are dropped and counted.
  explicit EventBus(size_t per_subscriber_limit = 1024, size_t per_subscriber_bytes = 4 << 20)
      : limit_(per_subscriber_limit), max_bytes_(per_subscriber_bytes) {}
  // Events of `owner` only ("" = the daemon's one user, when it has no tokens).
  std::shared_ptr<Subscription> Subscribe(std::set<std::string> types, const std::string& owner);
  void Unsubscribe(const std::shared_ptr<Subscription>& s);
  // Returns the number of subscribers that had to drop an event for it.
  size_t Publish(const std::string& type, nlohmann::json data, const std::string& owner);
  // An event about what every owner shares (the image store: image_pull), to every subscriber.
  size_t PublishToAll(const std::string& type, nlohmann::json data);
  size_t subscribers() const;
  void CloseAll();

 private:
  const size_t limit_;
  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Subscription>> subs_;
  uint64_t seq_ = 0;
  size_t PublishTo(const std::string& type, nlohmann::json data, const std::string* owner);  // null: all
};

}  // namespace lsb::monitor
