#include "runtime/docker/container_pool.h"

#include "runtime/frame_channel.h"
#include "runtime/runner.h"

namespace lsb::docker {

Status HandshakeAhead(DockerBox& box, const protocol::BoxSetup& setup, std::chrono::milliseconds timeout) {
  FrameChannel channel(box.stream_fd());
  channel.Queue(protocol::FrameType::kSetup, nlohmann::json(setup).dump());
  LSB_ASSIGN_OR_RETURN(auto ready, AwaitInitReady(channel, box, timeout));
  box.set_ready_ahead(std::move(ready));
  return OkStatus();
}

ContainerPool::ContainerPool(Factory factory, size_t size, size_t refillers) : factory_(std::move(factory)), size_(size) {
  if (size_ == 0) return;
  for (size_t i = 0; i < std::max<size_t>(1, refillers); ++i) threads_.emplace_back([this] { Refill(); });
}

ContainerPool::~ContainerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  std::deque<std::unique_ptr<DockerBox>> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(ready_);
  }
  left.clear();  // each box removes its container
}

void ContainerPool::Refill() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (ready_.size() + in_flight_ >= size_) {
      cv_.wait(lock);
      continue;
    }
    ++in_flight_;
    lock.unlock();
    auto box = factory_();
    lock.lock();
    --in_flight_;
    if (box.ok()) {
      last_error_.clear();
      ready_.push_back(std::move(*box));
      cv_.notify_all();
    } else {
      last_error_ = box.error().message;
      // The engine is down or the spec is bad: back off instead of spinning.
      cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; });
    }
  }
}

Result<std::unique_ptr<DockerBox>> ContainerPool::Take() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    while (!ready_.empty()) {
      auto box = std::move(ready_.front());
      ready_.pop_front();
      cv_.notify_all();  // a refiller may start the replacement now
      if (box->alive()) {
        ++hits_;
        return box;
      }
      lock.unlock();
      box.reset();  // died while waiting (engine restart, external kill): never hand it out
      lock.lock();
    }
    ++misses_;
  }
  return factory_();
}

ContainerPool::Counts ContainerPool::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Counts{ready_.size(), hits_, misses_};
}

size_t ContainerPool::ready() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_.size();
}

bool ContainerPool::WaitReady(size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return ready_.size() >= n; });
}

std::string ContainerPool::last_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

}  // namespace lsb::docker
