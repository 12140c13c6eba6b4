#include "cli/output_relay.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace lsb::cli {

OutputRelay::OutputRelay(size_t max_bytes, const volatile sig_atomic_t* interrupted)
    : max_bytes_(max_bytes), interrupted_(interrupted), thread_([this] { Loop(); }) {}

OutputRelay::~OutputRelay() { Finish(); }

void OutputRelay::Write(int fd, std::string_view data) {
  if (data.empty() || fd < 1 || fd > 2) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (done_ || broken_[fd]) return;
  if (bytes_ + data.size() > max_bytes_) {
    dropped_ += data.size();
    return;
  }
  bytes_ += data.size();
  queue_.emplace_back(fd, std::string(data));
  cv_.notify_one();
}

void OutputRelay::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_ && !thread_.joinable()) return;
    done_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
  if (dropped_ > 0) {
    std::string note = "llm-sandbox: " + std::to_string(dropped_) +
                       " bytes of output dropped: stdout/stderr were not read fast enough\n";
    (void)WriteFd(2, note);
  }
}

uint64_t OutputRelay::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

bool OutputRelay::WriteFd(int fd, std::string_view data) {
  while (!data.empty()) {
    pollfd p{fd, POLLOUT, 0};
    int n = ::poll(&p, 1, 200);
    if (n < 0 && errno != EINTR) return false;
    if (interrupted_ && *interrupted_) return false;
    if (n <= 0) continue;
    if (p.revents & (POLLERR | POLLNVAL)) return false;
    // A pipe that polls writable takes one page without blocking.
    ssize_t w = ::write(fd, data.data(), std::min<size_t>(data.size(), 4096));
    if (w < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;  // EPIPE: the reader is gone
    }
    data.remove_prefix(static_cast<size_t>(w));
  }
  return true;
}

void OutputRelay::Loop() {
  for (;;) {
    std::pair<int, std::string> item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return done_ || !queue_.empty(); });
      if (queue_.empty()) return;
      item = std::move(queue_.front());
      queue_.pop_front();
      bytes_ -= item.second.size();
      if (broken_[item.first]) continue;
    }
    if (!WriteFd(item.first, item.second)) {
      std::lock_guard<std::mutex> lock(mu_);
      broken_[item.first] = true;
      if (interrupted_ && *interrupted_) {
        queue_.clear();
        bytes_ = 0;
        return;
      }
    }
  }
}

}  // namespace lsb::cli
