// Pieces of a streamed answer from a run's callbacks (on the executor) to the connection thread
// that writes them; Push never blocks the run. Its bytes are bounded by the run itself (the
// policy's output cap). Used by process.Process/Start and the interpreter's /execute.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

namespace lsb::server::e2b {

class ChunkQueue {
 public:
  void Push(std::string s) {
    std::lock_guard<std::mutex> lock(mu_);
    q_.push_back(std::move(s));
    cv_.notify_one();
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    cv_.notify_one();
  }
  // The next piece; "" after `idle` with nothing; nullopt once closed and drained.
  std::optional<std::string> Pop(std::chrono::milliseconds idle) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, idle, [&] { return closed_ || !q_.empty(); });
    if (!q_.empty()) {
      std::string s = std::move(q_.front());
      q_.pop_front();
      return s;
    }
    if (closed_) return std::nullopt;
    return std::string();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> q_;
  bool closed_ = false;
};

}  // namespace lsb::server::e2b
