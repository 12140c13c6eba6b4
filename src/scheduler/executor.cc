#include "scheduler/executor.h"

namespace lsb::sched {

Executor::Executor(size_t workers, size_t queue_limit) : queue_limit_(queue_limit) {
  if (workers == 0) workers = 1;
  threads_.reserve(workers);
  for (size_t i = 0; i < workers; ++i) threads_.emplace_back([this] { Work(); });
}

Executor::~Executor() { Shutdown(); }

Admission Executor::Submit(Task task, Then then) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!accepting_) return Admission::kShuttingDown;
  if (!HasRoom()) return Admission::kQueueFull;
  queue_.push_back({std::move(task), std::move(then)});
  work_cv_.notify_one();
  return Admission::kAccepted;
}

Admission Executor::SubmitWait(Task task, Then then) {
  std::unique_lock<std::mutex> lock(mu_);
  room_cv_.wait(lock, [this] { return !accepting_ || HasRoom(); });
  if (!accepting_) return Admission::kShuttingDown;
  queue_.push_back({std::move(task), std::move(then)});
  work_cv_.notify_one();
  return Admission::kAccepted;
}

Admission Executor::SubmitWaitUntil(Task task, Then then, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!room_cv_.wait_until(lock, deadline, [this] { return !accepting_ || HasRoom(); })) return Admission::kQueueFull;
  if (!accepting_) return Admission::kShuttingDown;
  queue_.push_back({std::move(task), std::move(then)});
  work_cv_.notify_one();
  return Admission::kAccepted;
}

void Executor::StopAccepting() {
  std::lock_guard<std::mutex> lock(mu_);
  accepting_ = false;
  room_cv_.notify_all();
}

void Executor::Shutdown() {
  std::deque<Job> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    accepting_ = false;
    stopping_ = true;
    dropped.swap(queue_);
    work_cv_.notify_all();
    room_cv_.notify_all();
  }
  for (auto& job : dropped) {  // outside the lock: a task's callback may take other locks
    job.task(true);
    if (job.then) job.then();
  }
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  std::lock_guard<std::mutex> lock(mu_);
  threads_.clear();
}

size_t Executor::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_;
}

size_t Executor::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

void Executor::Work() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      job = std::move(queue_.front());
      queue_.pop_front();
      ++busy_;
    }
    job.task(false);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --busy_;
    }
    room_cv_.notify_one();
    if (job.then) job.then();  // the slot is free: whoever it wakes may submit again
  }
}

}  // namespace lsb::sched
