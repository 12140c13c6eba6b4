// Container removal off the hot path: a used box hands its container id here and the execution's
// answer goes out without waiting for the engine's stop + remove (~100 ms+). One thread removes
// them in order. A removal the engine could not do (it was down or restarting) is retried with
// backoff (1 s doubling to 30 s, for up to 10 minutes), so a long-lived daemon that outlives an
// engine restart does not leak the containers of the executions the restart broke. The destructor
// (backend shutdown) tries everything still queued or waiting for a retry once more before it
// returns, so SIGTERM leaves nothing behind while the engine answers; what a SIGKILL (or an engine
// still down at shutdown) leaves is reaped as an orphan at the next start (ownership.h).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/docker/engine_client.h"

namespace lsb::docker {

class ContainerReaper {
 public:
  explicit ContainerReaper(std::shared_ptr<const EngineClient> engine);
  ~ContainerReaper();  // drains the queue (synchronously) and stops
  ContainerReaper(const ContainerReaper&) = delete;
  ContainerReaper& operator=(const ContainerReaper&) = delete;

  // Queues a removal: first a bounded wait for the container to stop by itself (its box closed the
  // attach stream, so init is exiting), then a forced remove (which kills it if it did not). Never
  // blocks on the engine.
  void Remove(std::string container_id);
  size_t pending() const;  // queued, being removed, or waiting for a retry

 private:
  using Clock = std::chrono::steady_clock;
  struct Retry {
    std::string id;
    Clock::time_point next;
    Clock::time_point first_failure;
    std::chrono::seconds delay;
  };
  void Loop();
  // One forced removal; on failure, a retry is scheduled (or, past the give-up time or at
  // shutdown, the container is left to orphan reaping with a message). Called without mu_ held.
  void RemoveOne(std::string id, const Retry* previous);

  std::shared_ptr<const EngineClient> engine_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::deque<Retry> retry_;  // sorted by `next`
  int slow_stops_ = 0;       // containers in a row that did not stop by themselves (Loop's thread only)
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace lsb::docker
