// The CLI's own stdout/stderr, written by a thread of their own (docs/security.md, class 5): the runner
// reads init's stream and the box's timeout holds whatever happens to our stdout. With
// `llm-sandbox run | sleep 100` nobody drains the pipe; the box still ends at its timeout and the
// CLI then waits for its reader (or exits at EPIPE), as any Unix tool does.
//
// Memory: what the runner passes is already bounded (the policy's output cap, coalesced alerts);
// the relay holds at most `max_bytes` on top and drops (and says so) beyond it.
//
// Concurrency: Write() from any thread; one writer thread; `mu_` guards the queue.
#pragma once

#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

namespace lsb::cli {

class OutputRelay {
 public:
  // `interrupted`: when it becomes non-zero (a signal), the writer gives up on a stuck fd.
  OutputRelay(size_t max_bytes, const volatile sig_atomic_t* interrupted);
  ~OutputRelay();  // Finish()
  OutputRelay(const OutputRelay&) = delete;
  OutputRelay& operator=(const OutputRelay&) = delete;

  // Queues `data` for `fd` (1 or 2); never blocks.
  void Write(int fd, std::string_view data);
  // Writes everything queued (blocking until the readers take it, a write fails, or a signal
  // came) and stops the thread. Idempotent.
  void Finish();
  uint64_t dropped() const;

 private:
  void Loop();
  // Writes `data` to `fd` in pieces a pipe takes without blocking; false when it cannot go on.
  bool WriteFd(int fd, std::string_view data);

  const size_t max_bytes_;
  const volatile sig_atomic_t* interrupted_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<int, std::string>> queue_;
  size_t bytes_ = 0;
  uint64_t dropped_ = 0;
  bool done_ = false;
  bool broken_[3] = {false, false, false};
  std::thread thread_;
};

}  // namespace lsb::cli
