// Work a request starts and does not wait for (an asynchronous batch runs on its own thread,
// each task still on the executor): the threads are counted, and JoinAll (the daemon's shutdown,
// after the executor stopped, so every task answers at once) waits until all are gone, so none
// outlives the ServerContext it uses. Bounded by the execution store: a job exists only for an
// entry that store admitted (--async-keep).
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace lsb::server {

class BackgroundJobs {
 public:
  BackgroundJobs() = default;
  BackgroundJobs(const BackgroundJobs&) = delete;
  BackgroundJobs& operator=(const BackgroundJobs&) = delete;
  ~BackgroundJobs() { JoinAll(); }

  void Spawn(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++running_;
    }
    std::thread([this, job = std::move(job)] {
      job();
      std::lock_guard<std::mutex> lock(mu_);
      if (--running_ == 0) idle_.notify_all();
    }).detach();
  }

  void JoinAll() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return running_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable idle_;
  size_t running_ = 0;
};

}  // namespace lsb::server
