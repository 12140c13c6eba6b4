// Container removal off the hot path: a used box hands its container id here and the execution's
// answer goes out without waiting for the engine's kill + remove (~100 ms+). One thread removes
// them in order. The destructor (backend shutdown) removes everything still queued before it
// returns, so SIGTERM leaves nothing behind; what a SIGKILL leaves is reaped as an orphan at the
// next start (ownership.h).
#pragma once

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

  // Queues a forced removal (kill + remove). Never blocks on the engine.
  void Remove(std::string container_id);
  // Blocks until the queue is empty and nothing is being removed (tests, benchmarks).
  void Drain();
  size_t pending() const;

 private:
  void Loop();

  std::shared_ptr<const EngineClient> engine_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::string> queue_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace lsb::docker
