#include "runtime/docker/container_reaper.h"

#include <cstdio>

namespace lsb::docker {

ContainerReaper::ContainerReaper(std::shared_ptr<const EngineClient> engine) : engine_(std::move(engine)) {
  thread_ = std::thread([this] { Loop(); });
}

ContainerReaper::~ContainerReaper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();  // Loop returns only once the queue is empty
}

void ContainerReaper::Remove(std::string container_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(container_id));
  }
  cv_.notify_one();
}

void ContainerReaper::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

size_t ContainerReaper::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size() + (busy_ ? 1 : 0);
}

void ContainerReaper::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stop_ and nothing left
    std::string id = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    auto st = engine_->RemoveContainer(id, /*force=*/true);
    if (!st.ok())
      std::fprintf(stderr, "llm-sandbox: %s (it will be removed as an orphan later)\n", st.error().message.c_str());
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
  idle_cv_.notify_all();
}

}  // namespace lsb::docker
