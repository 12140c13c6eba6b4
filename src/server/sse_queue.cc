#include "server/sse_queue.h"

namespace lsb::server {

bool SseQueue::Push(std::string event) {
  std::lock_guard<std::mutex> lock(mu_);
  ever_pushed_ = true;
  if (closed_) return false;
  if (bytes_ + event.size() > max_bytes_) {
    ++dropped_;
    ++dropped_total_;
    dropped_bytes_ += event.size();
    return false;
  }
  bytes_ += event.size();
  queue_.push_back(std::move(event));
  cv_.notify_one();
  return true;
}

void SseQueue::Finish(std::string last_event) {
  std::lock_guard<std::mutex> lock(mu_);
  ever_pushed_ = true;
  bytes_ += last_event.size();
  queue_.push_back(std::move(last_event));
  closed_ = true;
  cv_.notify_one();
}

void SseQueue::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  cv_.notify_one();
}

std::optional<std::string> SseQueue::Pop() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return closed_ || !queue_.empty(); });
  if (queue_.empty()) return std::nullopt;
  std::string chunk;
  if (dropped_ > 0) {
    chunk = "event: dropped\ndata: {\"events\": " + std::to_string(dropped_) +
            ", \"bytes\": " + std::to_string(dropped_bytes_) + "}\n\n";
    dropped_ = dropped_bytes_ = 0;
  }
  chunk += queue_.front();
  bytes_ -= queue_.front().size();
  queue_.pop_front();
  return chunk;
}

bool SseQueue::ever_pushed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ever_pushed_;
}

uint64_t SseQueue::dropped_events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_total_;
}

}  // namespace lsb::server
