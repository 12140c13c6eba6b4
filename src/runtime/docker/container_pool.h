// The Docker backend's pool of pre-started containers for one container spec and init setup
// (DESIGN §5; the daemon's one-shot pool, scheduler/one_shot_pool.h, is not used with it): the container runs and init
// has already answered kSetup (HandshakeAhead), so an execution skips create/attach/start and the
// setup round trip. Boxes are handed out once and never come back (one-shot); background threads
// refill the pool. A box that died while waiting is discarded, not handed out.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/docker/docker_box.h"

namespace lsb::docker {

// Sends kSetup on a fresh box's stream and waits for kReady (or init's kError), then records the
// kReady on the box so the runner skips its own handshake (Box::ReadyAhead).
Status HandshakeAhead(DockerBox& box, const protocol::BoxSetup& setup, std::chrono::milliseconds timeout);

class ContainerPool {
 public:
  using Factory = std::function<Result<std::unique_ptr<DockerBox>>()>;
  // `size` boxes kept ready by `refillers` threads (each starts one box at a time).
  ContainerPool(Factory factory, size_t size, size_t refillers = 2);
  ~ContainerPool();  // stops refilling; removes the boxes still waiting
  ContainerPool(const ContainerPool&) = delete;
  ContainerPool& operator=(const ContainerPool&) = delete;

  // A ready box, or (pool empty) one started now. Never a box that served before.
  Result<std::unique_ptr<DockerBox>> Take();
  size_t ready() const;
  struct Counts {
    size_t ready = 0;
    uint64_t hits = 0;    // Take() calls served by a ready box
    uint64_t misses = 0;  // Take() calls that started one on the caller's path
  };
  Counts counts() const;
  // Blocks until `n` boxes are ready or `timeout` passes (benchmarks, tests).
  bool WaitReady(size_t n, std::chrono::milliseconds timeout) const;
  // The last refill error, if refilling is failing (engine down): Take() then reports it fast.
  std::string last_error() const;

 private:
  void Refill();

  Factory factory_;
  size_t size_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::deque<std::unique_ptr<DockerBox>> ready_;
  size_t in_flight_ = 0;
  uint64_t hits_ = 0, misses_ = 0;
  bool stop_ = false;
  std::string last_error_;
  std::vector<std::thread> threads_;
};

}  // namespace lsb::docker
